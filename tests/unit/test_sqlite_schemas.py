"""The SQLite store's schema version is read from the store: 15 (JSON text rows), 17, 18 (17 + owner) are
read, any other is one finding naming the version, never misread as 17."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from invariants import check
from invariants.read.sqlite_backend import (
    APPLICATION_ID,
    HEAD_DDL,
    OWNER_DDL,
    V15_DDL,
    db_info,
    write_database,
)
from tests.unit.test_sqlite_backend import _late_log


def _jsonl_events(log, tmp_path: Path) -> list[dict]:
    path = log.write(tmp_path / "ref.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _v15_store(path: Path, log, events: list[dict]) -> None:
    """A store as schema.ts @ 9186824e87 writes it: its DDL, one row per event, JSON text columns."""
    con = sqlite3.connect(path)
    con.executescript(V15_DDL)
    con.execute("INSERT INTO persistence_state VALUES (1, 'store')")
    h = log.header
    con.execute(
        "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth,"
        " agent_preset, incarnation, revision) VALUES (?, ?, ?, ?, NULL, NULL, NULL, ?, NULL, 'inc', 0)",
        (h["id"], h["version"], h["createdAt"], h.get("cwd"), h.get("delegationDepth")),
    )
    for e in events:
        con.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                h["id"],
                e["seq"],
                e["type"],
                e["time"],
                json.dumps(e["data"], separators=(",", ":")),
                json.dumps(e["sourceEventSeqs"]) if "sourceEventSeqs" in e else None,
                json.dumps(e["surfaceOp"]) if "surfaceOp" in e else None,
                1 if e.get("ignorable") else None,
            ),
        )
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 15")
    con.commit()
    con.close()


def _compare(a, b) -> None:
    assert b.sessions[0].events == a.sessions[0].events > 0
    assert [(f.rule, f.seq) for f in b.findings] == [(f.rule, f.seq) for f in a.findings]


def test_schema_15_rows_of_json_text_read_like_the_jsonl_log(tmp_path):
    log = _late_log()
    events = _jsonl_events(log, tmp_path)
    assert any("sourceEventSeqs" in e for e in events)
    db = tmp_path / "v15.db"
    _v15_store(db, log, events)
    assert db_info(db).schema == "v15"
    _compare(check([tmp_path / "ref.jsonl"]), check([db]))
    assert not [f for f in check([db]).findings if f.rule == "LOG016"]


def test_schema_17_and_18_are_read_and_the_owner_kept(tmp_path):
    log = _late_log()
    (tmp_path / "ref").mkdir()
    log.write(tmp_path / "ref" / "late-1.jsonl")
    v17 = tmp_path / "v17.db"
    write_database(v17, [(log.header, log.events)])
    v18 = tmp_path / "v18.db"
    write_database(v18, [(log.header, log.events)])
    con = sqlite3.connect(v18)
    con.execute("ALTER TABLE sessions ADD COLUMN owner TEXT")
    con.execute("UPDATE sessions SET owner = 'alice'")
    con.execute("PRAGMA user_version = 18")
    con.commit()
    columns = [r[1] for r in con.execute("PRAGMA table_info(sessions)")]
    con.close()
    ddl18 = sqlite3.connect(":memory:")
    ddl18.executescript(OWNER_DDL)  # 18's DDL: 17's sessions table and the owner column
    assert columns == [r[1] for r in ddl18.execute("PRAGMA table_info(sessions)")]
    assert columns[-1] == "owner" and "owner" not in HEAD_DDL
    ref = check([tmp_path / "ref"])
    for db in (v17, v18):
        _compare(ref, check([db]))
    result = check([v18], keep_models=True)
    assert result.models[0].header.raw["owner"] == "alice"


def test_the_index_keeps_the_owner(tmp_path, monkeypatch):
    from inspector.cli import main

    log = _late_log()
    db = tmp_path / "v18.db"
    write_database(db, [(log.header, log.events)])
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE sessions ADD COLUMN owner TEXT")
    con.execute("UPDATE sessions SET owner = 'alice'")
    con.execute("PRAGMA user_version = 18")
    con.commit()
    con.close()
    monkeypatch.chdir(tmp_path)
    assert main(["index", str(db), "--db", "idx.db", "-q"]) == 0
    con = sqlite3.connect(tmp_path / "idx.db")
    assert con.execute("SELECT owner FROM sessions").fetchall() == [("alice",)]
    con.close()


def test_any_other_schema_version_is_one_finding_naming_it(tmp_path):
    log = _late_log()
    db = tmp_path / "v16.db"
    write_database(db, [(log.header, log.events)])
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 16")
    con.commit()
    con.close()
    result = check([db])
    errors = [f for f in result.findings if f.severity == "error"]
    assert [f.rule for f in errors] == ["LOG016"]
    assert "schema version 16" in errors[0].message and "does not read" in errors[0].message
