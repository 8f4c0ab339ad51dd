"""Read-only access to an index: the session list and ad-hoc SQL.

Readers never take a write lock: the file is opened with ``mode=ro``,
``PRAGMA query_only`` is on, and an authorizer refuses every action that is
not a read (writes, DDL, ATTACH, PRAGMA, transactions).  In WAL mode such a
reader also never blocks the indexer, nor is blocked by it.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import quote

from invariants.read.source import UrlPath, absolute_name, journal_of, log_path

from .schema import SCHEMA_VERSION


class QueryError(Exception):
    """A query the read-only connection refused or could not run."""


_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}


# Pragmas that only report (FTS5 itself asks for data_version); any other is refused.
_READ_PRAGMAS = frozenset(
    {
        "data_version",
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
        "schema_version",
        "user_version",
        "page_count",
        "page_size",
        "freelist_count",
        "encoding",
    }
)


def _authorizer(action: int, arg1: Any, arg2: Any, dbname: Any, source: Any) -> int:
    if action in _ALLOWED:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master" and source is None and dbname == "main":
        # FTS5's constructor re-reads its schema this way; the write itself is impossible
        # on this connection (mode=ro, query_only), the authorizer is the second fence.
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and isinstance(arg1, str) and arg1.lower() in _READ_PRAGMAS:
        if arg1.lower() not in ("schema_version", "user_version") or arg2 is None:
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def open_readonly(db_path: str | os.PathLike, timeout: float | None = None) -> sqlite3.Connection:
    """A connection that can only read ``db_path`` (which must exist)."""
    path = Path(db_path)
    if not path.is_file():
        raise QueryError(f"{db_path}: no index here (build one with `inspector index PATH`)")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        if journal_of(path).is_file():
            raise QueryError(
                f"{db_path}: a write to it was cut off, and its journal ({path.name}-journal) must be rolled"
                " back before it can be read; a read-only open cannot, the next `inspector index` run does"
            ) from None
        raise QueryError(f"{db_path}: cannot open the index read-only ({exc})") from None
    conn.set_authorizer(_authorizer)
    if timeout:
        deadline = time.monotonic() + timeout
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    return conn


def run_query(
    db_path: str | os.PathLike,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any] = (),
    *,
    limit: int | None = None,
    timeout: float | None = 60.0,
) -> tuple[list[str], list[tuple], bool]:
    """Run one read-only statement: (column names, rows, truncated)."""
    conn = open_readonly(db_path, timeout)
    try:
        try:
            cur = conn.execute(sql, params)
        except (sqlite3.DatabaseError, sqlite3.Warning, ValueError) as exc:
            raise QueryError(_explain(exc)) from None
        cols = [d[0] for d in cur.description or []]
        try:
            if limit is None:
                return cols, cur.fetchall(), False
            rows = cur.fetchmany(limit + 1)
        except sqlite3.DatabaseError as exc:
            raise QueryError(_explain(exc)) from None
        return cols, rows[:limit], len(rows) > limit
    finally:
        conn.close()


@contextmanager
def stream_query(
    db_path: str | os.PathLike,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any] = (),
    *,
    timeout: float | None = 60.0,
) -> Iterator[tuple[list[str], Iterator[tuple]]]:
    """Run one read-only statement: its column names and its rows as they come (a batch at a time, never
    all held), for output without a row limit; the connection closes when the block ends."""
    conn = open_readonly(db_path, timeout)
    try:
        try:
            cur = conn.execute(sql, params)
        except (sqlite3.DatabaseError, sqlite3.Warning, ValueError) as exc:
            raise QueryError(_explain(exc)) from None

        def rows() -> Iterator[tuple]:
            while True:
                try:
                    batch = cur.fetchmany(512)
                except sqlite3.DatabaseError as exc:
                    raise QueryError(_explain(exc)) from None
                if not batch:
                    return
                yield from batch

        yield [d[0] for d in cur.description or []], rows()
    finally:
        conn.close()


def _explain(exc: BaseException) -> str:
    text = str(exc)
    if "not authorized" in text or "readonly" in text.lower() or "query_only" in text:
        return f"refused: the index is read-only here; only SELECT (and WITH ... SELECT) statements run ({text})"
    if "interrupted" in text:
        return "query interrupted: it ran past the time limit"
    return text


def index_info(db_path: str | os.PathLike) -> dict[str, Any] | None:
    """Schema version, last run and counts, or None when ``db_path`` is not an index."""
    try:
        conn = open_readonly(db_path)
    except QueryError:
        return None
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        last = conn.execute(
            "SELECT id, started_at, finished_at, status, paths FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        count = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()
    if meta.get("schema_version") != str(SCHEMA_VERSION):
        return None
    return {
        "meta": meta,
        "sessions": count,
        "last_run": dict(zip(("id", "started_at", "finished_at", "status", "paths"), last)) if last else None,
    }


def covers(db_path: str | os.PathLike, path: str | os.PathLike | UrlPath) -> bool:
    """True when the index holds sessions under ``path`` (so a session list can come from it)."""
    target = absolute_name(log_path(path if isinstance(path, (str, UrlPath)) else os.fspath(path)))
    prefix = target.rstrip("/") + "/"
    try:
        conn = open_readonly(db_path)
    except QueryError:
        return False
    try:
        row = conn.execute(
            "SELECT 1 FROM sessions WHERE path = ? OR substr(path, 1, ?) = ? LIMIT 1", [target, len(prefix), prefix]
        ).fetchone()
        return row is not None
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


SESSION_FIELDS = (
    "id",
    "uid",
    "path",
    "file",
    "member",
    "root",
    "cwd",
    "created_at",
    "created",
    "parent_session",
    "parent_id",
    "parent_uid",
    "seed_length",
    "era",
    "profile",
    "events",
    "turns",
    "steps",
    "instances",
    "resumes",
    "forks",
    "requests",
    "errors",
    "warnings",
    "infos",
    "worst",
    "size",
    "mtime_ns",
    "inode",
    "compressed",
    "torn",
    "open_turn_at_end",
    "indexed_at",
)
_COMPUTED = {
    "parent_uid": "p.uid",
    "resumes": "(SELECT count(*) FROM instances i WHERE i.session_id = s.id AND i.reason = 'resume')",
    "forks": "(SELECT count(*) FROM sessions c WHERE c.parent_id = s.id)",
}


def _ms(value: str | int | float | None, end: bool = False) -> int | None:
    """A date (YYYY-MM-DD), an ISO time or epoch ms -> epoch ms."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    if len(text) == 10:
        day = dt.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc)
        if end:
            day += dt.timedelta(days=1)
        return int(day.timestamp() * 1000)
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp() * 1000)


def session_filter_sql(
    *,
    under: str | os.PathLike | UrlPath | None = None,
    category: str | None = None,
    rule: str | None = None,
    severity: str | None = None,
    model: str | None = None,
    since: Any = None,
    until: Any = None,
    parent: str | None = None,
    forked: bool | None = None,
    era: str | None = None,
    uid: str | None = None,
    diverged: bool = False,
    search: str | None = None,
) -> tuple[str, list]:
    """WHERE clause (over ``s`` = sessions) and parameters for the session filters."""
    where: list[str] = []
    params: list[Any] = []
    if under is not None:
        target = absolute_name(log_path(under if isinstance(under, (str, UrlPath)) else os.fspath(under)))
        prefix = target.rstrip("/") + "/"
        where.append("(s.path = ? OR substr(s.path, 1, ?) = ?)")
        params += [target, len(prefix), prefix]
    if category:
        where.append("EXISTS (SELECT 1 FROM findings f WHERE f.session_id = s.id AND f.category = ?)")
        params.append(category)
    if rule:
        where.append("EXISTS (SELECT 1 FROM findings f WHERE f.session_id = s.id AND (f.rule = ? OR f.rule LIKE ?))")
        params += [rule, rule.rstrip("*") + "%" if rule.endswith("*") or (rule.isalpha() and rule.isupper()) else rule]
    if severity:
        ranks = {"info": ("error", "warning", "info"), "warning": ("error", "warning"), "error": ("error",)}
        allowed = ranks.get(severity, (severity,))
        where.append(f"s.worst IN ({', '.join('?' * len(allowed))})")
        params += list(allowed)
    if model:
        where.append("EXISTS (SELECT 1 FROM steps st WHERE st.session_id = s.id AND st.model = ?)")
        params.append(model)
    lo, hi = _ms(since), _ms(until, end=True)
    if lo is not None:
        where.append("s.created_at >= ?")
        params.append(lo)
    if hi is not None:
        where.append("s.created_at < ?")
        params.append(hi)
    if parent:
        where.append("(s.parent_session = ? OR s.parent_id IN (SELECT id FROM sessions WHERE uid = ?))")
        params += [parent, parent]
    if forked is True:
        where.append("s.parent_session IS NOT NULL")
    elif forked is False:
        where.append("s.parent_session IS NULL")
    if era:
        where.append("(s.era = ? OR s.profile = ?)")
        params += [era, era]
    if uid:
        where.append("(s.uid = ? OR s.uid LIKE ?)")
        params += [uid, uid + "%"]
    if diverged:
        where.append(
            "EXISTS (SELECT 1 FROM findings f WHERE f.session_id = s.id AND f.category IN "
            "('request-divergence', 'header-divergence', 'unexplained-request'))"
        )
    if search:
        where.append(
            "(s.id IN (SELECT m.session_id FROM messages m JOIN messages_fts ON messages_fts.rowid = m.id "
            "WHERE messages_fts MATCH ?) OR s.id IN (SELECT t.session_id FROM streams t "
            "JOIN streams_fts ON streams_fts.rowid = t.id WHERE streams_fts MATCH ?) OR s.id IN "
            "(SELECT f.session_id FROM findings f JOIN findings_fts ON findings_fts.rowid = f.id "
            "WHERE findings_fts MATCH ?))"
        )
        params += [search, search, search]
    return (" WHERE " + " AND ".join(where)) if where else "", params


def list_sessions(
    db_path: str | os.PathLike,
    *,
    limit: int | None = None,
    order: str = "created",
    check_fresh: bool = False,
    **filters: Any,
) -> list[dict[str, Any]]:
    """Sessions in the index matching ``filters`` (see :func:`session_filter_sql`), as dicts.

    This is the TUI's session list when an index exists; it never writes.
    Keys: :data:`SESSION_FIELDS` (``id`` is the index's key, ``uid`` the id in
    the log header, ``path`` the file or ``file#id`` for a session in a SQLite
    database).  ``check_fresh`` adds ``stale``: True when the file's size,
    mtime or inode no longer match what was indexed (one ``stat`` per file),
    so a caller can re-check that session itself or ask for a re-index.
    """
    where, params = session_filter_sql(**filters)
    orders = {
        "created": "s.created_at IS NULL, s.created_at, s.path",
        "path": "s.path",
        "errors": "s.errors DESC, s.warnings DESC, s.path",
        "size": "s.size DESC, s.path",
    }
    sql = (
        f"SELECT {', '.join(_COMPUTED.get(f, 's.' + f) for f in SESSION_FIELDS)} "
        f"FROM sessions s LEFT JOIN sessions p ON p.id = s.parent_id{where} ORDER BY "
        f"{orders.get(order, orders['created'])}"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    conn = open_readonly(db_path)
    try:
        try:
            rows = conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise QueryError(_explain(exc)) from None
    finally:
        conn.close()
    out = [dict(zip(SESSION_FIELDS, r)) for r in rows]
    if check_fresh:
        for row in out:
            row["stale"] = _stale(row)
    return out


def _stale(row: dict[str, Any]) -> bool:
    try:
        st = os.stat(row["file"])
    except (OSError, TypeError):
        return True
    if row.get("member") is not None:  # a database: any write may touch any session in it
        return st.st_mtime_ns > (row["mtime_ns"] or 0) or st.st_ino != row["inode"]
    return (st.st_size, st.st_mtime_ns, st.st_ino) != (row["size"], row["mtime_ns"], row["inode"])
