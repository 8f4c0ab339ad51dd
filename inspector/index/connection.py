"""Opening the index for writing: the schema check, the pragmas, the one-writer lock."""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import sqlite3
import tempfile
from pathlib import Path

import sqlite_utils

from invariants.read.source import SQLITE_SIDECARS, journal_of
from invariants.read.sqlite_rollback import rolled_back_copy

from .schema import SCHEMA_VERSION, create_schema


class IndexBuildError(RuntimeError):
    """The database cannot be used as an index (not ours, wrong version, locked)."""


def is_index(db_path: str | os.PathLike) -> bool:
    """Whether ``db_path`` is an index this tool wrote (so --rebuild may delete it).

    A write cut off in rollback-journal mode leaves a hot ``-journal`` that a read-only connection
    cannot roll back, and reading the file without it can see half a transaction; such a database is
    judged on a private copy that SQLite rolls back, so the file itself is never written.  A copy
    that cannot be made (a full disk) is an :class:`IndexBuildError`: whose file it is is not known.
    """
    path = Path(db_path).resolve()
    try:
        return _has_schema_version(f"{path.as_uri()}?mode=ro")
    except sqlite3.Error:
        journal = journal_of(path)
        if not journal.is_file():
            return False
    try:
        with tempfile.TemporaryDirectory(prefix="inspector-index-") as tmp:
            try:
                return _has_schema_version(rolled_back_copy(path, Path(tmp)).as_uri())
            except sqlite3.Error:
                return False
    except OSError as exc:
        raise IndexBuildError(
            f"{db_path}: a write to it was cut off, and copying it to roll its journal back failed ({exc}); "
            "`inspector index` without --rebuild rolls it back in place"
        ) from None


def _has_schema_version(uri: str) -> bool:
    conn = sqlite3.connect(uri, uri=True)
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() is not None
    finally:
        conn.close()


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid the INSERT just run on ``cur`` gave its row (``lastrowid`` is None only before any insert)."""
    rowid = cur.lastrowid
    if rowid is None:
        raise sqlite3.InterfaceError("the statement inserted no row")
    return rowid


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utf8(value):
    if type(value) is str and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")  # each lone surrogate becomes "?"
    return value


def _utf8_params(params):
    if isinstance(params, dict):
        return {k: _utf8(v) for k, v in params.items()}
    return tuple(map(_utf8, params))


class Utf8Connection(sqlite3.Connection):
    """Binds every string as valid UTF-8.  Text from a log may hold a lone surrogate (JSON
    allows ``"\\ud800"``) and a path undecodable bytes (``os.fsdecode`` turns them into
    surrogates); SQLite would refuse the whole batch, so such a character is stored as ``?``."""

    def execute(self, sql, parameters=(), /):
        return super().execute(sql, _utf8_params(parameters))

    def executemany(self, sql, seq_of_parameters, /):
        return super().executemany(sql, map(_utf8_params, seq_of_parameters))


def connect(db_path: str | os.PathLike) -> sqlite_utils.Database:
    """A writable connection in WAL mode, autocommit (we issue BEGIN/COMMIT ourselves)."""
    conn = sqlite3.connect(str(db_path), isolation_level=None, timeout=30, factory=Utf8Connection)
    _pragmas(conn)
    return sqlite_utils.Database(conn)


def _pragmas(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-65536")


def open_index(db_path: str | os.PathLike) -> sqlite_utils.Database:
    """Open (creating when new) an index database and check its schema version.

    A file that is not ours is refused before anything is written to it
    (not even the switch to WAL mode).
    """
    conn = sqlite3.connect(str(db_path), isolation_level=None, timeout=30, factory=Utf8Connection)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        version = (
            conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if "meta" in names else None
        )
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise IndexBuildError(f"{db_path}: not an SQLite database ({exc}); refusing to write to it") from None
    if names and version is None:
        conn.close()
        raise IndexBuildError(
            f"{db_path}: this database has tables but is not an inspector index; refusing to write to it"
        )
    if version is not None and version[0] != str(SCHEMA_VERSION):
        conn.close()
        raise IndexBuildError(
            f"{db_path}: index schema version {version[0]} is not {SCHEMA_VERSION}; "
            "rebuild it with `inspector index --rebuild`"
        )
    _pragmas(conn)
    db = sqlite_utils.Database(conn)
    create_schema(db)  # a new database whole; an older one of this version gains the indexes added since
    if not names:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('created_at', ?)", [now_iso()])
    return db


class _Lock:
    """One writer at a time: an advisory ``flock`` on the database file.

    SQLite's own locks are POSIX record locks, which ``flock`` does not touch,
    so readers (the TUI, ``inspector query``) are never blocked by it.  Taken
    before any write, so it is also where a link is refused: the database (or a
    file SQLite writes beside it) being a symlink, the index would be written
    through it, somewhere else.
    """

    def __init__(self, path: str) -> None:
        for name in (path, *(path + s for s in SQLITE_SIDECARS)):
            if os.path.islink(name):
                raise IndexBuildError(f"{name}: is a symlink; refusing to write through it")
        # O_NOFOLLOW: a link planted since is refused too (ELOOP: "cannot write the index")
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)  # an empty file is an empty database
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise IndexBuildError(
                f"{path}: another `inspector index` is writing this index; try again when it has finished"
            ) from None

    def release(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)


def _cannot_write(db_path: str, exc: BaseException) -> str:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{db_path}: cannot write the index ({reason})"
