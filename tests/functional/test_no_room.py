"""A full disk under the run's temporary files (the report's spool: ~1 KB a session, a gigabyte for a
million) is one error line and exit 2; it was a traceback and exit 1, the gate's "findings" code."""

from __future__ import annotations

import errno
import gc
import sqlite3
import sys
import tempfile

import pytest

from inspector.cli import main
from inspector.commands.common import no_room
from tests.support.logs import make_root

TEMPORARY_FILE = tempfile.TemporaryFile


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")  # a new one each time: a raised one holds its frames


class _FullDisk:
    """A temporary file on a disk that fills after ``room`` bytes: a write past it, and the flush of
    closing, fail as a real full disk's do."""

    def __init__(self, room: int) -> None:
        self._fh = TEMPORARY_FILE()
        self._room = room

    def write(self, data: bytes) -> int:
        self._room -= len(data)
        if self._room < 0:
            raise _enospc()
        return self._fh.write(data)

    def close(self) -> None:
        self._fh.close()
        if self._room < 0:
            raise _enospc()

    def __getattr__(self, name: str):
        return getattr(self._fh, name)


def test_a_full_temporary_disk_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys) -> None:
    from invariants.gate import spool

    make_root(tmp_path / "root", n=6)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setattr(spool.tempfile, "TemporaryFile", lambda: _FullDisk(room=2000))
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    out = tmp_path / "report.json"
    code = main(["check", str(tmp_path / "root"), "--jobs", "1", "--no-cache", "--format", "json", "-o", str(out)])
    gc.collect()  # a spool left to the collector closes there: nothing may be said of it
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and not unraisable
    assert err == (
        f"inspector: error: no room left to write (No space left on device); temporary files go to {tmp_path} "
        "(TMPDIR names another folder)\n"
    )


@pytest.mark.parametrize(
    "exc, said",
    [
        (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
        (OSError(errno.EDQUOT, "Disk quota exceeded", "/data/x"), "/data/x: Disk quota exceeded"),
    ],
)
def test_no_room_names_what_was_full(exc, said) -> None:
    assert no_room(exc) is not None and no_room(exc).startswith(f"no room left to write ({said}); ")  # type: ignore[union-attr]


def test_a_full_sqlite_scratch_database_is_no_room(tmp_path) -> None:
    db = sqlite3.connect(tmp_path / "full.db")
    db.execute("CREATE TABLE t (x)")
    db.execute("PRAGMA max_page_count = 2")  # the database is full after a page or so
    with pytest.raises(sqlite3.Error) as caught:
        db.executemany("INSERT INTO t VALUES (?)", [(b"x" * 4096,)] * 4)
    assert no_room(caught.value) is not None and "full" in no_room(caught.value)  # type: ignore[operator]


@pytest.mark.parametrize(
    "exc", [OSError(errno.EACCES, "Permission denied"), sqlite3.OperationalError("no such table: t"), ValueError()]
)
def test_other_errors_are_not_no_room(exc) -> None:
    assert no_room(exc) is None


def test_a_result_cache_that_fills_mid_run_costs_a_note_not_the_verdict(tmp_path, monkeypatch, capsys) -> None:
    from invariants.gate import result_cache

    make_root(tmp_path / "root", n=12)
    argv = ["check", str(tmp_path / "root"), "--jobs", "1", "--format", "json"]
    code = main([*argv, "--no-cache", "-q"])
    uncached = capsys.readouterr().out
    real = result_cache._open_pack

    def small(path):
        con = real(path)
        (pages,) = con.execute("PRAGMA page_count").fetchone()
        con.execute(f"PRAGMA max_page_count = {pages + 2}")  # full after a few entries
        return con

    monkeypatch.setattr(result_cache, "_open_pack", small)
    got = main([*argv, "--cache-dir", str(tmp_path / "cache")])
    out, err = capsys.readouterr()
    assert (got, out) == (code, uncached)
    assert "inspector: note: the result cache stopped being written (" in err
    assert "database or disk is full); the verdict is whole, the next run slower" in err
    monkeypatch.setattr(result_cache, "_open_pack", real)
    main([*argv, "--cache-dir", str(tmp_path / "cache-2")])
    assert "note" not in capsys.readouterr().err  # with room, nothing said
