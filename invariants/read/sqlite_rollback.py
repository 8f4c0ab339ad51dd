"""A SQLite database whose write was cut off, read as committed, without writing it.

The harness may write its session store in a rollback-journal mode (``journalMode`` ``delete``,
``truncate`` or ``persist``), and an index may be left so by another tool: a write cut off there
leaves a hot ``-journal``.  The next writer to open the database rolls it back; a read-only
connection cannot (a rollback writes), and the file read without its journal holds half a
transaction.  So such a database is read from a private copy, rolled back there.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from invariants.read.source import journal_of


def stamp(path: Path) -> tuple[int, int]:
    """A file's modification time and size: what says a copy of it is still its copy."""
    st = path.stat()
    return st.st_mtime_ns, st.st_size


_COPIES: OrderedDict[Path, tuple[tuple, tempfile.TemporaryDirectory]] = OrderedDict()
"""The rolled-back copies made, by database, the last used last: a few are kept, the rest deleted."""
KEEP_COPIES = 4
_COPYING = threading.Lock()  # (the TUI reads from worker threads)


def rolled_back(path: Path, stamps: tuple) -> Path:
    """:func:`rolled_back_copy` of the database at ``path``, made once for each state of it and its
    journal (``stamps``: :func:`stamp` of each) and kept while it is among the last few used."""
    with _COPYING:
        return _rolled_back_copy(path, stamps)


def _rolled_back_copy(path: Path, stamps: tuple) -> Path:
    held = _COPIES.get(path)
    if held is not None and held[0] == stamps:
        _COPIES.move_to_end(path)
        return Path(held[1].name) / path.name
    tmp = tempfile.TemporaryDirectory(prefix="inspector-db-")
    try:
        copy = rolled_back_copy(path, Path(tmp.name))
    except BaseException:
        tmp.cleanup()
        raise
    if held is not None:
        held[1].cleanup()
    _COPIES[path] = (stamps, tmp)
    _COPIES.move_to_end(path)
    while len(_COPIES) > KEEP_COPIES:
        _COPIES.popitem(last=False)[1][1].cleanup()
    return copy


def rolled_back_copy(path: Path, folder: Path) -> Path:
    """A copy in ``folder`` of the SQLite database at ``path`` with its hot ``-journal`` rolled back
    into it: the committed state, which a read-only open of ``path`` cannot give (a rollback writes)
    and a read without the journal gets wrong (half a transaction).  Neither file at ``path`` is
    written.  The database is copied before its journal: a page is journaled before it is
    overwritten, so the journal copied after it holds the original of every page the database copy
    may have had overwritten.  Raises OSError (a full disk, a journal gone) or sqlite3.Error."""
    copy = folder / path.name
    shutil.copyfile(path, copy)
    shutil.copyfile(journal_of(path), journal_of(copy))
    con = sqlite3.connect(copy)  # read-write: its first read rolls the journal back, into the copy
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        con.close()
    return copy
