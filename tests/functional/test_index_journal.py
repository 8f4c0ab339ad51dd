"""An index whose write was cut off in rollback-journal mode: judged, rebuilt and read without being written."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from inspector.index import build_index
from tests.support.index_db import q
from tests.support.logs import make_root

_CUT_OFF = """
import os, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA journal_mode=DELETE")  # as another tool may leave it; ours writes in WAL mode
con.execute("PRAGMA cache_size=10")  # so the uncommitted pages reach the file before the end
con.execute("BEGIN")
con.execute(sys.argv[2])
con.execute("CREATE TABLE filler(y)")
con.executemany("INSERT INTO filler VALUES (?)", [("y" * 500,)] * 2000)
os._exit(0)  # neither committed nor rolled back
"""


def _cut_off_write(db: Path, update: str) -> dict[str, bytes]:
    """Kill a writer mid-transaction in rollback-journal mode: ``db`` and its hot ``-journal``, as bytes."""
    subprocess.run([sys.executable, "-c", _CUT_OFF, str(db), update], check=True)
    files = {p.name: p.read_bytes() for p in (db, db.with_name(db.name + "-journal"))}
    assert len(files[db.name + "-journal"]) > 0
    return files


def test_a_cut_off_write_is_judged_as_rolled_back_and_never_written(tmp_path, capsys):
    from inspector.cli import main

    make_root(tmp_path / "root", n=2)
    db = tmp_path / "index.db"
    build_index([tmp_path / "root"], db)
    sessions = q(db, "SELECT count(*) FROM sessions")
    held = _cut_off_write(db, "UPDATE meta SET value = value || 'changed'")
    # Readers cannot roll it back: one line that says so, and nothing written.
    assert main(["query", "--db", str(db), "SELECT count(*) FROM sessions"]) == 2
    err = capsys.readouterr().err
    assert "index.db-journal" in err and "cut off" in err and err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in tmp_path.glob("index.db*")} == held
    # --rebuild knows its own index under the journal, and deletes the journal with it (here with
    # nothing to index, so no new database is made, whose first open would have deleted it too).
    (tmp_path / "empty").mkdir()
    assert main(["index", str(tmp_path / "empty"), "--db", str(db), "--rebuild", "-q"]) == 0
    assert list(tmp_path.glob("index.db*")) == []
    build_index([tmp_path / "root"], db)
    _cut_off_write(db, "UPDATE meta SET value = value || 'x'")
    assert main(["index", str(tmp_path / "root"), "--db", str(db), "--rebuild", "-q"]) == 0
    assert not db.with_name("index.db-journal").exists()
    assert q(db, "SELECT count(*) FROM sessions") == sessions

    other = tmp_path / "mine.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes(x)")
    conn.execute("INSERT INTO notes VALUES ('kept')")
    conn.commit()
    conn.close()
    held = _cut_off_write(other, "UPDATE notes SET x = 'changed'")
    assert main(["index", str(tmp_path / "root"), "--db", str(other), "--rebuild"]) == 2
    assert "not an index" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.glob("mine.db*")} == held


def test_rebuild_says_so_when_it_cannot_copy_a_cut_off_index_to_judge_it(tmp_path, monkeypatch, capsys):
    from inspector.cli import main
    from invariants.read import sqlite_rollback

    make_root(tmp_path / "root", n=1)
    db = tmp_path / "index.db"
    build_index([tmp_path / "root"], db)
    held = _cut_off_write(db, "UPDATE meta SET value = value || 'changed'")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_rollback.shutil, "copyfile", full)
    assert main(["index", str(tmp_path / "root"), "--db", str(db), "--rebuild"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "without --rebuild" in err
    assert {p.name: p.read_bytes() for p in tmp_path.glob("index.db*")} == held


def test_rebuild_knows_its_index_at_any_path(tmp_path):
    from inspector.cli import main

    make_root(tmp_path / "root", n=1)
    db = tmp_path / "a #1 ?%20" / "index.db"  # characters a URI would read as its own
    db.parent.mkdir()
    build_index([tmp_path / "root"], db)
    assert main(["index", str(tmp_path / "root"), "--db", str(db), "--rebuild", "-q"]) == 0
    assert q(db, "SELECT count(*) FROM sessions")[0][0] > 0
