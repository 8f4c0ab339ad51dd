"""Names SQLite's UTF-8 refuses: a file name's undecodable bytes, an id's lone surrogate.

The fork pass, the root's index and the index's list of found logs keep names in private SQLite
databases; one such name made ``check`` and ``index`` end in a traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from inspector.cli import main
from invariants.analysis.forks import RootIndex
from tests.conftest import SAMPLES

FORK = SAMPLES / "fork"
CHILD = FORK / "ea1ea88e-77ae-4bbf-85bb-0f2051308b9e.jsonl"
PARENT = FORK / "528381cd-c46c-43bc-80c7-0c4a7a41327f.jsonl"
PARENT_ID = "528381cd-c46c-43bc-80c7-0c4a7a41327f"


def _undecodable(folder: Path, stem: bytes = b"\xff") -> Path:
    """An empty file ``<stem>.jsonl`` in ``folder``, its name not UTF-8 (skips where the file system refuses one)."""
    name = stem + b".jsonl"
    try:
        os.close(os.open(os.path.join(os.fsencode(folder), name), os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError as exc:
        pytest.skip(f"this file system refuses a name that is not UTF-8 ({exc})")
    return folder / os.fsdecode(name)


def _json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["check", *argv, "--no-cache", "--format", "json", "-q"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, json.loads(out)


def test_a_root_with_an_undecodable_file_name_is_checked_and_its_fork_pass_runs(tmp_path: Path, capsys) -> None:
    (tmp_path / "cwd-a").mkdir()
    (tmp_path / "cwd-b").mkdir()
    shutil.copy(CHILD, tmp_path / "cwd-a")  # its parent is nowhere under the root: the root's index is asked
    bad = _undecodable(tmp_path / "cwd-b")
    code, report = _json(capsys, str(tmp_path))
    assert code == 1
    assert report["summary"]["sessions"] == 2
    rules = {(f["rule"], Path(f["file"]).name) for f in report["findings"]}
    assert ("LOG005", bad.name) in rules  # the empty log, named as the walk found it
    assert ("FRK003", CHILD.name) in rules  # the parent looked for under the root, not found


def _with_id(text: str, old: str, new: str) -> str:
    return text.replace(f'"{old}"', json.dumps(new), 1)  # json.dumps writes a lone surrogate as its escape


def test_a_fork_whose_parent_id_holds_a_lone_surrogate_finds_that_parent_and_no_other(tmp_path: Path, capsys) -> None:
    parent_id, other_id = "p\ud800", "p\udfff"  # two ids that a lossy store would make equal ("p?")
    child = _with_id(CHILD.read_text(), PARENT_ID, parent_id)
    parent = _with_id(PARENT.read_text(), PARENT_ID, parent_id)
    (tmp_path / "child.jsonl").write_text(child)
    (tmp_path / "parent.jsonl").write_text(parent)
    code, report = _json(capsys, str(tmp_path))
    assert not [f for f in report["findings"] if f["rule"].startswith("FRK")]
    (tmp_path / "parent.jsonl").write_text(_with_id(PARENT.read_text(), PARENT_ID, other_id))
    code, report = _json(capsys, str(tmp_path))
    assert [f["rule"] for f in report["findings"] if f["rule"].startswith("FRK")] == ["FRK003"]


def test_the_root_index_gives_folders_with_undecodable_names_in_python_s_order(tmp_path: Path) -> None:
    folders = []
    for raw in (b"\xff", b"\x80", b"a\xe9", "é".encode(), b"z", b"\xed\xa0\x80"):  # the last: a surrogate's UTF-8
        try:
            os.mkdir(os.path.join(os.fsencode(tmp_path), raw))
        except OSError as exc:
            pytest.skip(f"this file system refuses a name that is not UTF-8 ({exc})")
        folders.append(os.fsdecode(raw))
        (tmp_path / folders[-1] / "x.jsonl").write_text("")
    _undecodable(tmp_path)  # and a name of the root itself
    (tmp_path / "x.jsonl").write_text("")
    index = RootIndex(tmp_path)
    try:
        assert index.get("x.jsonl") == [tmp_path / "x.jsonl", *(tmp_path / d / "x.jsonl" for d in sorted(folders))]
        assert index.get(os.fsdecode(b"\xff.jsonl")) == [tmp_path / os.fsdecode(b"\xff.jsonl")]
    finally:
        index.close()


def test_an_index_of_a_root_with_an_undecodable_file_name_is_built(tmp_path: Path, capsys) -> None:
    root = tmp_path / "root"
    (root / "cwd-a").mkdir(parents=True)
    shutil.copy(CHILD, root / "cwd-a")
    _undecodable(root / "cwd-a")
    code = main(["index", str(root), "--db", str(tmp_path / "index.db"), "-q"])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code == 0
    import sqlite3

    con = sqlite3.connect(tmp_path / "index.db")
    try:
        assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    finally:
        con.close()


def test_a_baseline_of_a_finding_in_an_undecodable_file_is_written_and_read_back(tmp_path: Path, capsys) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _undecodable(root)  # an empty log: LOG005, in a file whose name is not UTF-8
    baseline = tmp_path / "baseline.json"
    assert main(["check", str(root), "--no-cache", "-q", "--write-baseline", str(baseline)]) == 0
    assert json.loads(baseline.read_text())["findings"][0]["rule"] == "LOG005"
    capsys.readouterr()
    assert main(["check", str(root), "--no-cache", "--baseline", str(baseline)]) == 0
    assert "1 known finding(s) not shown" in capsys.readouterr().out
