"""A cache of per-folder check results, so an unchanged corpus re-checks fast.

An entry is keyed by everything its result depends on:

* each log's and capture's revision: absolute path, size, ``mtime_ns``, inode;
* the names of the files in the folder (a capture line is only reported
  as unexplained when no log for its session sits beside it);
* the tool: its version plus the size and ``mtime_ns`` of every module of
  the ``invariants`` package (so an edited checker never serves stale
  results);
* the options that change results: forced profile, line limit, explicit
  capture files (with their revisions).

Selection, ignores, severity overrides, baselines and formats are applied
after the cache, so changing them never needs a re-parse.  A hit reads its
entry from one SQLite pack per set of input paths and parses no log.
Entries are JSON (never pickle: the cache directory is just a folder in the
working tree) written in SQLite transactions; an unreadable or mismatching
entry is a miss.  The directory gets a ``CACHEDIR.TAG`` and a ``.gitignore``
of ``*``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from invariants.gate.spool import dump_item, load_item
from invariants.model.atomic import write_atomic
from invariants.read.source import UrlPath, is_url, journal_of

DEFAULT_CACHE_DIR = ".inspector_cache"
_FORMAT = 2  # 2: SQLite packs

_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory is a cache of inspector check results.\n"


def _sha256(data: bytes) -> str:
    import hashlib  # deferred: a run with --no-cache hashes nothing

    return hashlib.sha256(data).hexdigest()


def revision(path: str | os.PathLike | UrlPath) -> list | None:
    """``[absolute path, size, mtime_ns, inode]``, or None when it cannot be stat'ed.

    For a URL: ``[url, size, mtime_ns, digest of the ETag]`` from one ``info`` call.
    """
    if isinstance(path, UrlPath) or is_url(path):
        url = path if isinstance(path, UrlPath) else UrlPath.of(str(path))
        try:
            ust = url.stat()
        except OSError:
            return None
        if not ust.st_mtime_ns and not ust.st_ino:  # the backend says neither when nor which version: never cached
            return None
        return [url.url, ust.st_size, ust.st_mtime_ns, ust.st_ino]
    try:
        p = os.fspath(path)
        st = os.stat(p)
        return [os.path.abspath(p), st.st_size, st.st_mtime_ns, st.st_ino]
    except OSError:
        return None


class Digest:
    """A SHA-256 of a sequence of JSON values, fed one at a time: a key over every log of a large
    folder without holding them all."""

    def __init__(self) -> None:
        import hashlib

        self._h = hashlib.sha256()

    def add(self, value: Any) -> None:
        item = dump_item(value)
        self._h.update(len(item).to_bytes(8, "little"))  # (so no two sequences feed the same bytes)
        self._h.update(item)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


_TOOL_KEY: str | None = None


def tool_key() -> str:
    """The tool's version plus a fingerprint of the library's source files."""
    global _TOOL_KEY
    if _TOOL_KEY is None:
        from invariants.model.version import __version__

        root = Path(__file__).resolve().parent
        parts: list[Any] = [__version__, _FORMAT]
        for p in sorted(root.rglob("*.py")):
            try:
                st = p.stat()
            except OSError:
                continue
            parts.append([p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns])
        _TOOL_KEY = _sha256(json.dumps(parts).encode())[:20]
    return _TOOL_KEY


_COMMIT_EVERY = 1000  # writes a transaction holds at most


def _open_pack(path: Path) -> sqlite3.Connection | None:
    """The pack at ``path``, created if absent; None when it cannot be opened or is not a pack of ours.

    A link at ``path`` or at its journal's is never written through: it is removed and the pack made
    anew (the cache's folder is the tool's own).  A pack SQLite cannot read is made anew as well.  The
    connection may be used from another thread than this one (a TUI's worker), one at a time."""
    journal = journal_of(path)
    for attempt in range(2):
        try:
            if journal.is_symlink():
                journal.unlink()
            if path.is_symlink() or (attempt and path.exists()):
                path.unlink()
            con = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
        except (OSError, sqlite3.Error):
            return None
        try:
            con.execute("CREATE TABLE IF NOT EXISTS entries (slot TEXT PRIMARY KEY, key BLOB, value BLOB)")
            con.execute("CREATE TEMP TABLE used (slot TEXT PRIMARY KEY)")
            return con
        except sqlite3.DatabaseError:
            con.close()
    return None


class ResultCache:
    """Entries of one *scope* (the set of paths a command names) live in one
    SQLite pack, read an entry at a time: a run holds the entry it is
    looking at, not the pack (one JSON pack held whole grew the client by
    ~4 KB a session: 65 -> 418 MB from 10,000 to 100,000).  A run keeps the
    entries it used and drops the rest when it ends, so a pack never
    outgrows its corpus; a run that only read writes nothing.
    """

    def __init__(self, directory: str | os.PathLike = DEFAULT_CACHE_DIR) -> None:
        self.root = Path(directory)
        self.dir = self.root / tool_key()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self._scope: str = "default"
        self._con: sqlite3.Connection | None = None
        self._opened = False  # this scope's pack was opened (or found unusable)
        self._dirty = False  # an entry was put since the last flush
        self._pending = 0  # statements since the last commit
        self.failed: str | None = None  # why the pack stopped being used mid-run (a full disk), for a note

    def open_scope(self, scope: Any) -> None:
        """Select the pack for ``scope`` (any JSON value, e.g. the resolved input paths)."""
        self.close()
        self._scope = _sha256(dump_item(scope))[:32]

    def _pack(self) -> Path:
        return self.dir / f"pack-{self._scope}.sqlite"

    def _db(self) -> sqlite3.Connection | None:
        """This scope's pack, opened on first use; None when it cannot be (then every lookup misses)."""
        if not self._opened:
            self._opened = True
            try:
                self._prepare()
            except OSError:
                return None
            self._con = _open_pack(self._pack())
        return self._con

    @staticmethod
    def _slot(kind: str, identity: Any) -> str:
        return kind + ":" + _sha256(dump_item(identity))[:32]

    def get(self, kind: str, identity: Any, key: Any) -> Any | None:
        slot = self._slot(kind, identity)
        row = self._run("SELECT key, value FROM entries WHERE slot = ?", (slot,), fetch=True)
        try:
            if row is None or (row[0] != (wanted := dump_item(key)) and load_item(row[0]) != load_item(wanted)):
                raise ValueError("no such entry")
            value = load_item(row[1])
        except (ValueError, TypeError):  # absent, another key, or not JSON: a miss
            self.misses += 1
            return None
        self.hits += 1
        self._run("INSERT OR IGNORE INTO temp.used VALUES (?)", (slot,))
        return value

    def put(self, kind: str, identity: Any, key: Any, value: Any) -> None:
        slot = self._slot(kind, identity)
        self._dirty = True
        self._run("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", (slot, dump_item(key), dump_item(value)))
        self._run("INSERT OR IGNORE INTO temp.used VALUES (?)", (slot,))

    def _run(self, sql: str, args: tuple, fetch: bool = False) -> Any:
        """One statement on the pack (a write commits every ``_COMMIT_EVERY``); an error costs the cache,
        never the run: the pack is closed and every later lookup misses."""
        con = self._db()
        if con is None:
            return None
        try:
            if fetch:
                return con.execute(sql, args).fetchone()
            if not con.in_transaction:
                con.execute("BEGIN")
            con.execute(sql, args)
            self._pending += 1
            if self._pending >= _COMMIT_EVERY:
                con.commit()
                self._pending = 0
        except sqlite3.Error as exc:
            self._drop(exc)
        return None

    def flush(self) -> None:
        """End the run: drop the entries it did not use, if any, and commit (errors cost speed, never
        correctness).  What the run used is known until the scope is closed (:meth:`open_scope`)."""
        con = self._con
        if con is None:
            return
        try:
            (unused,) = con.execute("SELECT count(*) FROM entries WHERE slot NOT IN temp.used").fetchone()
            if unused:
                if not con.in_transaction:
                    con.execute("BEGIN")
                con.execute("DELETE FROM entries WHERE slot NOT IN temp.used")
            changed = self._dirty or unused > 0
            con.commit()
            self._pending, self._dirty = 0, False
            self.writes += changed
        except sqlite3.Error as exc:
            self._drop(exc)

    def close(self) -> None:
        """Flush and close this scope's pack (a new scope, or the end of the process)."""
        self.flush()
        if self._con is not None:
            self._con.close()
        self._con, self._opened = None, False

    def _drop(self, exc: sqlite3.Error) -> None:
        self.failed = self.failed or f"{self._pack()}: {exc}"
        if self._con is not None:
            with contextlib.suppress(sqlite3.Error):
                self._con.close()
        self._con = None

    def unwritable(self) -> str | None:
        """Why this cache cannot be written (creating its folder now), or None.  A run asks first:
        a cache the user cannot write is a usage error, not a silent slowdown."""
        try:
            self._prepare()
        except OSError as exc:
            return (
                f"{self.root}: cannot write the result cache ({exc.strerror or exc}); use --no-cache or --cache-dir DIR"
            )
        return None

    def _prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            write_atomic(tag, _TAG)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            write_atomic(ignore, "# Created by inspector check; safe to delete.\n*\n")
