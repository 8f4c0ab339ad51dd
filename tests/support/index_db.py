"""Reading an index in tests: a query, FTS5's own check, and two indexes compared row by row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from inspector.index import build_index


def q(db: Path, sql: str, *params):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def fts_consistent(db: Path) -> bool:
    """FTS5's own check of both full-text indexes against their content tables."""
    conn = sqlite3.connect(db)
    try:
        for table in ("messages_fts", "findings_fts", "streams_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def assert_same(a: Path, b: Path) -> None:
    """Two indexes hold the same data; on a difference, name the table and the rows."""
    assert fts_consistent(a) and fts_consistent(b)
    sa, sb = snapshot(a), snapshot(b)
    for table in sa:
        only_a = sorted(set(sa[table]) - set(sb[table]))
        only_b = sorted(set(sb[table]) - set(sa[table]))
        if only_a or only_b:
            da, db_ = dict(only_a[0]) if only_a else {}, dict(only_b[0]) if only_b else {}
            diff = {k: (da.get(k), db_.get(k)) for k in set(da) | set(db_) if da.get(k) != db_.get(k)}
            raise AssertionError(f"{table}: {len(only_a)} vs {len(only_b)} differing rows; first: {diff}")
        assert len(sa[table]) == len(sb[table]), table


def snapshot(db: Path) -> dict[str, list]:
    """Table contents without surrogate keys or timestamps, comparable across two databases."""
    conn = sqlite3.connect(db)
    path_of = dict(conn.execute("SELECT id, path FROM sessions"))
    cap_of = dict(conn.execute("SELECT id, path FROM captures"))
    skip = {"id", "indexed_at", "index_mode", "fork_checked", "parent_id", "session_id", "capture_id", "step_id"}
    out: dict[str, list] = {}
    for table in (
        "sessions",
        "steps",
        "cache_steps",
        "versions",
        "instances",
        "messages",
        "tool_calls",
        "streams",
        "findings",
        "requests",
        "headers",
        "header_tools",
        "captures",
        "checkpoints",
    ):
        cur = conn.execute(f"SELECT * FROM {table}")
        cols = [d[0] for d in cur.description]
        rows = []
        for r in cur:
            d = dict(zip(cols, r))
            keyed = {k: v for k, v in d.items() if k not in skip}
            if "session_id" in d:
                keyed["session"] = path_of.get(d["session_id"])
            if "capture_id" in d:
                keyed["capture"] = cap_of.get(d["capture_id"])
            if table == "sessions":
                keyed["parent"] = path_of.get(d["parent_id"])
            if table == "checkpoints":
                keyed.pop("data"), keyed.pop("size")  # pickled state: equal in meaning, not in bytes
            rows.append(tuple(sorted((k, repr(v)) for k, v in keyed.items())))
        out[table] = sorted(rows)
    conn.close()
    return out


def fresh_index(base: Path, tmp_path: Path) -> Path:
    """A new index of ``base`` alone, to compare an updated one with."""
    fresh = tmp_path / "fresh.db"
    build_index([base], fresh, jobs=1)
    return fresh
