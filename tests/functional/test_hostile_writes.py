"""Issue 34, items 2 and 9: writers never go through a hard link into a log, and a full disk leaves the old
file (or no folder) and no temporary behind, with one line and exit 2."""

from __future__ import annotations

import os
import shutil

import pytest

from inspector.cli import main
from tests.conftest import SAMPLES
from tests.support.full_disk import full_disk

LOG = SAMPLES / "prefix-unstable.jsonl"  # one PFX001 error: something to reduce


def _one_error_line(capsys, *words: str) -> None:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("inspector: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], err


def test_output_that_is_a_hard_link_to_a_log_is_refused_and_the_log_kept(tmp_path, capsys, monkeypatch):
    logs = tmp_path / "L"
    logs.mkdir()
    shutil.copy(LOG, logs / "x.jsonl")
    before = (logs / "x.jsonl").read_bytes()
    os.link(logs / "x.jsonl", tmp_path / "o.json")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "L", "--no-cache", "--output", "o.json"]) == 2
    _one_error_line(capsys, "o.json", "one of the inputs")
    assert (logs / "x.jsonl").read_bytes() == before


def test_output_over_a_hard_link_replaces_the_name_not_the_other_file(tmp_path, capsys):
    other = tmp_path / "notes.txt"
    other.write_text("keep me\n")
    os.link(other, tmp_path / "o.txt")
    main(["check", str(LOG), "--no-cache", "--output", str(tmp_path / "o.txt")])
    assert other.read_text() == "keep me\n"
    assert "PFX001" in (tmp_path / "o.txt").read_text()


@pytest.mark.parametrize(
    "argv, target, what",
    [
        (["check", str(LOG), "--no-cache", "--output", "{d}/o.txt"], "o.txt", "cannot write report"),
        (["check", str(LOG), "--no-cache", "--write-baseline", "{d}/b.json"], "b.json", "cannot write baseline"),
        (["check", str(LOG), "--no-cache", "--ledger", "{d}/l.json"], "l.json", "cannot write ledger"),
        (["cache-report", str(LOG), "--output", "{d}/c.txt"], "c.txt", "cannot write report"),
    ],
)
def test_a_full_disk_keeps_the_previous_file(tmp_path, capsys, argv, target, what):
    previous = b'{"version": 1, "sessions": {}}\n' if target == "l.json" else b"the previous one\n"
    with full_disk(tmp_path / "disk", keep={target: previous}) as d:
        code = main([a.replace("{d}", str(d)) for a in argv])
        assert (d / target).read_bytes() == previous
        assert sorted(p.name for p in d.iterdir()) == sorted([".fill", target])
    assert code == 2
    _one_error_line(capsys, target, what, "No space left on device")


def test_reduce_on_a_full_disk_leaves_no_folder(tmp_path, capsys):
    with full_disk(tmp_path / "disk") as d:
        code = main(["reduce", str(LOG), "--rule", "PFX001", "--output", str(d / "repro")])
        assert sorted(p.name for p in d.iterdir()) == [".fill"]
    assert code == 2
    _one_error_line(capsys, "repro", "No space left on device")


def test_reduce_output_is_complete_or_absent_and_never_merged_into_a_foreign_folder(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    assert main(["reduce", str(LOG), "--rule", "PFX001", "--output", str(mine)]) == 2
    _one_error_line(capsys, "mine")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    out = tmp_path / "repro"
    assert main(["reduce", str(LOG), "--rule", "PFX001", "--output", str(out)]) == 0
    assert main(["reduce", str(LOG), "--rule", "PFX001", "--output", str(out), "--as-test"]) == 2  # not empty
    assert main(["reduce", str(LOG), "--rule", "PFX001", "--output", str(out), "--as-test", "--force"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names[:2] == ["prefix-unstable.jsonl", "repro.json"] and len(names) == 3
    assert names[2].startswith("test_repro_pfx001_") and names[2].endswith(".py")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "repro"]


@pytest.mark.parametrize("linked", ["i.db", "i.db-wal", "i.db-journal"])
def test_an_index_whose_database_or_its_sidecar_is_a_link_is_refused_and_the_target_kept(tmp_path, capsys, linked):
    """The index is a database written in place: a link at its name (or at a file SQLite writes beside
    it) would have the index written somewhere else."""
    target = tmp_path / "elsewhere"
    target.write_bytes(b"not yours\n")
    (tmp_path / linked).symlink_to(target)
    assert main(["index", str(LOG), "--db", str(tmp_path / "i.db"), "-q"]) == 2
    _one_error_line(capsys, linked, "symlink")
    assert target.read_bytes() == b"not yours\n"
