"""The logs an index run found, held on disk while the run needs them.

The prune (what is gone), the roots' refresh (what moved under another root)
and the plan (the folders, in the order they were found) each go over every
log the walk found.  Held as Python objects that is about 1 KB a log, for
the whole run; here they are rows of a private temporary SQLite database
(deleted when closed), read back a folder at a time.  Names are stored as their
:func:`~invariants.model.scratch.key`, so a file name's undecodable bytes are kept as they are.
"""

from __future__ import annotations

import pickle
from itertools import islice
from typing import Iterable, Iterator

from invariants.model.scratch import key, scratch_db, text
from invariants.read.source import LogSource

_BATCH = 1000  # rows inserted at a time


class FoundLogs:
    """Every log of ``sources`` (read once, here) by its display name and its folder."""

    def __init__(self, sources: Iterable[LogSource]) -> None:
        self._con = scratch_db()
        self._con.execute("CREATE TABLE logs(n INTEGER PRIMARY KEY, display BLOB, folder BLOB, root BLOB, source BLOB)")
        it = iter(sources)
        self.count = 0
        while rows := [
            (key(s.display), key(str(s.path.parent)), key(str(s.root)), pickle.dumps(s, pickle.HIGHEST_PROTOCOL))
            for s in islice(it, _BATCH)
        ]:
            self._con.executemany("INSERT INTO logs(display, folder, root, source) VALUES (?, ?, ?, ?)", rows)
            self.count += len(rows)
        self._con.execute("CREATE INDEX logs_display ON logs(display)")
        self._con.execute("CREATE INDEX logs_folder ON logs(folder, n)")

    def root_of(self, display: str) -> str | None:
        """The root the log ``display`` was found under (None: not found)."""
        row = self._con.execute("SELECT root FROM logs WHERE display = ? ORDER BY n LIMIT 1", [key(display)]).fetchone()
        return None if row is None else text(row[0])

    def has_folder(self, folder: str) -> bool:
        return self._con.execute("SELECT 1 FROM logs WHERE folder = ? LIMIT 1", [key(folder)]).fetchone() is not None

    def folders(self) -> Iterator[str]:
        """Each folder once, in the order its first log was found."""
        for (folder,) in self._con.execute("SELECT folder FROM logs GROUP BY folder ORDER BY min(n)"):
            yield text(folder)

    def in_folder(self, folder: str) -> list[LogSource]:
        """The logs of ``folder``, in the order they were found."""
        rows = self._con.execute("SELECT source FROM logs WHERE folder = ? ORDER BY n", [key(folder)])
        return [pickle.loads(blob) for (blob,) in rows]

    def close(self) -> None:
        self._con.close()
