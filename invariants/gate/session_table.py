"""A run's sessions in a temporary SQLite table, for the fork pass at the end of a check.

Each forked child is compared with a parent among the checked sessions of
its parent's id, and a parent can come anywhere in the report's order, before
or after its child.  Held in memory, the children and the sessions they might
name grew with the run (a fleet where every other session is a subagent's
fork peaked at 350 MB for 100,000 sessions, 54 MB for 10,000).  Here every
session is one row of a private on-disk database (SQLite deletes it on
close), read back a child at a time in report order, so memory is SQLite's
page cache, not the run.

The sessions of a child's parent's id are asked only what the choice of the
parent needs (:class:`OfId`): a test suite's logs reuse ids (3,289 sessions
named ``a1`` in a root of 10,000 corpus logs), and a child was compared with
the whole summary of each.  Ids and paths are stored as their
:func:`~invariants.model.scratch.key`: a file name's undecodable bytes or a JSON
``"\\ud800"`` in an id are kept as they are.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from invariants.gate.fork_checks import place
from invariants.gate.result import SessionSummary
from invariants.gate.spool import dump_item, load_item
from invariants.model.scratch import key, scratch_db, text

_ROWS = 1024  # children per fetch
_INSERTS = 64  # rows per executemany: each holds two orjson results, and orjson gives each 4 KB or more
_PLACES = 500  # places a query (SQLite before 3.32 takes at most 999 variables a statement)


class SessionTable:
    """Sessions in report order (``k``, each a :meth:`SessionSummary.to_json
    <invariants.gate.result.SessionSummary.to_json>`), with their id and, for a forked child, its
    parent's id."""

    def __init__(self, sessions: Iterable[dict[str, Any]]) -> None:
        self._con = scratch_db()
        self._con.execute(
            "CREATE TABLE s (k INTEGER PRIMARY KEY, id BLOB, parent BLOB, path BLOB, folder BLOB, project BLOB, "
            "created BLOB, summary BLOB)"
        )
        rows: list[tuple] = []
        for k, d in enumerate(sessions):
            d["findings"] = []  # the fork pass reads none; the report has them
            parent = key(d["parent_session"]) if d["has_header"] and d["parent_session"] else None
            path = d["path"]
            folder, project = place(path)
            where = (key(path), key(folder), None if project is None else key(project))
            rows.append((k, key(d["session"]), parent, *where, dump_item(d["created_at"]), dump_item(d)))
            if len(rows) >= _INSERTS:
                self._con.executemany("INSERT INTO s VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
                rows = []
        self._con.executemany("INSERT INTO s VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        # One index for each question a child asks (:class:`OfId`): by id alone, a child of an id that a
        # test suite reuses (a1: 32,890 sessions of 100,000 corpus logs) was compared with every one.
        for columns in ("folder", "project", "path"):
            self._con.execute(f"CREATE INDEX s_{columns} ON s (id, {columns})")

    def forks(self) -> Iterator[tuple[SessionSummary, OfId]]:
        """Every forked child (a header naming a parent) in report order, read as it is asked for, with
        the checked sessions of its parent's id, the child itself excluded."""
        cur = self._con.execute("SELECT k, parent, summary FROM s WHERE parent IS NOT NULL ORDER BY k")
        while rows := cur.fetchmany(_ROWS):
            for k, parent, blob in rows:
                yield _summary(blob), OfId(self._con, parent, k)

    def close(self) -> None:
        self._con.close()


@dataclass(slots=True)
class Stored:
    """A checked session as the choice of a parent sees it (:class:`~invariants.gate.fork_checks.Checked`)."""

    k: int
    path: str
    created_at: Any


class OfId:
    """The sessions of one id but the child's (:class:`~invariants.gate.fork_checks.SameId`), in report
    order; the whole summary is read only for the parent chosen."""

    def __init__(self, con: sqlite3.Connection, sid: bytes, child: int) -> None:
        self._con = con
        self._args = (sid, child)  # (the id's key)

    def near(self, folder: str, project: str | None) -> list[Stored]:
        # A union, not an OR, so each half is one index search; a NULL project matches no row, as None
        # matches no log in Listed.near.
        sql = f"{_STORED} AND folder = ? UNION {_STORED} AND project = ? ORDER BY k"
        return self._rows(sql, (*self._args, key(folder), *self._args, None if project is None else key(project)))

    def any(self) -> bool:
        return self._con.execute("SELECT 1 FROM s WHERE id = ? AND k != ? LIMIT 1", self._args).fetchone() is not None

    def at(self, places: set[str]) -> list[Stored]:
        found: list[Stored] = []
        todo = sorted(map(key, places))
        for i in range(0, len(todo), _PLACES):
            part = todo[i : i + _PLACES]
            found += self._rows(f"{_STORED} AND path IN ({', '.join('?' * len(part))})", (*self._args, *part))
        return sorted(found, key=lambda c: c.k)

    def summary(self, c: Stored) -> SessionSummary:
        (blob,) = self._con.execute("SELECT summary FROM s WHERE k = ?", (c.k,)).fetchone()
        return _summary(blob)

    def _rows(self, sql: str, args: tuple) -> list[Stored]:
        return [Stored(k, text(path), load_item(created)) for k, path, created in self._con.execute(sql, args)]


_STORED = "SELECT k, path, created FROM s WHERE id = ? AND k != ?"  # a session of the id, not the child


def _summary(blob: bytes) -> SessionSummary:
    return SessionSummary.from_json(load_item(blob))
