"""Which capture file belongs to a log: the names asked about, links refused, a folder listed once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from invariants.read.capture import find_capture, folder_names


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name in ("a.jsonl", "b.jsonl", "b.requests.jsonl", "c.jsonl"):
        (tmp_path / name).write_bytes(b"{}\n")
    (tmp_path / "elsewhere.jsonl").write_bytes(b"{}\n")
    os.symlink(tmp_path / "elsewhere.jsonl", tmp_path / "c.requests.jsonl")
    return tmp_path


@pytest.mark.parametrize("listed", [False, True], ids=["names-asked", "folder-listed"])
def test_the_capture_beside_a_log_and_never_a_link(folder: Path, listed: bool) -> None:
    names = folder_names(folder) if listed else None
    assert find_capture(folder / "a.jsonl", names) is None
    assert find_capture(folder / "b.jsonl", names) == folder / "b.requests.jsonl"
    assert find_capture(folder / "c.jsonl", names) is None  # a link to a file elsewhere is not a capture
    (folder / "requests.jsonl").write_bytes(b"{}\n")  # the folder's own capture wins over a log's
    names = folder_names(folder) if listed else None
    assert find_capture(folder / "a.jsonl", names) == folder / "requests.jsonl"
    assert find_capture(folder / "b.jsonl", names) == folder / "requests.jsonl"


def test_with_the_folders_names_a_log_without_a_capture_costs_no_stat(folder: Path, monkeypatch) -> None:
    """A folder of many logs is listed once for all of them (``gate.unit``), not asked about six names a log."""
    names = folder_names(folder)
    calls: list[str] = []
    real = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: calls.append(str(p)) or real(p, *a, **k))
    monkeypatch.setattr(os.path, "isfile", lambda p: calls.append(str(p)) or Path(p).is_file())
    assert find_capture(folder / "a.jsonl", names) is None
    assert calls == []
    assert find_capture(folder / "a.jsonl") is None
    assert calls  # without the names, each candidate name is asked about


def test_a_folder_that_cannot_be_listed_asks_for_each_name(tmp_path: Path) -> None:
    assert folder_names(tmp_path / "missing") is None
