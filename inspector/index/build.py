"""Build or update the index: discover, decide what changed, replay, write.

The writer is this process; replays run in worker processes (``jobs``), or
on the workers of an executor (``--scheduler``: a Dask cluster), which
compute a window of folders at a time while this process writes.  Each
folder (its logs and captures) is written in one transaction, in discovery
order, so a killed run leaves every folder either fully indexed at its new
revision or untouched at its old one.  The next run finds the rest changed
and completes it.  Cross-folder work (prune, fork seeds, header GC) runs in
transactions of its own, and is recomputed from the stored state on every
run, so it too survives a kill.

Findings are stored as ``inspector check`` reports them under the same
configuration (its :class:`~invariants.gate.policy.FindingPolicy`); the
policy's key is kept in ``meta``, and a run under another configuration
re-reads everything (:func:`_adopt_policy`).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import sqlite3
import sys
import time
from collections import OrderedDict, deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import sqlite_utils

from invariants.analysis.forks import ForkSide, check_fork_sides
from invariants.gate.config import Config
from invariants.gate.executor import Executor
from invariants.gate.fork_checks import resolve_parent
from invariants.gate.policy import FindingPolicy
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.read.capture import find_capture
from invariants.read.discover import discover
from invariants.read.source import LogSource, UrlPath, is_url, log_path

from . import rows as R
from .schema import SCHEMA_VERSION, create_schema
from .work import (
    CaptureTask,
    GroupResult,
    GroupTask,
    LogTask,
    Previous,
    SessionResult,
    Stat,
    judged,
    process_group,
    source_stat,
    use_policy,
)

DEFAULT_DB = "inspector-index.db"
PAUSE_ENV = "INSPECTOR_INDEX_PAUSE_AT"
BATCH_GROUPS = 64  # folders per transaction (a folder is never split)
BATCH_SECONDS = (
    0.5  # ...or this much writing, whichever comes first  # test hook: "N" pauses inside the N-th folder's transaction
)
STATUS_RANK_SQL = (
    "CASE {col} WHEN 'unchecked' THEN 0 WHEN 'ok' THEN 1 WHEN 'one-shot' THEN 1 WHEN 'header' THEN 2 ELSE 3 END"
)


class IndexBuildError(RuntimeError):
    """The database cannot be used as an index (not ours, wrong version, locked)."""


@dataclass
class IndexStats:
    sessions: int = 0
    new: int = 0
    appended: int = 0
    replaced: int = 0
    unchanged: int = 0
    removed: int = 0
    groups: int = 0
    groups_written: int = 0
    parsed_groups: int = 0
    captures: int = 0
    fork_checks: int = 0
    steps_added: int = 0
    findings: int = 0
    seconds: float = 0.0
    written: bool = True  # False: nothing to index and no database yet, so none was created
    problems: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "problems"}
        out["problems"] = len(self.problems)
        return out


def is_index(db_path: str | os.PathLike) -> bool:
    """Whether ``db_path`` is an index this tool wrote (so --rebuild may delete it)."""
    try:
        conn = sqlite3.connect(f"file:{Path(db_path).resolve()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


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
    if not names:
        create_schema(db)
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('created_at', ?)", [now_iso()])
    return db


class _Lock:
    """One writer at a time: an advisory ``flock`` on the database file.

    SQLite's own locks are POSIX record locks, which ``flock`` does not touch,
    so readers (the TUI, ``inspector query``) are never blocked by it.
    """

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # an empty file is an empty database
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


def input_name(p: str | os.PathLike) -> str:
    """How a path given to the index is kept: made absolute, or a URL as written (less trailing slashes)."""
    return UrlPath.of(str(p)).url if is_url(p) else os.path.abspath(p)


def _is_dir(name: str) -> bool:
    try:
        return log_path(name).is_dir()
    except OSError:  # an unusable URL: discovery has said so
        return False


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def build_index(
    paths: Iterable[str | os.PathLike],
    db_path: str | os.PathLike = DEFAULT_DB,
    *,
    jobs: int | None = None,
    full: bool = False,
    progress: Callable[[IndexStats], None] | None = None,
    config: Config | None = None,
    executor: Executor | None = None,
) -> IndexStats:
    """Index every log under ``paths`` into ``db_path``; only what changed is read.

    With an ``executor`` (a :class:`~invariants.gate.executor_dask.DaskExecutor`...) the changed
    folders are computed on its workers instead of ``jobs`` local processes; the rows are the same.

    ``config`` decides which findings are stored, as it does for ``inspector check``
    (None: every finding); an unreadable baseline raises ``BaselineError`` before anything is written.
    """
    t0 = time.perf_counter()
    policy = FindingPolicy.of(config)
    stats = IndexStats()
    db_path = str(db_path)
    roots = [input_name(p) for p in paths]
    sources, problems = discover(roots)
    if not sources and not os.path.lexists(db_path):  # nothing to index, nothing to prune: create nothing
        stats.problems.extend(problems)
        stats.written = False
        stats.seconds = time.perf_counter() - t0
        return stats
    try:
        lock = _Lock(db_path)  # before any write, the schema included
    except OSError as exc:
        raise IndexBuildError(_cannot_write(db_path, exc)) from None
    try:
        db = open_index(db_path)
    except BaseException as exc:
        lock.release()
        if isinstance(exc, sqlite3.OperationalError):
            raise IndexBuildError(_cannot_write(db_path, exc)) from None
        raise
    db._index_lock_fd = lock.fd  # type: ignore[attr-defined]  # closed in worker processes
    try:
        run_id = _start_run(db, paths)
        stats = _build(db, roots, sources, problems, jobs, full, progress, stats, run_id, policy, executor)
        stats.seconds = time.perf_counter() - t0
        _finish_run(db, run_id, stats)
    except sqlite3.OperationalError as exc:  # a read-only file or folder, a full disk: what SQLite says
        raise IndexBuildError(_cannot_write(db_path, exc)) from None
    finally:
        lock.release()
        db.conn.close()
    return stats


def _cannot_write(db_path: str, exc: BaseException) -> str:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{db_path}: cannot write the index ({reason})"


def _start_run(db: sqlite_utils.Database, paths: Iterable[str | os.PathLike]) -> int:
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    for rid, _pid in conn.execute("SELECT id, pid FROM runs WHERE status = 'running'").fetchall():
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", [rid])
    cur = conn.execute(
        "INSERT INTO runs(started_at, status, paths, pid, groups_done) VALUES (?, 'running', ?, ?, 0)",
        [now_iso(), R.dumps([input_name(p) for p in paths]), os.getpid()],
    )
    conn.execute("COMMIT")
    return int(cur.lastrowid)


def _finish_run(db: sqlite_utils.Database, run_id: int, stats: IndexStats) -> None:
    db.conn.execute(
        "UPDATE runs SET finished_at = ?, status = 'complete', sessions = ?, new = ?, appended = ?, replaced = ?, "
        "unchanged = ?, removed = ?, seconds = ? WHERE id = ?",
        [
            now_iso(),
            stats.sessions,
            stats.new,
            stats.appended,
            stats.replaced,
            stats.unchanged,
            stats.removed,
            round(stats.seconds, 3),
            run_id,
        ],
    )


# -- planning ------------------------------------------------------------------


def _previous_logs(db: sqlite_utils.Database) -> dict[str, tuple]:
    return {
        r[0]: r
        for r in db.execute(
            "SELECT path, id, size, mtime_ns, inode, device, lines, steps, versions, head_hash, tail_hash, turns, compactions "
            "FROM sessions"
        )
    }


def _previous_captures(db: sqlite_utils.Database) -> dict[str, tuple]:
    return {
        r[0]: r
        for r in db.execute(
            "SELECT path, id, size, mtime_ns, inode, device, head_hash, tail_hash, checked_lines, dir FROM captures"
        )
    }


def _stat(path: str) -> Stat | None:
    try:
        return Stat.of(path)
    except OSError:
        return None


def _plan(
    db: sqlite_utils.Database, sources: list[LogSource], full: bool, stats: IndexStats, dirty_folders: set[str]
) -> list[GroupTask]:
    """Folder tasks for everything that changed; unchanged folders cost a stat per file."""
    prev_logs = _previous_logs(db)
    prev_caps = _previous_captures(db)
    caps_by_dir: dict[str, list[str]] = {}
    for path, row in prev_caps.items():
        caps_by_dir.setdefault(row[9], []).append(path)
    groups: "OrderedDict[str, list[LogSource]]" = OrderedDict()
    for src in sources:
        groups.setdefault(str(src.path.parent), []).append(src)
    tasks: list[GroupTask] = []
    for folder, srcs in groups.items():
        logs: list[LogTask] = []
        for src in srcs:
            path = src.display
            try:
                st = source_stat(src)
            except OSError:
                st = None
            if st is None:
                stats.problems.append(f"{path}: vanished while indexing")
                continue
            row = prev_logs.get(path)
            prev = None
            changed = True
            if row is not None:
                prev = Previous(
                    Stat(row[2], row[3], row[4], row[5]),
                    lines=row[6] or 0,
                    steps=row[7] or 0,
                    versions=row[8] or 0,
                    head_hash=row[9],
                    tail_hash=row[10],
                    turns=row[11] or 0,
                    compactions=row[12] or 0,
                )
                changed = full or prev.stat != st
            logs.append(LogTask(src, st, prev, changed))
            if not changed:
                stats.unchanged += 1
        cap_paths: list[str] = []
        for src in srcs:
            cp = find_capture(src.path)
            if cp is not None and str(cp) not in cap_paths:
                cap_paths.append(str(cp))
        captures: list[CaptureTask] = []
        for cp in cap_paths:
            st = _stat(cp)
            if st is None:
                continue
            row = prev_caps.get(cp)
            prev = None
            if row is not None:
                prev = Previous(
                    Stat(row[2], row[3], row[4], row[5]), head_hash=row[6], tail_hash=row[7], checked_lines=row[8] or 0
                )
            captures.append(CaptureTask(cp, st, prev, full or prev is None or prev.stat != st))
        gone_caps = [p for p in caps_by_dir.get(folder, []) if p not in cap_paths]
        recheck_all = folder in dirty_folders or bool(gone_caps)
        stats.sessions += len(logs)
        stats.captures += len(captures)
        if not recheck_all and not any(lt.changed for lt in logs) and not any(ct.changed for ct in captures):
            continue
        tasks.append(GroupTask(folder, logs, captures, recheck_all, gone_caps))
    return tasks


def _attach_state(db: sqlite_utils.Database, task: GroupTask) -> None:
    """Load checkpoints and counters a worker needs (only for folders that changed)."""
    need_context = bool(task.captures)
    for lt in task.logs:
        prev = lt.previous
        if prev is None or (not lt.changed and not need_context):
            continue
        sid = db.execute("SELECT id FROM sessions WHERE path = ?", [lt.path]).fetchone()[0]
        ck = db.execute("SELECT data, bytes_at FROM checkpoints WHERE session_id = ?", [sid]).fetchone()
        if ck is not None:
            prev.checkpoint, prev.bytes_at = ck[0], ck[1]
        if lt.changed:
            prev.open_steps = tuple(
                r[0]
                for r in db.execute(
                    "SELECT idx FROM steps WHERE session_id = ? AND end_seq IS NULL ORDER BY idx", [sid]
                )
            )
            row = db.execute("SELECT max(seq) FROM messages WHERE session_id = ?", [sid]).fetchone()
            prev.last_message_seq = row[0] if row and row[0] is not None else -1
            prev.carry = [
                tuple(r)
                for r in db.execute(
                    "SELECT rule, category, severity, seq, line, turn, step, path, file, message, detail FROM findings "
                    "WHERE session_id = ? AND source = 'log' AND rule = 'LOG011'",
                    [sid],
                )
            ]
    for ct in task.captures:
        if ct.previous is None:
            continue
        cid = db.execute("SELECT id FROM captures WHERE path = ?", [ct.path]).fetchone()[0]
        ct.previous.unexplained_lines = tuple(
            r[0]
            for r in db.execute(
                "SELECT line FROM requests WHERE capture_id = ? AND step_idx IS NULL AND status IN ('unexplained', 'not-routed')",
                [cid],
            )
        )


# -- the run -------------------------------------------------------------------


def _build(
    db: sqlite_utils.Database,
    roots: list[str],
    sources: list[LogSource],
    problems: list[str],
    jobs: int | None,
    full: bool,
    progress: Callable[[IndexStats], None] | None,
    stats: IndexStats,
    run_id: int,
    policy: FindingPolicy,
    executor: Executor | None = None,
) -> IndexStats:
    _adopt_policy(db, policy)
    stats.problems.extend(problems)
    dirty = _prune(db, roots, sources, stats)
    tasks = _plan(db, sources, full, stats, dirty)
    stats.groups = len(tasks)
    pause_at = int(os.environ.get(PAUSE_ENV, "0") or 0)
    writer = _Writer(db, stats, run_id, pause_at)
    if pause_at:
        writer.batch = 1  # the test hook commits folder by folder, so a kill shows partial progress
    try:
        results = _run_on(executor, db, tasks, policy) if executor is not None else _run_tasks(db, tasks, jobs, policy)
        for result in results:
            if isinstance(result, LostGroup):
                stats.problems.extend(result.problems)
                continue
            writer.write(result)
            if progress:
                progress(stats)
        writer.commit()
    finally:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
    _fork_phase(db, roots, stats, policy)
    if stats.replaced or stats.removed:
        _gc_headers(db)
    stats.findings = db.execute("SELECT count(*) FROM findings").fetchone()[0]
    return stats


def _adopt_policy(db: sqlite_utils.Database, policy: FindingPolicy) -> None:
    """Store under ``policy`` from now on.  Findings kept under another configuration are
    not enough to derive this one's (what it hid is not stored), so every log and capture
    is marked changed and every fork unchecked, in the same transaction as the new key:
    a run killed after this still re-reads them next time."""
    key = policy.key()
    row = db.execute("SELECT value FROM meta WHERE key = 'policy'").fetchone()
    if row is not None and row[0] == key:
        return
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET mtime_ns = -1, head_hash = NULL, fork_checked = NULL")
    conn.execute("UPDATE captures SET mtime_ns = -1, head_hash = NULL")
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('policy', ?)", [key])
    conn.execute("COMMIT")


def _run_tasks(
    db: sqlite_utils.Database, tasks: list[GroupTask], jobs: int | None, policy: FindingPolicy
) -> Iterable[GroupResult]:
    jobs = jobs if jobs is not None else default_jobs()
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            _attach_state(db, task)
            yield process_group(task, policy)
        return
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    window = jobs * 4  # results are written in order; a deeper queue keeps workers busy past a slow folder
    lock_fd = getattr(db, "_index_lock_fd", None)
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(), lock_fd, policy)
    ) as pool:
        pending: deque[Future] = deque()
        it = iter(tasks)
        for task in it:
            _attach_state(db, task)
            pending.append(pool.submit(process_group, task))
            if len(pending) >= window:
                break
        while pending:
            result = pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                _attach_state(db, nxt)
                pending.append(pool.submit(process_group, nxt))
            yield result


@dataclass
class LostGroup:
    """A folder whose task could not finish on any worker: each log a problem line, nothing written
    (so the next run finds it still changed and reads it again)."""

    problems: list[str]


def _run_on(
    executor: Executor, db: sqlite_utils.Database, tasks: list[GroupTask], policy: FindingPolicy
) -> Iterable[GroupResult | LostGroup]:
    """The folders computed by ``executor`` a window at a time, yielded in order for the one writer.

    A window is a few tasks per worker thread: enough to keep the workers busy, small enough that
    results are written (and memory freed) as the run goes."""
    window = max(1, executor.jobs * 16)
    for start in range(0, len(tasks), window):
        chunk = tasks[start : start + window]
        for task in chunk:
            _attach_state(db, task)
        yield from executor.map(indexed_group, [(task, policy) for task in chunk])


def indexed_group(job: tuple[GroupTask, FindingPolicy]) -> GroupResult:
    """One folder's rows, on a worker (any process: the policy travels with the task)."""
    task, policy = job
    return process_group(task, policy)


def lost_group(fn: Callable[[Any], Any], job: tuple[GroupTask, FindingPolicy], reason: str) -> LostGroup:
    """What a folder gives when its task could not finish anywhere (the executor's ``lost`` hook)."""
    task, _ = job
    return LostGroup([f"{lt.path}: not indexed ({reason})" for lt in task.logs])


def _worker_init(parent: int, lock_fd: int | None, policy: FindingPolicy) -> None:
    """A worker never outlives a killed indexer, and never holds its lock or its database."""
    use_policy(policy)
    if lock_fd is not None:
        try:
            os.close(lock_fd)  # our copy only: the parent's lock stays
        except OSError:
            pass
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _prune(db: sqlite_utils.Database, roots: list[str], sources: list[LogSource], stats: IndexStats) -> set[str]:
    """Forget logs (and captures) that no longer exist under a path being indexed; returns their folders."""
    seen = {s.display for s in sources}
    folders = {str(s.path.parent) for s in sources}
    dirs = [r for r in roots if _is_dir(r)]
    files = [r for r in roots if r not in dirs]

    def covered(path: str) -> bool:
        return any(_within(path, d) for d in dirs) or path in files

    gone = [
        (sid, path) for sid, path in db.execute("SELECT id, path FROM sessions") if path not in seen and covered(path)
    ]
    # A capture goes with the last log of its folder (it is only ever looked up beside a log).
    gone_caps = [
        path
        for (path, folder) in db.execute("SELECT path, dir FROM captures")
        if (any(_within(path, d) for d in dirs) or folder in {os.path.dirname(f) for f in files})
        and folder not in folders
    ]  # a capture gone from a folder that keeps logs: see _plan
    if not gone and not gone_caps:
        return set()
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    for sid, _path in gone:
        _delete_session(conn, sid)
    for path in gone_caps:
        _drop_capture(conn, path)
    conn.execute("COMMIT")
    stats.removed += len(gone)
    return {os.path.dirname(p) for _sid, p in gone}


def _delete_session(conn: sqlite3.Connection, sid: int, keep_row: bool = False) -> None:
    conn.execute("UPDATE sessions SET parent_id = NULL, fork_checked = NULL WHERE parent_id = ?", [sid])
    conn.execute("UPDATE requests SET session_id = NULL WHERE session_id = ?", [sid])
    conn.execute("UPDATE findings SET session_id = NULL WHERE session_id = ? AND source = 'capture'", [sid])
    conn.execute(
        "INSERT INTO messages_fts(messages_fts, rowid, text) SELECT 'delete', id, text FROM messages "
        "WHERE session_id = ?",
        [sid],
    )
    for table in ("steps", "cache_steps", "versions", "instances", "messages", "tool_calls", "streams", "checkpoints"):
        conn.execute(f"DELETE FROM {table} WHERE session_id = ?", [sid])
    conn.execute("DELETE FROM findings WHERE session_id = ? AND source IN ('log', 'fork')", [sid])
    if not keep_row:
        conn.execute("DELETE FROM sessions WHERE id = ?", [sid])


def _drop_capture(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT id FROM captures WHERE path = ?", [path]).fetchone()
    if row is None:
        return
    sids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT session_id FROM findings WHERE capture_id = ? AND session_id IS NOT NULL", [row[0]]
        )
    ]
    conn.execute("DELETE FROM findings WHERE capture_id = ?", [row[0]])
    conn.execute("DELETE FROM requests WHERE capture_id = ?", [row[0]])
    conn.execute("DELETE FROM captures WHERE id = ?", [row[0]])
    update_counts(conn, sids)


def _gc_headers(db: sqlite_utils.Database) -> None:
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    orphan = (
        "SELECT hash FROM headers WHERE hash NOT IN (SELECT header_hash FROM steps WHERE header_hash IS NOT NULL) "
        "AND hash NOT IN (SELECT header_hash FROM versions WHERE header_hash IS NOT NULL) "
        "AND hash NOT IN (SELECT header_hash FROM instances WHERE header_hash IS NOT NULL)"
    )
    conn.execute(f"DELETE FROM header_tools WHERE hash IN ({orphan})")
    conn.execute(f"DELETE FROM headers WHERE hash IN ({orphan})")
    conn.execute("COMMIT")


# -- writing -------------------------------------------------------------------

_STEP_INSERT = (
    f"INSERT INTO steps(session_id, {', '.join(R.STEP_COLUMNS)}) VALUES ({', '.join('?' * (len(R.STEP_COLUMNS) + 1))})"
)
_STEP_UPDATE_COLS = [c for c in R.STEP_COLUMNS if c not in ("idx", "status", "requests")]
_STEP_UPDATE = (
    "UPDATE steps SET "
    + ", ".join(f"{c} = :c{i}" for i, c in enumerate(_STEP_UPDATE_COLS))
    + f", status = CASE WHEN {STATUS_RANK_SQL.format(col=':status')} > {STATUS_RANK_SQL.format(col='status')} "
    "THEN :status ELSE status END, requests = requests + :n WHERE session_id = :sid AND idx = :idx"
)
_STATUS_UPDATE = (
    f"UPDATE steps SET status = CASE WHEN {STATUS_RANK_SQL.format(col='?1')} > {STATUS_RANK_SQL.format(col='status')} "
    "THEN ?1 ELSE status END, requests = requests + ?2 WHERE session_id = ?3 AND idx = ?4"
)
_FINDING_INSERT = (
    f"INSERT INTO findings(session_id, capture_id, request_line, source, {', '.join(R.FINDING_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(R.FINDING_COLUMNS) + 4))})"
)
_SESSION_FACT_COLS = (
    "uid",
    "cwd",
    "created_at",
    "created",
    "parent_session",
    "seed_length",
    "era",
    "profile",
    "version",
    "compressed",
    "events",
    "turns",
    "steps",
    "chunks",
    "chunk_rows",
    "lines",
    "bytes",
    "instances",
    "versions",
    "compactions",
    "torn",
    "open_turn_at_end",
)


class _Writer:
    def __init__(self, db: sqlite_utils.Database, stats: IndexStats, run_id: int, pause_at: int) -> None:
        self.db = db
        self.conn = db.conn
        self.stats = stats
        self.run_id = run_id
        self.pause_at = pause_at
        self.written = 0
        self.in_batch = 0
        self.began = 0.0
        self.batch = BATCH_GROUPS

    def write(self, result: GroupResult) -> None:
        conn = self.conn
        for res in result.sessions:
            if res.problem:
                self.stats.problems.append(res.problem)
        for cr in result.captures:
            if cr.problem:
                self.stats.problems.append(cr.problem)
        if result.parsed:
            self.stats.parsed_groups += 1
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
            self.began = time.monotonic()
            self.in_batch = 0
        try:
            keys: dict[str, int] = {}
            touched: set[int] = set()
            for res in result.sessions:
                if res.action == "error":
                    continue
                sid = self._session(res)
                keys[res.path] = sid
                touched.add(sid)
            folder_keys: dict[str, int] = {}
            if result.captures or result.recheck_all:
                folder_keys = {
                    p: k for p, k in conn.execute("SELECT path, id FROM sessions WHERE dir = ?", [result.folder])
                }
            folder_keys.update(keys)
            self._captures(result, folder_keys, touched)
            self._counts(touched)
            self.written += 1
            self.in_batch += 1
            if self.pause_at and self.written == self.pause_at:
                print(
                    f"inspector index: paused inside the transaction of folder {self.written} (test hook {PAUSE_ENV})",
                    file=sys.stderr,
                    flush=True,
                )
                time.sleep(3600)
            if self.in_batch >= self.batch or time.monotonic() - self.began > BATCH_SECONDS:
                self.commit()
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.stats.groups_written += 1

    def commit(self) -> None:
        """End the open batch: every folder in it becomes visible at once, or none does."""
        if self.conn.in_transaction:
            self.conn.execute("UPDATE runs SET groups_done = ? WHERE id = ?", [self.written, self.run_id])
            self.conn.execute("COMMIT")

    # -- one session -------------------------------------------------------------
    def _session(self, res: SessionResult) -> int:
        conn = self.conn
        row = conn.execute("SELECT id FROM sessions WHERE path = ?", [res.path]).fetchone()
        sid = row[0] if row else None
        if res.action == "context":
            assert sid is not None
            self._statuses(sid, res.step_status)
            return sid
        facts = res.facts
        st = res.stat
        values = {c: facts.get(c) for c in _SESSION_FACT_COLS}
        values.update(
            path=res.path,
            file=res.file,
            member=res.member,
            root=res.root,
            dir=os.path.dirname(res.file),
            size=st.size,
            mtime_ns=st.mtime_ns,
            inode=st.inode,
            device=st.device,
            revision=st.revision,
            head_hash=res.head_hash,
            tail_hash=res.tail_hash,
            resumable=int(res.checkpoint is not None),
            indexed_at=now_iso(),
            index_mode="append" if res.action == "append" else "full",
        )
        if res.action == "new":
            self.stats.new += 1
        elif res.action == "append":
            self.stats.appended += 1
        else:
            self.stats.replaced += 1
        if sid is None:
            values.update(requests=0, errors=0, warnings=0, infos=0)
            cols = list(values)
            cur = conn.execute(
                f"INSERT INTO sessions({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [values[c] for c in cols],
            )
            sid = int(cur.lastrowid)
        else:
            if res.action != "append":
                _delete_session(conn, sid, keep_row=True)
            values["fork_checked"] = None
            cols = list(values)
            conn.execute(
                f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ?",
                [values[c] for c in cols] + [sid],
            )
        conn.executemany(
            f"INSERT OR IGNORE INTO headers({', '.join(R.HEADER_COLUMNS)}) VALUES ({', '.join('?' * len(R.HEADER_COLUMNS))})",
            res.headers,
        )
        conn.executemany("INSERT OR IGNORE INTO header_tools(hash, position, name) VALUES (?, ?, ?)", res.header_tools)
        conn.executemany(
            f"INSERT INTO versions(session_id, {', '.join(R.VERSION_COLUMNS)}) VALUES ({', '.join('?' * (len(R.VERSION_COLUMNS) + 1))})",
            [(sid, *r) for r in res.versions],
        )
        conn.execute("DELETE FROM instances WHERE session_id = ?", [sid])
        conn.executemany(
            f"INSERT INTO instances(session_id, {', '.join(R.INSTANCE_COLUMNS)}) VALUES ({', '.join('?' * (len(R.INSTANCE_COLUMNS) + 1))})",
            [(sid, *r) for r in res.instances],
        )
        status_i, requests_i = R.STEP_COLUMNS.index("status"), R.STEP_COLUMNS.index("requests")
        for r in res.steps_update:
            params = {f"c{i}": r[R.STEP_COLUMNS.index(c)] for i, c in enumerate(_STEP_UPDATE_COLS)}
            params.update(status=r[status_i], n=r[requests_i], sid=sid, idx=r[0])
            conn.execute(_STEP_UPDATE, params)
        self._statuses(sid, res.step_status)
        conn.executemany(_STEP_INSERT, [(sid, *r) for r in res.steps_new])
        self.stats.steps_added += len(res.steps_new)
        if res.cache is not None:
            conn.execute("DELETE FROM cache_steps WHERE session_id = ? AND idx >= ?", [sid, res.cache_start])
            conn.executemany(
                f"INSERT INTO cache_steps(session_id, {', '.join(R.CACHE_COLUMNS)}) "
                f"VALUES ({', '.join('?' * (len(R.CACHE_COLUMNS) + 1))})",
                [(sid, *r) for r in res.cache],
            )
        last_id = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
        conn.executemany(
            f"INSERT INTO messages(session_id, {', '.join(R.MESSAGE_COLUMNS)}) VALUES ({', '.join('?' * (len(R.MESSAGE_COLUMNS) + 1))})",
            [(sid, *r) for r in res.messages],
        )
        if res.messages:  # messages_fts has no triggers (see schema.FTS)
            conn.execute("INSERT INTO messages_fts(rowid, text) SELECT id, text FROM messages WHERE id > ?", [last_id])
        conn.executemany(
            f"INSERT INTO tool_calls(session_id, {', '.join(R.TOOL_CALL_COLUMNS)}) VALUES ({', '.join('?' * (len(R.TOOL_CALL_COLUMNS) + 1))})",
            [(sid, *r) for r in res.tool_calls],
        )
        conn.execute("DELETE FROM streams WHERE session_id = ? AND step_idx >= ?", [sid, res.cache_start])
        conn.executemany(
            f"INSERT INTO streams(session_id, {', '.join(R.STREAM_COLUMNS)}) "
            f"VALUES ({', '.join('?' * (len(R.STREAM_COLUMNS) + 1))})",
            [(sid, *r) for r in res.streams],
        )
        conn.execute("DELETE FROM findings WHERE session_id = ? AND source = 'log'", [sid])
        conn.executemany(_FINDING_INSERT, [(sid, None, None, "log", *r) for r in res.findings])
        if res.checkpoint is not None:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoints(session_id, bytes_at, size, data) VALUES (?, ?, ?, ?)",
                [sid, res.bytes_at, len(res.checkpoint), res.checkpoint],
            )
        else:
            conn.execute("DELETE FROM checkpoints WHERE session_id = ?", [sid])
        conn.execute(
            "UPDATE sessions SET messages = (SELECT count(*) FROM messages WHERE session_id = ?1) WHERE id = ?1", [sid]
        )
        return sid

    def _statuses(self, sid: int, statuses: list[tuple]) -> None:
        self.conn.executemany(_STATUS_UPDATE, [(status, n, sid, idx) for idx, status, n in statuses])

    # -- captures ------------------------------------------------------------------
    def _captures(self, result: GroupResult, keys: dict[str, int], touched: set[int]) -> None:
        conn = self.conn
        for path in result.gone_captures:
            self._drop_capture(path)
        if result.recheck_all:
            kept = [
                k
                for p, k in keys.items()
                if not any(r.path == p and r.action in ("new", "replace") for r in result.sessions)
            ]
            for k in kept:
                conn.execute(
                    "UPDATE steps SET status = 'unchecked', requests = 0 WHERE session_id = ? AND (status != 'unchecked' OR requests != 0)",
                    [k],
                )
        if not result.captures and not result.recheck_all:
            return
        for cr in result.captures:
            if cr.action == "error":
                continue
            row = conn.execute("SELECT id FROM captures WHERE path = ?", [cr.path]).fetchone()
            st = cr.stat
            values = dict(
                path=cr.path,
                dir=os.path.dirname(cr.path),
                records=cr.records,
                checked_lines=cr.checked_lines,
                size=st.size,
                mtime_ns=st.mtime_ns,
                inode=st.inode,
                device=st.device,
                revision=st.revision,
                head_hash=cr.head_hash,
                tail_hash=cr.tail_hash,
                indexed_at=now_iso(),
            )
            cols = list(values)
            if row is None:
                cid = int(
                    conn.execute(
                        f"INSERT INTO captures({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [values[c] for c in cols],
                    ).lastrowid
                )
            else:
                cid = row[0]
                conn.execute(
                    f"UPDATE captures SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ?",
                    [values[c] for c in cols] + [cid],
                )
            if cr.all_lines:
                conn.execute("DELETE FROM findings WHERE capture_id = ?", [cid])
                conn.execute("DELETE FROM requests WHERE capture_id = ?", [cid])
            else:
                conn.execute("DELETE FROM findings WHERE capture_id = ? AND source = 'capture-file'", [cid])
                conn.executemany(
                    "DELETE FROM findings WHERE capture_id = ? AND source = 'capture' AND request_line = ?",
                    [(cid, ln) for ln in cr.rechecked],
                )
                conn.executemany(
                    "DELETE FROM requests WHERE capture_id = ? AND line = ?", [(cid, ln) for ln in cr.rechecked]
                )
            conn.executemany(_FINDING_INSERT, [(None, cid, f[4], "capture-file", *f) for f in cr.file_findings])
            req_rows = []
            for line, spath, *rest in cr.requests:
                req_rows.append((cid, line, keys.get(spath) if spath else None, *rest))
            conn.executemany(
                "INSERT INTO requests(capture_id, line, session_id, session_uid, step_idx, status, codes, model, log_length, "
                "turn, step, loop_built, time, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                req_rows,
            )
            frows = []
            for line, spath, f in cr.findings:
                sid = keys.get(spath) if spath else None
                if sid is not None:
                    touched.add(sid)
                frows.append((sid, cid, line, "capture", *f))
            conn.executemany(_FINDING_INSERT, frows)
        for k in set(keys.values()):
            conn.execute(
                "UPDATE sessions SET requests = (SELECT count(*) FROM requests WHERE session_id = ?1) WHERE id = ?1",
                [k],
            )
            touched.add(k)

    def _drop_capture(self, path: str) -> None:
        _drop_capture(self.conn, path)

    def _counts(self, sids: Iterable[int]) -> None:
        update_counts(self.conn, sids)


def update_counts(conn: sqlite3.Connection, sids: Iterable[int]) -> None:
    conn.executemany(
        "UPDATE sessions SET "
        "errors = (SELECT count(*) FROM findings WHERE session_id = ?1 AND severity = 'error'), "
        "warnings = (SELECT count(*) FROM findings WHERE session_id = ?1 AND severity = 'warning'), "
        "infos = (SELECT count(*) FROM findings WHERE session_id = ?1 AND severity = 'info') WHERE id = ?1",
        [(s,) for s in sids],
    )
    conn.executemany(
        "UPDATE sessions SET worst = CASE WHEN errors > 0 THEN 'error' WHEN warnings > 0 THEN 'warning' "
        "WHEN infos > 0 THEN 'info' END WHERE id = ?",
        [(s,) for s in sids],
    )


# -- forks ---------------------------------------------------------------------


def _fork_phase(db: sqlite_utils.Database, roots: list[str], stats: IndexStats, policy: FindingPolicy) -> None:
    """Fork-seed checks for children whose log, parent or parent's log changed.

    The parent is chosen as ``inspector check`` chooses it (:func:`_resolve_parent`),
    by the id in the child's session header: a ``parentSession`` value never
    becomes a path.
    """
    conn = db.conn
    children = conn.execute(
        "SELECT id, uid, path, root, parent_session, seed_length, events, era, revision, fork_checked, file, member "
        "FROM sessions WHERE parent_session IS NOT NULL"
    ).fetchall()
    todo = []
    from invariants.analysis.forks import root_index_scope

    with root_index_scope():  # each root scanned once for all the children
        for sid, uid, path, root, parent_uid, seed, events, era, rev, checked, file, member in children:
            if not any(_within(path, r) for r in roots):
                continue
            parent = _resolve_parent(conn, sid, file, member, root, parent_uid, seed or 0)
            key = f"{rev}|{root}|" + (f"{parent[0]}:{parent[3]}:{parent[7]}" if parent else "-")
            if key == checked:
                continue
            todo.append((sid, uid, path, root, parent_uid, seed, events, era, parent, key, file, member))
    batch = 200
    for i in range(0, len(todo), batch):
        conn.execute("BEGIN IMMEDIATE")
        done = []
        for sid, uid, path, root, parent_uid, seed, events, era, parent, key, file, member in todo[i : i + batch]:
            emitted: list[Finding] = []

            def emit(code: str, message: str, **where: Any) -> None:
                emitted.append(make_finding(code, message, **where))  # noqa: B023 (used within this pass)

            child = ForkSide(_source(file, root, member), uid, events, era, parent_uid, seed or 0)
            side = None
            if parent is not None:
                # A parent found by name (not the one checked log beside the child) is read
                # only as far as the seed, as `inspector check` does: its length is not taken.
                events = parent[2] if parent[7] == "checked" else None
                side = ForkSide(_source(parent[5], root, parent[6]), parent_uid, events, parent[4] or "seed")
            try:
                check_fork_sides(child, side, emit)
            except OSError as exc:
                stats.problems.append(f"{path}: fork check could not read a log ({exc.strerror or exc})")
                continue
            conn.execute("DELETE FROM findings WHERE session_id = ? AND source = 'fork'", [sid])
            conn.executemany(
                _FINDING_INSERT, [(sid, None, None, "fork", *R.finding_row(f)) for f in judged(policy, emitted)]
            )
            conn.execute(
                "UPDATE sessions SET parent_id = ?, fork_checked = ? WHERE id = ?",
                [parent[0] if parent else None, key, sid],
            )
            done.append(sid)
        update_counts(conn, done)
        conn.execute("COMMIT")
        stats.fork_checks += len(done)


def _source(file: str, root: str, member: str | None) -> LogSource:
    return LogSource(log_path(file), log_path(root), member)


class _Indexed:
    """An indexed session as :func:`~invariants.gate.fork_checks.resolve_parent` sees a checked log."""

    def __init__(self, row: tuple, root: str) -> None:
        self.row = row  # (id, path, events, revision, era, file, member, version, created_at)
        self.source = _source(row[5], root, row[6])
        self.created_at = row[8]


def _resolve_parent(
    conn: sqlite3.Connection, sid: int, file: str, member: str | None, root: str, parent_uid: str, seed: int
) -> tuple | None:
    """(id, path, events, revision, era, file, member, how) of the parent, or None.

    The choice ``inspector check`` makes (:func:`~invariants.gate.fork_checks.resolve_parent`),
    with the sessions indexed under the child's root as the checked logs: ``how``
    is ``checked`` for one of them, ``found`` for the log the store would have
    written (read only as far as its header; its id is None when it is not indexed).
    The id never becomes a path: the places are those the store would use under
    ``root``, and nothing outside ``root`` is indexed under it.
    """
    prefix = root.rstrip(os.sep) + os.sep
    rows = conn.execute(
        "SELECT id, path, events, revision, era, file, member, version, created_at FROM sessions "
        "WHERE uid = ? AND id != ? AND substr(path, 1, ?) = ? ORDER BY id",
        [parent_uid, sid, len(prefix), prefix],
    ).fetchall()
    created = conn.execute("SELECT created_at FROM sessions WHERE id = ?", [sid]).fetchone()
    child = _source(file, root, member)
    parent = resolve_parent(child, parent_uid, created[0] if created else None, seed, [_Indexed(r, root) for r in rows])
    if parent is None:
        return None
    if isinstance(parent, _Indexed):
        return (*parent.row[:7], "checked")
    indexed = next((r for r in rows if r[5] == str(parent.path) and r[6] is None), None)
    if indexed is not None:
        return (*indexed[:7], "found")
    st = _stat(str(parent.path))
    return (None, str(parent.path), None, st.revision if st else None, None, str(parent.path), None, "found")
