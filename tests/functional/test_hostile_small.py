"""Issue 34, item 11: the smaller findings of the hostile audit, one test each."""

from __future__ import annotations

import io
import json
import random
import shutil
import sqlite3
import struct
import subprocess

import pytest
import zstandard

from inspector.cli import main
from invariants import check
from invariants.read.zstdio import FrameError, iter_frames
from tests.conftest import SAMPLES

LOG = SAMPLES / "prefix-unstable.jsonl"


def _skippable(n: int, payload: bytes = b"meta") -> bytes:
    return struct.pack("<II", 0x184D2A50 + n, len(payload)) + payload


def test_zstd_skippable_frames_are_read_past_as_the_reference_zstd_does(tmp_path):
    lines = LOG.read_bytes().splitlines(keepends=True)
    c = zstandard.ZstdCompressor(write_checksum=True)
    data = _skippable(0) + c.compress(lines[0]) + _skippable(15, b"x" * 5000) + c.compress(b"".join(lines[1:]))
    data += _skippable(7, b"")
    path = tmp_path / "s.jsonl.zstd"
    path.write_bytes(data)
    assert b"".join(iter_frames(io.BytesIO(data))) == LOG.read_bytes()
    if shutil.which("zstd"):
        assert subprocess.run(["zstd", "-dc", str(path)], capture_output=True).stdout == LOG.read_bytes()
    # every line is checked; one LOG009 says the harness's own reader refuses such a file
    findings = check([path]).findings
    assert [f.rule for f in findings if f.rule != "LOG009"] == [f.rule for f in check([LOG]).findings]
    (skip,) = [f for f in findings if f.rule == "LOG009"]
    assert "skippable" in skip.message and "harness" in skip.message
    with pytest.raises(FrameError) as info:  # a skippable frame cut short is a torn file, as any frame
        list(iter_frames(io.BytesIO(data[: len(data) - len(_skippable(7, b"")) + 6])))
    assert info.value.kind == "torn"


@pytest.mark.parametrize(
    "content",
    [b"", random.Random(48).randbytes(4000), b"\n\n\n", b'{"type":"session","version":0,"id":"x"}\n'],
    ids=["empty", "random-bytes", "blank-lines", "header-only"],  # the same ids in every process (pytest -n)
)
def test_replay_of_what_is_no_log_with_steps_says_so_and_fails(tmp_path, capsys, content):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("inspector: error: ") and "x.jsonl" in captured.err


def test_replay_of_a_store_or_a_foreign_database_says_so(tmp_path, capsys):
    assert main(["replay", str(SAMPLES / "late" / "db" / "sessions.sqlite")]) == 2
    assert "pick one with --session" in capsys.readouterr().err
    db = tmp_path / "other.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE x(a)")
    con.commit()
    con.close()
    assert main(["replay", str(db)]) == 2
    assert "no harness sessions/events tables" in capsys.readouterr().err


def test_a_stray_config_above_a_folder_outside_any_repository_never_applies(tmp_path, capsys, monkeypatch):
    """Outside a git repository the search looks in the working directory alone (a stray inspector.toml in a
    shared temporary folder above turned 4 errors into 0)."""
    (tmp_path / "inspector.toml").write_text('ignore = ["PFX", "DIV", "HDR", "LOG"]\n')
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(LOG, work / "x.jsonl")
    monkeypatch.chdir(work)
    assert main(["check", "x.jsonl", "--no-cache"]) == 1
    assert "PFX001" in capsys.readouterr().out
    (work / "inspector.toml").write_text('ignore = ["PFX"]\n')  # the working directory's own file applies
    assert main(["check", "x.jsonl", "--no-cache"]) == 0


def test_an_incremental_index_updates_the_root_of_a_log_found_under_another_root(tmp_path, capsys):
    from inspector.index import run_query

    (tmp_path / "root" / "sub").mkdir(parents=True)
    shutil.copy(LOG, tmp_path / "root" / "sub" / "x.jsonl")
    db = tmp_path / "i.db"
    assert main(["index", str(tmp_path / "root" / "sub"), "--db", str(db), "--quiet"]) == 0
    assert main(["index", str(tmp_path / "root"), "--db", str(db), "--quiet"]) == 0
    _, rows, _ = run_query(db, "SELECT root FROM sessions")
    assert rows == [(str(tmp_path / "root"),)]


def test_an_unwritable_default_cache_is_said_and_skipped_a_chosen_one_is_exit_2(tmp_path, capsys, monkeypatch):
    """What docs/CHECK.md says about an unwritable cache is what happens."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".inspector_cache").write_text("a file where the cache folder would go")
    assert main(["check", str(LOG)]) == 1  # the verdict, without the cache
    err = capsys.readouterr().err
    assert "cannot write the result cache" in err and "checking without it" in err
    assert main(["check", str(LOG), "--cache-dir", str(tmp_path / ".inspector_cache" / "x")]) == 2
    doc = (SAMPLES.parent / "docs" / "CHECK.md").read_text()
    assert "runs without it" in doc and "named with `--cache-dir`" in doc


def test_query_limit_0_json_streams_its_rows(tmp_path, capsys, monkeypatch):
    import inspector.index as index_mod
    from inspector.commands.query import write_json_rows
    from invariants.gate.report import dumps_json

    db = tmp_path / "i.db"
    assert main(["index", str(SAMPLES), "--db", str(db), "--quiet", "--jobs", "1"]) == 0
    capsys.readouterr()
    sql = "SELECT path, steps, head_hash FROM sessions ORDER BY path"
    assert main(["query", "--db", str(db), sql, "--format", "json"]) == 0
    held = capsys.readouterr().out

    def no_holding(*a, **k):
        raise AssertionError("--limit 0 --format json must not fetch every row at once")

    monkeypatch.setattr(index_mod, "run_query", no_holding)
    assert main(["query", "--db", str(db), sql, "--format", "json", "--limit", "0"]) == 0
    assert capsys.readouterr().out == held and len(json.loads(held)) > 1
    out = io.StringIO()

    def rows():
        yield (1, "a")
        yield (2, "b")
        assert out.getvalue().count('"n"') == 2  # both rows were written before a third is asked for
        yield (3, "c")

    write_json_rows(["n", "s"], rows(), out)
    assert (
        out.getvalue() == dumps_json([{"n": i, "s": s} for i, s in ((1, "a"), (2, "b"), (3, "c"))], indent=True) + "\n"
    )
    out = io.StringIO()
    write_json_rows(["n"], iter(()), out)
    assert out.getvalue() == "[]\n"
