"""Build or update the index: discover, decide what changed, replay, write.

The writer is this process; replays run in worker processes (``jobs``), or
on the workers of an executor (``--scheduler``: a Dask cluster), which
compute the folders streamed to them while this process writes.  Each
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

import os
import sqlite3
import time
from typing import Callable, Iterable

import sqlite_utils

from invariants.gate.config import Config
from invariants.gate.executor import Executor
from invariants.gate.policy import FindingPolicy
from invariants.read.discover import iter_discover

from . import rows as R
from .connection import IndexBuildError, _cannot_write, _Lock, inserted_id, now_iso, open_index
from .forks import _fork_phase
from .found import FoundLogs
from .plan import _plan, input_name
from .prune import _gc_headers, _prune, _refresh_roots
from .schedule import LostGroup, _run_on, _run_tasks
from .stats import IndexStats
from .writer import _Writer

__all__ = ["DEFAULT_DB", "IndexBuildError", "IndexStats", "build_index"]

DEFAULT_DB = "inspector-index.db"


def build_index(
    paths: Iterable[str | os.PathLike],
    db_path: str | os.PathLike = DEFAULT_DB,
    *,
    jobs: int | None = None,
    full: bool = False,
    progress: Callable[[IndexStats], None] | None = None,
    config: Config | None = None,
    executor: Executor | None = None,
    after_folder: Callable[[int], None] | None = None,
) -> IndexStats:
    """Index every log under ``paths`` into ``db_path``; only what changed is read.

    With an ``executor`` (a :class:`~invariants.gate.executor_dask.DaskExecutor`...) the changed
    folders are computed on its workers instead of ``jobs`` local processes; the rows are the same.

    ``config`` decides which findings are stored, as it does for ``inspector check``
    (None: every finding); an unreadable baseline raises ``BaselineError`` before anything is written.

    ``after_folder`` (a test hook) is called with the number of folders written so far, inside
    the transaction of the last one, before it commits; given one, every folder commits on its
    own, so a test that stops the run there sees the folders before it committed and this one not.
    """
    t0 = time.perf_counter()
    policy = FindingPolicy.of(config)
    stats = IndexStats()
    db_path = str(db_path)
    roots = [input_name(p) for p in paths]
    problems: list[str] = []
    found = FoundLogs(iter_discover(roots, problems, stats.notes))  # on disk: a run never lists the fleet
    try:
        if not found.count and not os.path.lexists(db_path):  # nothing to index, nothing to prune: create nothing
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
            stats = _build(
                db, roots, found, problems, jobs, full, progress, stats, run_id, policy, executor, after_folder
            )
            stats.seconds = time.perf_counter() - t0
            _finish_run(db, run_id, stats)
        except sqlite3.OperationalError as exc:  # a read-only file or folder, a full disk: what SQLite says
            raise IndexBuildError(_cannot_write(db_path, exc)) from None
        finally:
            lock.release()
            db.conn.close()
    finally:
        found.close()
    return stats


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
    return inserted_id(cur)


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


# -- the run -------------------------------------------------------------------


def _build(
    db: sqlite_utils.Database,
    roots: list[str],
    found: FoundLogs,
    problems: list[str],
    jobs: int | None,
    full: bool,
    progress: Callable[[IndexStats], None] | None,
    stats: IndexStats,
    run_id: int,
    policy: FindingPolicy,
    executor: Executor | None = None,
    after_folder: Callable[[int], None] | None = None,
) -> IndexStats:
    _adopt_policy(db, policy)
    stats.problems.extend(problems)
    dirty = _prune(db, roots, found, stats)
    _refresh_roots(db, found)
    stats.groups, tasks = _plan(db, found, full, stats, dirty)
    writer = _Writer(db, stats, run_id, after_folder)
    try:
        results = (
            _run_on(executor, db, tasks, policy)
            if executor is not None
            else _run_tasks(db, tasks, stats.groups, jobs, policy, stats.notes)
        )
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
