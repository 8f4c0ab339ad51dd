"""A private temporary SQLite database that keeps every Python string exactly.

SQLite takes text as UTF-8, and a string from the file system or from a log may hold a lone
surrogate: a file name's undecodable bytes (``os.fsdecode``) or a JSON ``"\\ud800"``.  UTF-8
refuses it, and one such name made the whole check end in a traceback.  Bound as the bytes
``surrogatepass`` makes (:func:`key`), every string is kept as it is: equal strings stay equal,
different ones different, and such a BLOB sorts by its bytes, which for these bytes is code point
order, as Python sorts strings.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Iterable, Sequence

BATCH = 1_000
"""Rows held before they are written to a scratch database: one statement a batch, not a row."""


def scratch_db(cache_kib: int = 2000) -> sqlite3.Connection:
    """A private temporary database on disk, deleted when closed (SQLite's ``""``), with a page cache
    of at most ``cache_kib`` KiB (SQLite's default 2,000; a table written and read in order needs
    little)."""
    db = sqlite3.connect("")
    db.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
    return db


def key(text: str) -> bytes:
    """``text`` as the scratch database stores and compares it."""
    return text.encode("utf-8", "surrogatepass")


def text(stored: bytes) -> str:
    """The string :func:`key` stored."""
    return stored.decode("utf-8", "surrogatepass")


class SpillTable:
    """One table of a private scratch database, appended to in batches of :data:`BATCH` rows: where a large
    folder's listing or its logs go once they outgrow memory.  Written once, then read in order, so
    its page cache is small."""

    __slots__ = ("_db", "_insert", "_pending")

    def __init__(self, create: str, insert: str, rows: Iterable[tuple] = ()) -> None:
        """A table made by ``create``, ``rows`` written by ``insert`` (its one statement for a row)."""
        self._db = scratch_db(cache_kib=256)
        self._db.execute(create)
        self._insert = insert
        self._pending: list[tuple] = []
        self._db.executemany(insert, rows)

    def append(self, row: tuple) -> None:
        self._pending.append(row)
        if len(self._pending) >= BATCH:
            self._flush()

    def query(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        """``sql``'s rows, every row appended so far written first."""
        self._flush()
        return self._db.execute(sql, args)

    def _flush(self) -> None:
        if self._pending:
            self._db.executemany(self._insert, self._pending)
            self._pending = []
