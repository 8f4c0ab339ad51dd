"""Several folders named at once (``inspector check logs/*``): walked as they are checked when none
holds another, listed first otherwise; the report is the same either way."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from inspector.cli import main
from invariants.gate import pipeline
from tests.conftest import SAMPLES

LOGS = {"b": ["clean-multi-turn", "capture-divergence"], "a": ["corrupt-delta"], "c": ["delta-tools"]}


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    """``b``: two sample logs and one's capture; ``a``: a log with findings and the fork pair in a
    subfolder; ``c``: a log and its capture; ``empty``: no log."""
    for name, logs in LOGS.items():
        (tmp_path / name).mkdir()
        for log in logs:
            shutil.copy(SAMPLES / f"{log}.jsonl", tmp_path / name)
    shutil.copy(SAMPLES / "capture-divergence.requests.jsonl", tmp_path / "b")
    shutil.copy(SAMPLES / "delta-tools.requests.jsonl", tmp_path / "c")
    shutil.copytree(SAMPLES / "fork", tmp_path / "a" / "fork")
    (tmp_path / "empty").mkdir()
    return tmp_path


def _report(capsys, paths: list[Path], out: Path, *options: str) -> tuple[int, bytes, str]:
    code = main(["check", *map(str, paths), "--no-cache", "--format", "json", "-o", str(out), *options])
    return code, out.read_bytes(), re.sub(r" \[[0-9.]+s\]", "", capsys.readouterr().err)  # the time taken


@pytest.mark.parametrize(
    "names",
    [["b", "a", "c"], ["c", "empty", "a", "b"], ["a", "a/fork"], ["b", "b"], ["a", "b/clean-multi-turn.jsonl"]],
    ids=["disjoint", "disjoint-one-empty", "nested", "twice", "folder-and-file"],
)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_report_is_the_listed_runs(capsys, monkeypatch, folders, tmp_path, names, jobs):
    paths = [folders / n for n in names]
    walked = _report(capsys, paths, tmp_path / "walked.json", "--jobs", jobs)
    monkeypatch.setattr(pipeline, "_disjoint_folders", lambda named: False)
    listed = _report(capsys, paths, tmp_path / "listed.json", "--jobs", jobs)
    assert walked == listed
    assert b'"sessions"' in walked[1]


def test_disjoint_folders_are_never_listed(capsys, monkeypatch, folders, tmp_path):
    """Each is walked as it is checked (a glob of the project folders of a large fleet never becomes
    a list of every log), in the order named, and a folder with no log is still named."""

    def listed(*args, **kwargs):
        raise AssertionError("listed")

    monkeypatch.setattr(pipeline, "discover", listed)
    monkeypatch.setattr(pipeline, "plan_units", listed)
    code, report, err = _report(capsys, [folders / "c", folders / "empty", folders / "a"], tmp_path / "r.json")
    assert code == 2 and f"no session logs under {folders / 'empty'}" in err
    assert report.index(b"delta-tools.jsonl") < report.index(b"corrupt-delta.jsonl")


def test_folders_are_disjoint_unless_one_is_or_holds_another(folders):
    assert pipeline._disjoint_folders([folders / "b", folders / "a", folders / "empty"])
    assert not pipeline._disjoint_folders([folders / "a", folders / "a" / "fork"])
    assert not pipeline._disjoint_folders([folders / "a" / "fork", folders / "a"])
    assert not pipeline._disjoint_folders([folders / "b", folders / "b"])
    assert not pipeline._disjoint_folders([folders / "b", folders / "b" / "clean-multi-turn.jsonl"])
    (folders / "a-b").mkdir()  # sorts between a and a/fork, holds neither
    assert pipeline._disjoint_folders([folders / "a", folders / "a-b"])
    assert not pipeline._disjoint_folders([folders / "a", folders / "a-b", folders / "a" / "fork"])
    (folders / "link").symlink_to(folders / "a")
    assert not pipeline._disjoint_folders([folders / "link", folders / "a" / "fork"])
    assert not pipeline._disjoint_folders([folders / "link", "memory://x"])


def test_discovery_keeps_a_set_of_every_log_only_when_paths_overlap(folders, monkeypatch):
    """``inspector index`` and ``check`` walk with :func:`iter_discover`: paths that may name a log
    twice are deduplicated through a set of every log found, disjoint ones are walked without it."""
    from invariants.read import discover as discover_mod

    sets: list[object] = []
    new = discover_mod._new

    def spied(seen, *args):
        sets.append(seen)
        return new(seen, *args)

    monkeypatch.setattr(discover_mod, "_new", spied)
    found = [s.path for s in discover_mod.iter_discover([folders / "a", folders / "b"], [])]
    assert len(found) == 5 and sets and all(s is None for s in sets)
    sets.clear()
    again = [s.path for s in discover_mod.iter_discover([folders / "a", folders / "a" / "fork", folders / "b"], [])]
    assert again == found and sets and all(isinstance(s, set) for s in sets)
    file = folders / "b" / "clean-multi-turn.jsonl"
    assert discover_mod.disjoint([folders / "a", file]) and not discover_mod.disjoint([folders / "b", file])
    assert not discover_mod.disjoint([file, file]) and not discover_mod.disjoint(["memory://a", "memory://b"])


def test_a_folder_past_the_spill_is_walked_the_same(folders: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``SPILL`` entries the walk sorts a folder's names and looks its captures up on disk: the
    logs found, in their order, with what is beside each, and the notes, are the same."""
    import os

    from invariants.read import discover as walk
    from tests.conftest import CORPUS

    odd = folders / "odd"
    (odd / "deeper" / "deepest").mkdir(parents=True)
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", odd / "deeper" / "deepest" / "x.jsonl")
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", os.path.join(os.fsencode(odd), b"\xff-undecodable.jsonl"))
    (odd / "linked.jsonl").symlink_to(odd / "deeper" / "deepest" / "x.jsonl")
    (odd / "to-folder").symlink_to(odd / "deeper")
    os.mkfifo(odd / "pipe.requests.jsonl")
    roots = [folders, SAMPLES] + ([CORPUS] if CORPUS.is_dir() else [])

    def walked() -> list:
        out = []
        for root in roots:
            problems: list[str] = []
            notes: list[str] = []
            found = [(s.path, s.root, s.beside, s.member) for s in walk.iter_discover([root], problems, notes)]
            out.append((found, problems, notes))
        return out

    reference = walked()
    assert any(beside for found, _, _ in reference for *_, beside, _ in found)  # captures were seen beside logs
    monkeypatch.setattr(walk, "SPILL", 1)
    assert walked() == reference
