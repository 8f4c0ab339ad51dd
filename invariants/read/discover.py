"""Find session logs under the paths a user names.

A path may be one log file, a folder of logs, a harness sessions root in
either layout (``cwd-<hash12>/<id>.jsonl`` or ``--<project>--/<id>/session.jsonl[.zstd]``),
or a SQLite session database (``.sqlite``/``.db``, local only), read like a sessions root:
every session in it is one :class:`LogSource` (``member`` = its id).
Capture files (``requests.jsonl``...) sit beside logs and are not logs.
Symlinks inside a folder are not followed, so a link loop in a root cannot hang us; one named like
a log, a capture or a database is a note, as a pipe or a device is.
A URL names the same things in object storage or any fsspec filesystem.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Container, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from invariants.model import scratch
from invariants.read.source import (
    SQLITE_SUFFIXES,
    LogPath,
    LogSource,
    UrlError,
    UrlPath,
    capture_candidates,
    captures_present,
    is_capture_name,
    is_log_name,
    is_url,
)


def discover(
    paths: Iterable[str | os.PathLike | UrlPath], notes: list[str] | None = None
) -> tuple[list[LogSource], list[str]]:
    """Logs under ``paths`` in a stable order, and sentences for paths that are unusable.

    A path that is a URL (``memory://``, ``file://``, ``s3://``...) is listed through fsspec
    (:func:`_discover_url`); any other is a local path.  Only regular files are ever opened: a FIFO,
    socket or device named like a log would block or never end.  Named on the command line it is a
    problem; inside a folder it is skipped, with a sentence appended to ``notes`` when given.
    """
    problems: list[str] = []
    return list(iter_discover(paths, problems, notes)), problems


def iter_discover(
    paths: Iterable[str | os.PathLike | UrlPath], problems: list[str], notes: list[str] | None = None
) -> Iterator[LogSource]:
    """:func:`discover` as a stream: the logs as the walk reaches them (a sessions root of a million
    logs is never a list), the sentences for unusable paths appended to ``problems`` as they are met.

    Logs named twice (overlapping paths) are yielded once; when no named path is, or holds, another
    (:func:`disjoint`: one path, or ``logs/*``) nothing can overlap, so no set of every log is kept."""
    named = list(paths)
    seen: set | None = None if disjoint(named) else set()
    for raw in named:
        if isinstance(raw, UrlPath) or is_url(raw):
            yield from _discover_url(seen, problems, UrlPath.of(str(raw)), notes)
            continue
        p = Path(raw)
        try:
            st = p.stat()
        except RuntimeError:  # a symlink loop, on Pythons whose stat() raises it
            problems.append(f"{p}: symlink loop")
            continue
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                problems.append(f"{p}: symlink loop")
            elif isinstance(exc, FileNotFoundError):
                problems.append(f"{p}: no such file or directory")
            else:
                problems.append(f"{p}: cannot read ({exc.strerror or exc})")
            continue
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            problems.append(f"{p}: {special_kind(st.st_mode)}, not a regular file or directory; not read")
            continue
        if p.is_file():
            problem = _named_file_problem(p)
            if problem is not None:
                problems.append(problem)
            elif p.name.endswith(SQLITE_SUFFIXES):
                yield from _database(seen, problems, p, p.parent, explicit=True)
            else:
                _skipped_beside(notes, p)
                yield from _new(seen, LogSource(p, p.parent))
            continue
        if not p.is_dir():
            problems.append(f"{p}: not a regular file or directory")
            continue
        top, real = str(p), str(p.resolve())
        for folder, name, kind, beside in _walk_files(top):
            fp = Path(folder, name)
            if kind != REGULAR:
                _skipped(notes, fp, kind)
                continue
            if is_log_name(name):
                # links are never followed, so a file's real path is the named folder's plus its place under it
                key = os.path.join(real + folder[len(top) :], name) if seen is not None else None
                yield from _new(seen, LogSource(fp, p, beside=beside), key)
            elif name.endswith(SQLITE_SUFFIXES):
                yield from _database(seen, problems, fp, p, explicit=False, notes=notes)


def disjoint(paths: Sequence[str | os.PathLike | UrlPath]) -> bool:
    """Whether no path is, or holds, another, links resolved, so walking each finds a log at most once
    (walks never follow links).  Only local paths are told apart: two URLs may name one object."""
    if len(paths) < 2:
        return True
    reals = []
    for p in paths:
        if isinstance(p, UrlPath) or is_url(p):
            return False
        reals.append(os.path.join(os.path.realpath(p), ""))
    reals.sort()  # what a folder holds sorts right after it
    return not any(b.startswith(a) for a, b in zip(reals, reals[1:]))


def special_kind(mode: int) -> str:
    """What a file that is neither regular nor a folder is, in a word or two."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _named_file_problem(p: LogPath) -> str | None:
    """Why a file the user named is not a log (None: it is a log or a database)."""
    if is_capture_name(p.name):
        return f"{p}: this is a recorded-request capture, not a session log (pass it with --captures)"
    if p.name.endswith(SQLITE_SUFFIXES) or is_log_name(p.name):
        return None
    return f"{p}: not a session log (expected .jsonl, .jsonl.zstd or .jsonl.zst)"


def _discover_url(
    seen: set | None, problems: list[str], url: UrlPath, notes: list[str] | None = None
) -> Iterator[LogSource]:
    """The logs of one URL as the walk reaches them, in the order a local folder gives (a folder's
    files sorted, then its folders depth first): a bucket of a million sessions is never a list.  A
    SQLite database is read from local paths only: a URL one is a problem sentence, never skipped
    quietly, so a listing cannot silently give a shorter run."""
    try:
        kind = url.info().get("type")
    except UrlError as exc:
        problems.append(str(exc))
        return
    if kind == "file":
        problem = _named_file_problem(url)
        if problem is not None:
            problems.append(problem)
        elif url.name.endswith(SQLITE_SUFFIXES):
            problems.append(f"{url}: SQLite session databases are read from local paths only")
        else:
            yield from _new(seen, LogSource(url, url.parent), str(url))
        return
    if kind != "directory":
        problems.append(f"{url}: not a regular file or directory")
        return
    for fp, kind in _walk_url(url):
        if kind != REGULAR:
            _skipped(notes, fp, kind)
            continue
        if is_log_name(fp.name):
            yield from _new(seen, LogSource(fp, url), str(fp))
        elif fp.name.endswith(SQLITE_SUFFIXES):
            problems.append(f"{fp}: SQLite session databases are read from local paths only")


def _skipped(notes: list[str] | None, path: LogPath, kind: str) -> None:
    """Say that ``path``, of ``kind`` (not :data:`REGULAR`), is not read, when its name is one we read."""
    name = path.name
    if notes is not None and (is_log_name(name) or is_capture_name(name) or name.endswith(SQLITE_SUFFIXES)):
        notes.append(f"{path}: {kind}; skipped")


def _skipped_beside(notes: list[str] | None, log: Path) -> None:
    """Say which of the capture names beside a log named on the command line are there but not read (a
    link, a pipe), as a walk of its folder says (the capture is looked up when the log is checked,
    which passes over them without a word)."""
    if notes is None:
        return
    for name in capture_candidates(log.name):
        try:
            mode = os.lstat(log.parent / name).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            _skipped(notes, log.parent / name, LINK if stat.S_ISLNK(mode) else SPECIAL)


def _walk_url(top: UrlPath) -> Iterator[tuple[UrlPath, str]]:
    """(path, kind) of every entry under ``top`` that is not a folder (nor a link to one), in
    :func:`_walk_files` order, ``kind`` as there; one listing per folder.  A ``file://`` folder can
    hold a pipe (fsspec's type ``other``), which must never be opened: taken for a file, one named
    like a log hung the check."""
    return _depth_first(top, _listed_url, lambda folder, name: folder / name)


def _listed_url(folder: UrlPath) -> tuple[Iterator[tuple[UrlPath, str]], list[str]]:
    files: list[tuple[str, str]] = []
    dirs: list[str] = []  # names only while the walk is below: a listing's entries are dicts of a dozen fields
    for name, info in sorted(folder.children().items()):
        kind = info.get("type")
        if kind == "directory":
            if not info.get("islink"):
                dirs.append(name)
        else:
            files.append((name, LINK if info.get("islink") else REGULAR if kind == "file" else SPECIAL))
    return ((folder / name, kind) for name, kind in files), dirs


F = TypeVar("F")
R = TypeVar("R")


def _depth_first(
    top: F, listed: Callable[[F], tuple[Iterator[R], Iterable[str]]], below: Callable[[F, str], F]
) -> Iterator[R]:
    """What ``listed`` gives for ``top`` and for every folder under it (its items, and its folders'
    names in order), in the order of a recursive walk: a folder's items, then each of its folders
    depth first.  Without recursion: a root nested deeper than Python's recursion limit (a thousand
    folders) ended the walk in a ``RecursionError``."""
    pending: list[tuple[F, Iterator[str]]] = []  # each open folder, and the names of its folders still to walk
    folder = top
    while True:
        items, dirs = listed(folder)
        yield from items
        pending.append((folder, iter(dirs)))
        while pending:
            parent, rest = pending[-1]
            name = next(rest, None)
            if name is not None:
                folder = below(parent, name)
                break
            pending.pop()
        else:
            return


REGULAR = "a regular file"
DIR = "a folder"
SPECIAL = "not a regular file"  # a FIFO, socket or device: opening it could block or never end
LINK = "a symbolic link, not followed"


def _walk_files(top: str) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
    """(folder, name, kind, beside) of every entry under ``top`` that is not a folder (nor a link to
    one), in the order of ``os.walk`` with sorted names (a folder's files, then its folders depth
    first); ``kind`` is :data:`REGULAR`, :data:`SPECIAL` (never to be opened) or :data:`LINK` (never
    followed); ``beside``, for a log to read, is the capture names its folder holds for it (from the
    folder's own listing, so no one lists it again to look a capture up), else ().  An unreadable
    folder is skipped.  One ``scandir`` per folder and no call per file (the
    entry type comes with the listing): discovery is serial work before any worker starts."""
    return _depth_first(top, _listed_folder, os.path.join)


SPILL = 10_000
"""Entries of a folder the walk sorts and looks up in memory; a larger one, in a scratch database."""


def _listed_folder(folder: str) -> tuple[Iterator[tuple[str, str, str, tuple[str, ...]]], Iterable[str]]:
    # Only names are kept, and no entry outlives its turn of the listing: an entry holds its name and
    # its whole path, so a flat folder of 100,000 sessions listed as entries took 49 MB at once, and
    # as names 13-17 MB: past SPILL entries they are sorted and looked up on disk.
    listing = _Listing()
    try:
        with os.scandir(folder) as it:
            for e in it:
                try:
                    if e.is_dir():
                        kind = "" if e.is_symlink() else DIR
                    else:
                        kind = LINK if e.is_symlink() else REGULAR if e.is_file(follow_symlinks=False) else SPECIAL
                except OSError:
                    kind = ""  # (listed, but neither walked nor read)
                listing.add(e.name, kind)
    except OSError:
        return iter(()), []
    return ((folder, name, kind, beside) for name, kind, beside in listing.files()), listing.dirs()


class _Listing:
    """The names of one folder and what each is: a dictionary up to :data:`SPILL` entries, then a
    private scratch database (sorted by its index, asked by name)."""

    __slots__ = ("_kinds", "_spilled")

    def __init__(self) -> None:
        self._kinds: dict[str, str] = {}
        self._spilled: scratch.SpillTable | None = None

    def add(self, name: str, kind: str) -> None:
        if self._spilled is not None:
            self._spilled.append((scratch.key(name), kind))
            return
        self._kinds[name] = kind
        if len(self._kinds) > SPILL:
            self._spilled = scratch.SpillTable(
                "CREATE TABLE entry (name BLOB PRIMARY KEY, kind TEXT) WITHOUT ROWID",
                "INSERT INTO entry VALUES (?, ?)",
                ((scratch.key(n), k) for n, k in self._kinds.items()),
            )
            self._kinds = {}

    def files(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """(name, kind, the capture names beside it if it is a log) of each entry not a folder, by name."""
        if self._spilled is None:
            kinds = self._kinds
            files = sorted((n, k) for n, k in kinds.items() if k and k != DIR)
            return ((n, k, _beside(n, k, kinds)) for n, k in files)
        rows = self._spilled.query("SELECT name, kind FROM entry WHERE kind NOT IN ('', ?) ORDER BY name", (DIR,))
        return self._looked_up(self._spilled, ((scratch.text(n), k) for n, k in rows))

    @staticmethod
    def _looked_up(
        spilled: scratch.SpillTable, rows: Iterator[tuple[str, str]]
    ) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """Each file with what is beside it, the captures of 128 files asked in one query."""
        while chunk := list(islice(rows, 128)):
            wanted = sorted({c for n, k in chunk if _is_log(n, k) for c in capture_candidates(n)})
            present: set[str] = set()
            if wanted:  # (at most 768 names: within any SQLite's limit of 999 parameters)
                marks = ", ".join("?" * len(wanted))
                found = spilled.query(
                    f"SELECT name FROM entry WHERE name IN ({marks})", [scratch.key(n) for n in wanted]
                )
                present = {scratch.text(n) for (n,) in found}
            for n, k in chunk:
                yield n, k, _beside(n, k, present)

    def dirs(self) -> Iterable[str]:
        """The names of its folders (not links to one), sorted."""
        if self._spilled is None:
            return sorted(n for n, k in self._kinds.items() if k == DIR)
        rows = self._spilled.query("SELECT name FROM entry WHERE kind = ? ORDER BY name", (DIR,))
        return (scratch.text(n) for (n,) in rows)


def _is_log(name: str, kind: str) -> bool:
    return kind == REGULAR and is_log_name(name)


def _beside(name: str, kind: str, listing: Container[str]) -> tuple[str, ...]:
    """The capture names ``listing`` holds beside ``name`` when it is a log to read, else none."""
    return captures_present(name, listing) if _is_log(name, kind) else ()


def _new(seen: set | None, src: LogSource, real: str | None = None) -> Iterator[LogSource]:
    """``src`` unless already yielded (``seen`` None: nothing can repeat)."""
    if seen is None:
        yield src
        return
    key = (real if real is not None else str(src.path.resolve()), src.member)
    if key not in seen:
        seen.add(key)
        yield src


def _database(
    seen: set | None,
    problems: list[str],
    path: Path,
    root: Path,
    explicit: bool,
    notes: list[str] | None = None,
) -> Iterator[LogSource]:
    """Every session of a harness SQLite database (read-only).

    Named on the command line, anything but a readable session store is a problem.  Inside a folder,
    another tool's database (readable SQLite without the harness tables) or a file that is not SQLite
    at all is skipped with a note; a SQLite file that cannot be read (a damaged store) is a problem
    wherever it was found, so a folder's damaged store never passes the gate unseen."""
    from invariants.read.sqlite_backend import ForeignDatabase, NotASessionDatabase, list_sessions

    try:
        members = list_sessions(path, root)
    except (NotASessionDatabase, OSError) as exc:
        message = f"{path}: not a harness session database ({exc})" if isinstance(exc, OSError) else str(exc)
        if explicit or (not isinstance(exc, ForeignDatabase) and _has_sqlite_magic(path)):
            problems.append(message if explicit else f"{message}; a damaged session store is never skipped")
        elif notes is not None:
            notes.append(f"{message}; skipped")
        return
    for src in members:
        yield from _new(seen, src)


def _has_sqlite_magic(path: Path) -> bool:
    """The file begins as every SQLite database does (so a failure to read it is damage, not a foreign file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
