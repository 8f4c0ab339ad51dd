"""A folder whose logs have captures beside them, cut into the groups its captures route between.

A capture's lines route by session id to any log of its folder (and a line that names no session
to the log the capture is named after), so a folder with a capture was checked as one unit: a
seed-era project folder (``cwd-<hash>/<id>.jsonl``, ``<id>.requests.jsonl`` beside) of thousands of
sessions held every model until its captures were read, and went to one worker.  Here each capture
is read for what its lines name (:func:`~invariants.read.capture.capture_keys`, the requests left
unparsed) and each log's first line for the ids its session may have
(:func:`~invariants.read.load.possible_ids`); a log and every log a capture beside it may route to,
or whose file name a line hints at, share a unit.  Every routing question a unit asks
(:class:`~invariants.gate.requests.RequestRouter`: by id, the last of an id winning; by the
capture's name; is a hinted file a log this run checks) then has the answer the whole folder
gives, so the report is the same.  Anything not known for certain keeps the folder whole: a
folder ``requests.jsonl`` (its lines may go to any log, and a line without a session id to the
folder's only log), a log or capture that cannot be read, a capture line over the line limit.
"""

from __future__ import annotations

import sqlite3
import sys
import zlib
from array import array
from base64 import b64decode, b64encode
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from invariants.gate.requests import hinted_names
from invariants.gate.result_cache import Digest, revision
from invariants.model.scratch import BATCH, SpillTable, key, scratch_db, text
from invariants.read.capture import capture_keys, find_capture, folder_names
from invariants.read.load import possible_ids
from invariants.read.source import LogPath, LogSource, captures_present, is_folder_capture

if TYPE_CHECKING:
    from invariants.gate.result_cache import ResultCache


class Groups:
    """A folder's logs cut into the groups its captures route between, held as a few numbers a log
    (a list a group held a flat folder of 100,000 sessions in ~30 MB of Python objects).

    ``first[i]`` is the first log of log ``i``'s group (-1 when it is in none: a unit alone) and
    ``after[i]`` the next log of its group (-1 after its last).  A group also has its *hints*: the
    file names its captures hint at that are no log of the folder (whether they exist decides REQ004
    against a log this run does not check, so they are part of its cache key), held as one string a
    group (``/`` between names: a hinted name never holds one), found by its first log.
    ``hints`` gives them by first log, ascending, each group's sorted."""

    __slots__ = ("first", "after", "_keys", "_ends", "_text")

    def __init__(self, first: array[int], hints: Iterable[tuple[int, list[str]]] = ()) -> None:
        self.first = first
        self.after = array("i", [-1]) * len(first)
        last = array("i", [-1]) * len(first)  # (by group: its last log so far)
        for i, g in enumerate(first):
            if g >= 0:
                if g != i:
                    self.after[last[g]] = i
                last[g] = i
        self._keys = array("i")
        self._ends = array("i")
        parts: list[str] = []
        size = 0
        for g, names in hints:
            if names:
                parts.append("/".join(names))
                size += len(parts[-1])
                self._keys.append(g)
                self._ends.append(size)
        self._text = "".join(parts)

    def members(self, g: int) -> list[int]:
        """The logs of the group whose first log is ``g``, ascending."""
        out = []
        while g >= 0:
            out.append(g)
            g = self.after[g]
        return out

    def hints(self, g: int) -> list[str]:
        """The hints of the group whose first log is ``g``, sorted."""
        k = bisect_left(self._keys, g)
        if k == len(self._keys) or self._keys[k] != g:
            return []
        return self._text[self._ends[k - 1] if k else 0 : self._ends[k]].split("/")

    def firsts(self) -> Iterator[int]:
        """Each group's first log, ascending."""
        return (i for i, g in enumerate(self.first) if g == i)

    def to_json(self) -> dict[str, Any]:
        """For the result cache, compressed: a flat folder of 100,000 sessions has 2-3 MB of hints
        and places, and writing them whole into the cache's database took 11 MB more at once."""
        return {
            "first": _packed(self.first),
            "keys": _packed(self._keys),
            "ends": _packed(self._ends),
            "text": _deflated(self._text.encode("utf-8", "surrogatepass")),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Groups:
        groups = cls(_unpacked(data["first"]))
        groups._keys, groups._ends = _unpacked(data["keys"]), _unpacked(data["ends"])
        groups._text = _inflated(data["text"]).decode("utf-8", "surrogatepass")
        return groups


def _packed(a: array[int]) -> str:
    """An array of ints as text (little-endian, compressed), for the cache's JSON."""
    if sys.byteorder == "big":
        a = array("i", a)
        a.byteswap()
    return _deflated(a.tobytes())


def _unpacked(packed: str) -> array[int]:
    a = array("i")
    a.frombytes(_inflated(packed))
    if sys.byteorder == "big":
        a.byteswap()
    return a


def _deflated(data: bytes) -> str:
    return b64encode(zlib.compress(data, 1)).decode()


def _inflated(packed: str) -> bytes:
    return zlib.decompress(b64decode(packed))


SPILL = 10_000
"""Logs a :class:`FolderLogs` holds in lists; past it, in a private scratch database."""


@dataclass(slots=True)
class FolderLogs:
    """One local folder's logs, held as their names and what the folder's listing holds beside each.

    A seed-era project folder holds thousands of logs, all held while it is planned and cut: here a
    name and a tuple a log, where a :class:`LogSource` and its path object cost about 1 KB, and past
    :data:`SPILL` logs a row of a scratch database (a flat folder of 100,000 sessions held 7 MB of
    names).  A source is made again when one is asked for (``logs[i]``).  A log that is more than
    its name (a session in a database, a URL, one whose folder was not listed, another root) is held
    as it is, in ``odd``; :func:`listed` turns a folder with one into plain sources first."""

    folder: LogPath
    root: LogPath
    odd: dict[int, LogSource] = field(default_factory=dict)
    first: LogSource | None = None  # the first log as given: a folder of one log makes no source again
    any_beside: bool = False  # whether any log has a capture name beside it
    _names: list[str] = field(default_factory=list)
    _beside: list[tuple[str, ...]] = field(default_factory=list)
    _spilled: SpillTable | None = None  # past SPILL: every log's row, in order (rowid: place + 1)
    _n: int = 0

    def add(self, src: LogSource) -> None:
        """Hold ``src``, a log of this folder."""
        if src.member is None and src.beside is not None and src.root == self.root and isinstance(src.path, Path):
            if not self._n:
                self.first = src
            self._append(src.path.name, src.beside)
            self.any_beside = self.any_beside or bool(src.beside)
        else:
            self.odd[self._n] = src
            self._append("", ())

    def _append(self, name: str, beside: tuple[str, ...]) -> None:
        self._n += 1
        if self._spilled is not None:
            self._spilled.append(_row(name, beside))
            return
        self._names.append(name)
        self._beside.append(beside)
        if self._n > SPILL:
            self._spilled = SpillTable(
                "CREATE TABLE log (name BLOB, beside BLOB)",
                "INSERT INTO log VALUES (?, ?)",
                map(_row, self._names, self._beside),
            )
            self._names, self._beside = [], []

    def entry(self, i: int) -> tuple[str, tuple[str, ...]]:
        """Log ``i``'s name and the capture names beside it."""
        if self._spilled is None:
            return self._names[i], self._beside[i]
        row = self._spilled.query("SELECT name, beside FROM log WHERE rowid = ?", (i + 1,)).fetchone()
        if row is None:
            raise IndexError(i)
        return _unrow(row)

    def entries(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """Every log's name and the capture names beside it, in order."""
        if self._spilled is None:
            return zip(self._names, self._beside)
        return map(_unrow, self._spilled.query("SELECT name, beside FROM log ORDER BY rowid"))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> LogSource:
        if i == 0 and self.first is not None:
            return self.first
        odd = self.odd.get(i)
        if odd is not None:
            return odd
        name, beside = self.entry(i)
        return LogSource(self.folder / name, self.root, beside=beside)

    def __iter__(self) -> Iterator[LogSource]:
        """Every log's source, in order (read in one pass, not asked for one at a time)."""
        for i, (name, beside) in enumerate(self.entries()):
            odd = self.first if i == 0 and self.first is not None else self.odd.get(i)
            yield odd if odd is not None else LogSource(self.folder / name, self.root, beside=beside)


def _row(name: str, beside: tuple[str, ...]) -> tuple[bytes, bytes]:
    return key(name), key("\0".join(beside))  # (a file name holds no NUL)


def _unrow(row: tuple[bytes, bytes]) -> tuple[str, tuple[str, ...]]:
    beside = text(row[1])
    return text(row[0]), tuple(beside.split("\0")) if beside else ()


def listed(sources: FolderLogs | list[LogSource]) -> FolderLogs | None:
    """A folder's logs, each with the capture names the folder holds beside it (the folder listed
    here when the walk that found them did not list it); None when they cannot be cut: a session in
    a database, a URL, or a folder that cannot be listed."""
    if isinstance(sources, FolderLogs) and not sources.odd:
        return sources
    sources = list(sources)
    if any(s.member is not None or not isinstance(s.path, Path) for s in sources):
        return None
    if any(s.beside is None for s in sources):
        names = folder_names(sources[0].path.parent)
        if names is None:
            return None
        sources = [replace(s, beside=captures_present(s.path.name, names)) for s in sources]
    logs = FolderLogs(sources[0].path.parent, sources[0].root)
    for s in sources:
        logs.add(s)
    return None if logs.odd else logs  # (a log under another root)


def route_groups(logs: FolderLogs) -> Groups | None:
    """The groups of a folder's logs that captures route between (a log in none is a unit alone);
    None when the folder must stay whole.

    What captures name, what ids each log may have and what each capture's lines hint at go into a
    private scratch database and are joined there, so the plan holds a few numbers a log however
    large the folder: a flat folder of 100,000 sessions with 25,000 captures held ~45 MB of Python
    objects at its plan's peak when they were dictionaries."""
    db = scratch_db()
    try:
        return _route(db, logs)
    finally:
        db.close()


_TABLES = """
CREATE TABLE finds (name BLOB, i INTEGER);  -- a capture, and a log whose lookup finds it
CREATE TABLE capture (c INTEGER PRIMARY KEY, name BLOB, first INTEGER);  -- first: its first finder
CREATE TABLE named (c INTEGER, sid BLOB);  -- the session ids a capture's lines name
CREATE TABLE hinted (c INTEGER, name BLOB);  -- the file names its lines hint at (by id, by file hint)
CREATE TABLE log_id (sid BLOB, i INTEGER);  -- every id a log's replay may give its session
CREATE TABLE log_name (name BLOB PRIMARY KEY, i INTEGER);
CREATE TABLE root (i INTEGER PRIMARY KEY, g INTEGER);  -- the first log of each joined log's group
"""

_MEMBERS = """
SELECT c.first, f.i FROM finds f JOIN capture c ON c.name = f.name
UNION ALL SELECT c.first, l.i FROM capture c JOIN named n ON n.c = c.c JOIN log_id l ON l.sid = n.sid
UNION ALL SELECT c.first, l.i FROM capture c JOIN hinted h ON h.c = c.c JOIN log_name l ON l.name = h.name
"""

_MISSING = """
SELECT DISTINCT r.g, h.name FROM capture c JOIN root r ON r.i = c.first JOIN hinted h ON h.c = c.c
WHERE h.name NOT IN (SELECT name FROM log_name) ORDER BY r.g, h.name
"""


def _route(db: sqlite3.Connection, logs: FolderLogs) -> Groups | None:
    """The plan, reading a spilled folder's rows twice: for the captures its lookups find (a folder
    capture keeps it whole), then for each log's ids and name.  Rows are written a ``BATCH`` at a
    time (:mod:`~invariants.model.scratch`)."""
    db.executescript(_TABLES)
    n = len(logs)
    folder = logs.folder
    whole = False

    def finds() -> Iterator[tuple[bytes, int]]:
        nonlocal whole
        for i, (name, beside) in enumerate(logs.entries()):
            if beside:
                if any(map(is_folder_capture, beside)):
                    whole = True
                    return
                if found := find_capture(folder / name, beside):
                    yield key(found.name), i

    db.executemany("INSERT INTO finds VALUES (?, ?)", finds())
    if whole:
        return None
    db.execute("INSERT INTO capture (name, first) SELECT name, min(i) FROM finds GROUP BY name ORDER BY min(i)")
    if db.execute("SELECT 1 FROM capture LIMIT 1").fetchone() is None:  # no lookup finds one: all alone
        return Groups(array("i", [-1]) * n)
    db.execute("CREATE INDEX capture_name ON capture (name)")
    named: list[tuple[int, bytes]] = []
    hinted: list[tuple[int, bytes]] = []
    for c, name in _rows(db, "SELECT c, name FROM capture"):
        keys = capture_keys(folder / text(name))
        if keys is None:
            return None
        named.extend((c, key(sid)) for sid in keys.ids)
        hints = {h for sid in keys.ids for h in hinted_names(sid, None)}
        hints.update(h for f in keys.files for h in hinted_names(None, f))
        hinted.extend((c, key(h)) for h in hints)
        if len(named) + len(hinted) >= BATCH:
            _flush(db, "INSERT INTO named VALUES (?, ?)", named)
            _flush(db, "INSERT INTO hinted VALUES (?, ?)", hinted)
    _flush(db, "INSERT INTO named VALUES (?, ?)", named)
    _flush(db, "INSERT INTO hinted VALUES (?, ?)", hinted)
    ids: list[tuple[bytes, int]] = []
    names: list[tuple[bytes, int]] = []
    for i, src in enumerate(logs):
        possible = possible_ids(src)
        if possible is None:  # unreadable
            return None
        ids.extend((key(sid), i) for sid in possible)
        names.append((key(src.path.name), i))
        if len(names) >= BATCH:
            _flush(db, "INSERT INTO log_id VALUES (?, ?)", ids)
            _flush(db, "INSERT INTO log_name VALUES (?, ?)", names)
    _flush(db, "INSERT INTO log_id VALUES (?, ?)", ids)
    _flush(db, "INSERT INTO log_name VALUES (?, ?)", names)
    db.execute("CREATE INDEX log_id_sid ON log_id (sid)")
    parent = array("i", [-1]) * n  # union-find: -1 for a log no capture joined; a group's root is its first log
    for f, i in _rows(db, _MEMBERS):
        a, b = _root(parent, f), _root(parent, i)
        if a > b:
            a, b = b, a
        parent[a] = a
        parent[b] = a
    for i in range(n):
        if parent[i] >= 0:
            parent[i] = _root(parent, i)
    db.executemany("INSERT INTO root VALUES (?, ?)", ((i, g) for i, g in enumerate(parent) if g >= 0))
    missing = groupby(_rows(db, _MISSING), key=itemgetter(0))
    return Groups(parent, ((g, [text(name) for _, name in rows]) for g, rows in missing))


def _flush(db: sqlite3.Connection, insert: str, rows: list[tuple]) -> None:
    """Write ``rows`` with ``insert`` and empty the list."""
    db.executemany(insert, rows)
    rows.clear()


def _rows(db: sqlite3.Connection, sql: str) -> Iterator[tuple]:
    """A query's rows as they are read (a cursor of its own: inserts between rows do not disturb it)."""
    return iter(db.execute(sql))


def _root(parent: array[int], i: int) -> int:
    """The root of ``i``'s set (``i`` itself when no capture joined it), halving the path on the way."""
    while parent[i] >= 0 and parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


GroupsOf = Callable[[FolderLogs], "Groups | None"]
"""What cuts a folder's logs into groups: :func:`route_groups`, or :func:`cached_groups` of a cache."""


def cached_groups(cache: ResultCache, logs: FolderLogs) -> Groups | None:
    """:func:`route_groups`, answered by ``cache`` while no log or capture of the folder has changed:
    a run whose units the cache answers reads no log and no capture, not even to plan them.

    The entry's identity and key are digests, made a log at a time: spelled out, they held every
    log's path and revision at once, and a flat folder of 100,000 sessions peaked at 171 MB (73 MB
    without the cache)."""
    folder = logs.folder
    revisions = Digest()
    names = Digest()
    for name, beside in logs.entries():
        these = [revision(folder / n) for n in (name, *beside)]  # the log's and its captures'
        if None in these:
            return route_groups(logs)
        revisions.add([these, list(beside)])
        names.add(name)
    hit = cache.get("groups", [str(folder), names.hexdigest()], revisions.hexdigest())
    if hit is not None:
        return None if hit["groups"] is None else Groups.from_json(hit["groups"])
    groups = route_groups(logs)
    value = {"groups": None if groups is None else groups.to_json()}
    cache.put("groups", [str(folder), names.hexdigest()], revisions.hexdigest(), value)
    return groups
