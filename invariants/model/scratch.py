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
