"""Forgetting what is gone: logs and captures no longer under an indexed path, orphaned headers."""

from __future__ import annotations

import os

import sqlite_utils

from .found import FoundLogs
from .plan import _is_dir, _within
from .stats import IndexStats
from .writer import _delete_session, _drop_capture


def _prune(db: sqlite_utils.Database, roots: list[str], found: FoundLogs, stats: IndexStats) -> set[str]:
    """Forget logs (and captures) that no longer exist under a path being indexed; returns their folders."""
    dirs = [r for r in roots if _is_dir(r)]
    files = [r for r in roots if r not in dirs]

    def covered(path: str) -> bool:
        return any(_within(path, d) for d in dirs) or path in files

    gone = [
        (sid, path)
        for sid, path in db.execute("SELECT id, path FROM sessions")
        if covered(path) and found.root_of(path) is None
    ]
    # A capture goes with the last log of its folder (it is only ever looked up beside a log).
    gone_caps = [
        path
        for (path, folder) in db.execute("SELECT path, dir FROM captures")
        if (any(_within(path, d) for d in dirs) or folder in {os.path.dirname(f) for f in files})
        and not found.has_folder(folder)
    ]  # a capture gone from a folder that keeps logs: see _plan
    if not gone and not gone_caps:
        return set()
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    for sid, _path in gone:
        _delete_session(conn, sid)
    for path in gone_caps:
        _drop_capture(conn, path)
    conn.execute("COMMIT")
    stats.removed += len(gone)
    return {os.path.dirname(p) for _sid, p in gone}


def _gc_headers(db: sqlite_utils.Database) -> None:
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    orphan = (
        "SELECT hash FROM headers WHERE hash NOT IN (SELECT header_hash FROM steps WHERE header_hash IS NOT NULL) "
        "AND hash NOT IN (SELECT header_hash FROM versions WHERE header_hash IS NOT NULL) "
        "AND hash NOT IN (SELECT header_hash FROM instances WHERE header_hash IS NOT NULL)"
    )
    conn.execute(f"DELETE FROM header_tools WHERE hash IN ({orphan})")
    conn.execute(f"DELETE FROM headers WHERE hash IN ({orphan})")
    conn.execute("COMMIT")


def _refresh_roots(db: sqlite_utils.Database, found: FoundLogs) -> None:
    """``sessions.root`` of every log found again under another root (indexed first under a subfolder, then
    under the folder above it): the row is unchanged otherwise, so only its root is written."""
    moved = []
    for path, stored in db.execute("SELECT path, root FROM sessions"):
        root = found.root_of(path)
        if root is not None and root != stored:
            moved.append((root, path))
    if not moved:
        return
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("UPDATE sessions SET root = ? WHERE path = ?", moved)
    conn.execute("COMMIT")
