"""Scheduling the changed folders: local worker processes or an executor, results in order for the one writer."""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import sqlite_utils

from invariants.gate.executor import Executor, ProcessExecutor, completed, in_order, usable_cpus
from invariants.gate.policy import FindingPolicy

from . import spill
from .plan import _attach_state
from .work import GroupResult, GroupTask, process_group


def _run_tasks(
    db: sqlite_utils.Database,
    tasks: Iterable[GroupTask],
    count: int,
    jobs: int | None,
    policy: FindingPolicy,
    notes: list[str],
) -> Iterable[GroupResult | LostGroup]:
    """The ``count`` folder tasks (made as they are reached) run here or on ``jobs`` local processes,
    results in order; a folder of more than ``SPILL_LOGS`` logs gives its rows through a file, in a
    temporary folder made when the first such folder is reached (:mod:`.spill`).  ``notes`` hears
    that no worker process could start (the folders were then indexed here)."""
    jobs = jobs if jobs is not None else default_jobs()
    with ExitStack() as stack:
        made: list[str] = []

        def ready(task: GroupTask) -> GroupTask:
            _attach_state(db, task)
            if len(task.logs) > spill.SPILL_LOGS:
                if not made:
                    made.append(stack.enter_context(tempfile.TemporaryDirectory(prefix="inspector-index-")))
                task.spill = made[0]
            return task

        yield from _run_local(db, tasks, count, jobs, policy, ready, notes)


def _run_local(
    db: sqlite_utils.Database,
    tasks: Iterable[GroupTask],
    count: int,
    jobs: int,
    policy: FindingPolicy,
    ready: Callable[[GroupTask], GroupTask],
    notes: list[str],
) -> Iterable[GroupResult | LostGroup]:
    """The tasks, each made ``ready`` as it is sent, run here or on ``jobs`` worker processes
    (in batches of consecutive folders, results written in folder order as they arrive; a folder
    a worker died on, alone, is a :class:`LostGroup`)."""
    if jobs <= 1 or count <= 1:
        for task in tasks:
            yield process_group(ready(task), policy)
        return
    import multiprocessing

    forked = multiprocessing.get_start_method() == "fork"
    lock_fd = getattr(db, "_index_lock_fd", None) if forked else None

    with ProcessExecutor(jobs, _worker_init, (lock_fd,), batch=LOCAL_BATCH, lost=lost_group) as executor:
        yield from in_order(executor.imap(indexed_group, ((ready(task), policy) for task in tasks)))
        notes.extend(executor.notes)


@dataclass
class LostGroup:
    """A folder whose task could not finish on any worker: each log a problem line, nothing written
    (so the next run finds it still changed and reads it again)."""

    problems: list[str]


def _run_on(
    executor: Executor, db: sqlite_utils.Database, tasks: Iterable[GroupTask], policy: FindingPolicy
) -> Iterable[GroupResult | LostGroup]:
    """The folders computed by ``executor``, yielded in folder order for the one writer, as they arrive.

    Streamed: a folder's stored state is loaded when the executor asks for its task, and the writer
    writes what has arrived while the workers compute what the executor keeps in flight (a bounded
    number of tasks, so the reorder holds at most their results).  A window at a time, the workers
    waited while this process wrote each window, and each window waited for its slowest task."""

    def jobs() -> Iterator[tuple[GroupTask, FindingPolicy]]:
        for task in tasks:
            _attach_state(db, task)
            yield task, policy

    return in_order(completed(executor, indexed_group, jobs()))


def indexed_group(job: tuple[GroupTask, FindingPolicy]) -> GroupResult:
    """One folder's rows, on a worker (any process: the policy travels with the task, pickled once a batch)."""
    task, policy = job
    return process_group(task, policy)


def lost_group(fn: Callable[[Any], Any], job: tuple[GroupTask, FindingPolicy], reason: str) -> LostGroup:
    """What a folder gives when its task could not finish anywhere (the executor's ``lost`` hook)."""
    task, _ = job
    return LostGroup([f"{lt.path}: not indexed ({reason})" for lt in task.logs])


def _worker_init(lock_fd: int | None) -> None:
    """A worker never holds the index's lock (a forked one closes its copy of the lock's file) or its
    database; it exits with the indexer, however that ends (:func:`~invariants.gate.process_pool.worker_start`).
    Only in a worker: when none could start, the folders are indexed in this process, which keeps its lock."""
    if lock_fd is not None:
        try:
            os.close(lock_fd)  # our copy only: the parent's lock stays
        except OSError:
            pass


LOCAL_BATCH = 16
"""Folders a batch on local worker processes: the folders in flight (``jobs * 4`` batches) hold their
changed logs' checkpoints (~3 KB a small session's, ~240 KB a 52,000-event log's)."""

CLUSTER_BATCH = 64
"""Folders a task on a cluster at most, where a task costs the client ~12 ms: its rows come back whole
(~8 KB a small session's folder, at most 0.3 MB a folder of the corpus)."""


def default_jobs() -> int:
    """``index`` without ``--jobs``: a process per usable CPU (:func:`usable_cpus`), at most 4."""
    return min(4, usable_cpus())
