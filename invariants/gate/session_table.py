"""A run's sessions in a temporary SQLite table, for the fork pass at the end of a check.

Each forked child is compared with a parent among the checked sessions of
its parent's id, and a parent can come anywhere in the report's order, before
or after its child.  Held in memory, the children and the sessions they might
name grew with the run (a fleet where every other session is a subagent's
fork peaked at 350 MB for 100,000 sessions, 54 MB for 10,000).  Here every
session is one row of a private on-disk database (SQLite deletes it on
close), read back a child at a time in report order, each with the sessions
of its parent's id, so memory is SQLite's page cache, not the run.
"""

from __future__ import annotations

import sqlite3
from typing import Iterable, Iterator

from invariants.gate.result import SessionSummary
from invariants.gate.spool import dump_item, load_item

_ROWS = 1024  # rows per executemany, and per fetch


class SessionTable:
    """Sessions in report order (``k``), with their id and, for a forked child, its parent's id."""

    def __init__(self, sessions: Iterable[SessionSummary]) -> None:
        self._con = sqlite3.connect("")  # "": a private temporary database on disk, deleted on close
        self._con.execute("CREATE TABLE s (k INTEGER PRIMARY KEY, id TEXT, parent TEXT, summary BLOB)")
        rows: list[tuple[int, str, str | None, bytes]] = []
        for k, s in enumerate(sessions):
            d = s.to_json()
            d["findings"] = []  # the fork pass reads none; the report has them
            rows.append((k, s.id, s.parent_session if s.has_header and s.parent_session else None, dump_item(d)))
            if len(rows) >= _ROWS:
                self._con.executemany("INSERT INTO s VALUES (?, ?, ?, ?)", rows)
                rows = []
        self._con.executemany("INSERT INTO s VALUES (?, ?, ?, ?)", rows)
        self._con.execute("CREATE INDEX s_id ON s (id, k)")

    def forks(self) -> Iterator[tuple[SessionSummary, list[SessionSummary]]]:
        """Every forked child (a header naming a parent) in report order, read as it is asked for, with
        the checked sessions of its parent's id in report order, the child itself excluded."""
        con = self._con
        cur = con.execute("SELECT k, parent, summary FROM s WHERE parent IS NOT NULL ORDER BY k")
        while rows := cur.fetchmany(_ROWS):
            for k, parent, blob in rows:
                same = con.execute("SELECT summary FROM s WHERE id = ? AND k != ? ORDER BY k", (parent, k))
                yield _summary(blob), [_summary(b) for (b,) in same]

    def close(self) -> None:
        self._con.close()


def _summary(blob: bytes) -> SessionSummary:
    return SessionSummary.from_json(load_item(blob))
