"""Fork seeds across sessions: a child's first ``seedLength`` events must be
its parent's, copied verbatim, ending on a closed turn (LOG-FORMAT.md §8).

The parent is looked up, in order:

1. among the checked logs, by session id;
2. next to the child: ``<parent>.jsonl[.zstd|.zst]`` in the child's folder
   (seed layout), or ``../<parent>/session.jsonl[.zstd]`` (late layout) when
   that folder is still under the root;
3. under the same root (the folder the user named): ``<root>/<parent>.jsonl*``,
   ``<root>/*/<parent>.jsonl*`` (``cwd-<hash>/``) and
   ``<root>/*/<parent>/session.jsonl*`` (``--<project>--/``).

Ids are encoded the way the store encodes them (``encodedId``).  Lookups 2
and 3 only stat candidate names (no directory scan) and accept a candidate
only if its session header names the parent's id.  A parent found outside
the checked logs is read only as far as the seed (its head), never replayed.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Iterator

import orjson

from invariants.model.jsonvalue import first_difference, shorten
from invariants.model.scratch import key, scratch_db, text
from invariants.read.envelope import header_problem, parse_json, plain_envelope
from invariants.read.line_records import DEFAULT_MAX_LINE
from invariants.read.lines import open_readonly
from invariants.read.load import LogReader
from invariants.read.source import LogPath, LogSource, UrlPath

LOG_NAMES = (".jsonl", ".jsonl.zstd", ".jsonl.zst")
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def encode_id(session_id: str) -> str:
    """The store's ``encodedId``: safe UTF-16 units kept, every other one ``~XXXX``."""
    if session_id == ".":
        return "~002E"
    if session_id == "..":
        return "~002E~002E"
    units = session_id.encode("utf-16-le", "surrogatepass")
    out = []
    for i in range(0, len(units), 2):
        u = units[i] | (units[i + 1] << 8)
        c = chr(u)
        out.append(c if c in _SAFE else f"~{u:04X}")
    return "".join(out)


def parent_candidates(child: LogSource, parent_id: str) -> list[LogPath]:
    """Where a parent log may sit, nearest first.

    The places beside the child are listed whether or not they exist; the
    root-level places only where the root's index (:func:`_root_index`) has
    that name, so a root of N forked children costs one scan, not N scans of N
    folders (1,000 children whose parents were gone took three minutes) when
    the caller holds a :func:`root_index_scope`.
    """
    enc = encode_id(parent_id)
    here = child.path.parent
    out: list[LogPath] = [here / f"{enc}{s}" for s in LOG_NAMES]
    out += [here.parent / enc / f"session{s}" for s in LOG_NAMES]
    root = child.root
    if root.is_dir():
        with _root_index(root) as where:
            named = {s: where.get(f"{enc}{s}") for s in LOG_NAMES}
            folders = where.get(enc)
        out += [p for s in LOG_NAMES for p in named[s] if p.parent == root]
        per_dir: dict[LogPath, list[LogPath]] = {}
        for s in LOG_NAMES:  # <root>/<d>/<enc>.jsonl* (seed layout)
            for p in named[s]:
                if p.parent != root:
                    per_dir.setdefault(p.parent, []).append(p)
        for p in folders:  # <root>/<d>/<enc>/session.jsonl* (late layout)
            if p.parent != root:
                per_dir.setdefault(p.parent, []).extend(p / f"session{s}" for s in LOG_NAMES)
        for d in sorted(per_dir):
            out += per_dir[d]
    seen: set[LogPath] = set()
    unique = []
    for p in out:
        # Never outside the root named (a log named alone: its folder), whatever the layout suggests.
        if p not in seen and p != child.path and root in p.parents:
            seen.add(p)
            unique.append(p)
    return unique


_ROOT_INDEX: ContextVar[dict | None] = ContextVar("fork_root_index", default=None)


@contextmanager
def root_index_scope() -> Iterator[None]:
    """Within this block each root is scanned once (one check run's fork checks)."""
    scope: dict[LogPath, RootIndex] = {}
    token = _ROOT_INDEX.set(scope)
    try:
        yield
    finally:
        _ROOT_INDEX.reset(token)
        for index in scope.values():
            index.close()


_BATCH = 1024  # names a listing gives before they are inserted


class RootIndex:
    """Every name at ``<root>/<name>`` and ``<root>/<d>/<name>`` (``d`` a real folder, not a symlink),
    with its paths in candidate order (the root's names, then each folder's, by name).

    Held in a private temporary SQLite database, not in memory: a harness root's folders hold a
    folder per session, and a root of 100,000 sessions took 43 MB as a dict of paths.  The names
    are read as listed, never sorted here: SQLite orders them when asked (each name is stored as its
    :func:`~invariants.model.scratch.key`, whose byte order is code point order, undecodable names
    included)."""

    def __init__(self, root: LogPath) -> None:
        self.root = root
        self._con = scratch_db()
        self._con.execute("CREATE TABLE e (name BLOB, dir BLOB)")  # dir NULL: a name of the root itself
        self._con.execute("CREATE TABLE d (dir BLOB)")  # the root's real folders, listed next
        top = _entries(root)
        while batch := list(islice(top, _BATCH)):
            self._con.executemany("INSERT INTO e VALUES (?, NULL)", [(key(n),) for n, _ in batch])
            self._con.executemany("INSERT INTO d VALUES (?)", [(key(n),) for n, is_dir in batch if is_dir])
        for (d,) in self._con.execute("SELECT dir FROM d"):
            names = _entries(root / text(d))
            while batch := list(islice(names, _BATCH)):
                self._con.executemany("INSERT INTO e VALUES (?, ?)", [(key(n), d) for n, _ in batch])
        self._con.execute("CREATE INDEX e_name ON e (name, dir)")

    def get(self, name: str) -> list[LogPath]:
        root = self.root
        sql = "SELECT dir FROM e WHERE name = ? ORDER BY dir IS NOT NULL, dir"
        return [root / name if d is None else root / text(d) / name for (d,) in self._con.execute(sql, (key(name),))]

    def close(self) -> None:
        self._con.close()


@contextmanager
def _root_index(root: LogPath) -> Iterator[RootIndex]:
    """The :class:`RootIndex` of ``root``: scanned afresh (and closed after) on every use, except inside
    :func:`root_index_scope`, where a root is scanned once."""
    scope = _ROOT_INDEX.get()
    index = scope.get(root) if scope is not None else None
    if index is not None:
        yield index
        return
    index = RootIndex(root)
    if scope is not None:
        scope[root] = index
        yield index
        return
    try:
        yield index
    finally:
        index.close()


def _entries(folder: LogPath) -> Iterator[tuple[str, bool]]:
    """(name, is a real folder) of a folder's entries as listed; none when it cannot be listed."""
    if isinstance(folder, UrlPath):
        listing = folder.children()
        yield from ((n, e.get("type") == "directory" and not e.get("islink")) for n, e in listing.items())
        return
    import os

    try:
        with os.scandir(folder) as it:
            for e in it:
                yield e.name, e.is_dir(follow_symlinks=False)
    except OSError:
        return


def could_be_parent(child_created: Any, parent_created: Any) -> bool:
    """A fork is created after its parent; unknown times do not rule a log out."""
    num = (int, float)
    if isinstance(child_created, num) and isinstance(parent_created, num) and not isinstance(child_created, bool):
        return parent_created <= child_created
    return True


def find_parent_log(child: LogSource, parent_id: str, child_created: Any = None) -> LogSource | None:
    """The parent's log beside the child, else the one place under its root the store could have put it.

    Beside the child (same folder or project directory) the id decides.  At
    the root-level places ids repeat across unrelated folders, so a log there
    is taken only when it is the only one with that id created before the
    child.  Only regular files (not symlinks) are opened, and only their first
    line is read.
    """
    near = {child.path.parent / f"{encode_id(parent_id)}{s}" for s in LOG_NAMES}
    far: list[LogSource] = []
    for p in parent_candidates(child, parent_id):
        try:
            if not p.is_file() or p.is_symlink():
                continue
        except OSError:
            continue
        src = LogSource(p, child.root)
        reader = LogReader(src)
        for _ in islice(reader.iter_objects(), 1):
            break
        hdr = reader.header
        if hdr is None or hdr.id != parent_id or hdr.version is None:
            continue
        if p in near or p.parent.parent == child.path.parent.parent and p.name.startswith("session.jsonl"):
            return src
        if could_be_parent(child_created, hdr.created_at):
            far.append(src)
    return far[0] if len(far) == 1 else None


@dataclass(frozen=True, slots=True)
class ForkSide:
    """What the fork check needs of one log (picklable, cacheable)."""

    source: LogSource
    session: str
    events: int | None  # None: not known yet (a parent found outside the checked logs)
    era: str = "seed"
    parent_session: str | None = None
    seed_length: int = 0


def _head(source: LogSource, n: int) -> list[tuple[tuple, int]]:
    """The first ``n`` events as (compared fields, physical line)."""
    reader = LogReader(source)
    return [((e.type, e.seq, e.time, e.data, e.surface_op, e.source_seqs), e.line) for e in islice(iter(reader), n)]


def check_fork_sides(child: ForkSide, parent: ForkSide | None, emit: Callable[..., None]) -> None:
    """The seed checks proper, on two :class:`ForkSide` values."""
    if not child.parent_session:
        return
    n = child.seed_length or 0
    where = {"file": child.source.display, "session": child.session, "line": 1}
    if child.events is not None and n > child.events:
        emit("FRK004", f"seedLength {n} exceeds the {child.events} events of this log", **where)
        return
    if n == 0:
        return
    if parent is not None and (parent.events is None or n <= parent.events) and copied_seed(child, parent, n):
        return  # the usual fork, told from the bytes: no event of either head is built
    child_head = _head(child.source, n)
    last, last_line = child_head[-1] if child_head else (None, None)
    boundary_ok = True
    if child.era != "late":  # seed, or undetermined (judged by the seed rules)
        boundary_ok = last is not None and last[0] == "turn/end"
    else:
        for ev, _line in reversed(child_head):
            if ev[0] in ("turn/start", "turn/end"):
                boundary_ok = ev[0] == "turn/end"
                break
    parent_head = _parent_head(child, parent, n, where, emit)
    if not boundary_ok:
        # At the seed's last event; the parent's copy of it is where the fork was taken.
        at = {**where, "line": last_line or 1}
        parent_at = _parent_line(parent, parent_head, n - 1)
        emit(
            "FRK002",
            f"the fork seed ends at seq {n - 1} ({last[0] if last else 'nothing'}), not on a closed turn"
            + (f" (the parent's line {parent_at[1]} in {parent_at[0]})" if parent_at else ""),
            seq=n - 1,
            **at,
            detail=({"parent_file": parent_at[0], "parent_line": parent_at[1]} if parent_at else {}),
        )
    if parent_head is None or parent is None:  # no parent log, or it could not be read
        return
    if _same_text([ev for ev, _ in child_head], [ev for ev, _ in parent_head]):
        return  # the usual fork: a faithful copy, no field to walk
    fields = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs")
    for (a, a_line), (b, b_line) in zip(child_head, parent_head):
        for name, x, y in zip(fields, a, b):
            path = first_difference(x, y, name)
            if path is not None:
                emit(
                    "FRK001",
                    f"seed event seq {a[1]} differs from the parent's at {path} "
                    f"(the parent's line {b_line} in {parent.source.display})",
                    seq=a[1],
                    path=path,
                    detail={
                        "parent_file": parent.source.display,
                        "parent_line": b_line,
                        "child": shorten(x, 200),
                        "parent": shorten(y, 200),
                    },
                    **{**where, "line": a_line},
                )
                return


def copied_seed(child: ForkSide, parent: ForkSide, n: int) -> bool:
    """Whether the child's seed is a faithful copy ending on a closed turn, decided from bytes: both logs
    plain files whose first line is a session header, the child's next ``n`` lines each one event as the
    reader's plain path takes it (seqs 0 to n-1, the last a ``turn/end``), and the parent's next ``n``
    lines the same bytes.  The reader makes the same events of the same body bytes after a header, so
    both heads are then equal, as :func:`check_fork_sides` would find them field by field; False means
    only that the heads are read and compared."""
    child_lines = _head_lines(child.source, n)
    if child_lines is None:
        return False
    parent_lines = _head_lines(parent.source, n)
    if parent_lines is None or parent_lines[1:] != child_lines[1:]:
        return False
    last = None
    for seq, line in enumerate(child_lines[1:]):
        last = plain_envelope(line, seq)  # as the reader takes a line on its plain path
        if last is None:
            return False
    return last is not None and last["type"] == "turn/end"


def _head_lines(source: LogSource, n: int) -> list[bytes] | None:
    """The first ``n + 1`` lines of a plain log file (a session header, then ``n`` complete lines), or
    None: a compressed log, a database session, a URL, fewer lines or a first line that is not a header."""
    path = source.path
    if source.member is not None or isinstance(path, UrlPath) or not path.name.endswith(".jsonl"):
        return None
    lines = []
    try:
        with open_readonly(path, -1) as fh:
            for line in islice(fh, n + 1):
                if not line.endswith(b"\n") or len(line) > DEFAULT_MAX_LINE:
                    return None
                lines.append(line[:-1])
    except OSError:
        return None
    if len(lines) < n + 1:
        return None
    header, err = parse_json(lines[0])
    return lines if err is None and header_problem(header) is None else None


def _same_text(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` encode to the same JSON text, which no :func:`first_difference` tells apart;
    False when orjson cannot encode them (the walk then decides)."""
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except (TypeError, orjson.JSONEncodeError):
        return False


def _parent_head(
    child: ForkSide, parent: ForkSide | None, n: int, where: dict, emit: Callable[..., None]
) -> list[tuple[tuple, int]] | None:
    """The parent's first ``n`` events, or None after saying why they cannot be compared."""
    if parent is None:
        emit(
            "FRK003",
            f"parent session {shorten(child.parent_session, 60)} is not among the checked logs, nor beside the child "
            "or under the same root; the seed was not compared",
            **where,
        )
        return None
    if parent.events is not None and n > parent.events:
        emit(
            "FRK004",
            f"seedLength {n} exceeds the {parent.events} events of the parent log {parent.source.display}",
            **where,
        )
        return None
    parent_head = _head(parent.source, n)
    if len(parent_head) < n:
        emit(
            "FRK004",
            f"seedLength {n} exceeds the {len(parent_head)} events of the parent log {parent.source.display}",
            **where,
        )
        return None
    return parent_head


def _parent_line(parent: ForkSide | None, head: list | None, index: int) -> tuple[str, int] | None:
    if parent is None or not head or index >= len(head):
        return None
    return parent.source.display, head[index][1]
