"""Worker processes that start clean: forked from a fork server, gone with the process that made them.

A ``--jobs`` pool (:class:`~invariants.gate.executor.ProcessExecutor`), the index's
pool and a local Dask cluster's workers all start here.  Imported only when a run
needs processes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import forkserver, parent_process
from multiprocessing.connection import wait
from typing import Any, Callable, Iterator, TypeVar

R = TypeVar("R")

WORKER_MODULES = ["invariants.gate.unit"]
"""What a fork server imports once for every pool worker: the checker."""
FORK_SERVER = "forkserver"


def start_fork_server(modules: list[str]) -> bool:
    """Start the process this one's workers are forked from, importing ``modules``; False where there
    is no fork server.  It starts once per process (its modules are the first caller's), on another
    core while this one goes on: a ``--jobs`` pool and a local Dask cluster share it.

    A worker forked from this process would inherit every lock another of its threads held at that
    moment and wait forever on the first it needs: a test run hung so, its Dask worker stuck in its
    first log line; a check's progress line is written, and its logs counted (inside SQLite, whose
    allocator takes a global mutex), by threads of their own.  The fork server is a fresh process
    with one thread that has imported the checker; a worker forked from it starts as fast and holds
    nothing.  It starts with Ctrl-C ignored, which it keeps and gives its workers: a Ctrl-C while it
    imports (the run's first second) printed its traceback, and Ctrl-C is the client's to handle."""
    if FORK_SERVER not in multiprocessing.get_all_start_methods():
        return False
    multiprocessing.get_context(FORK_SERVER).set_forkserver_preload(modules)
    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        forkserver.ensure_running()  # a no-op when this process already has one
    finally:
        if main:
            signal.signal(signal.SIGINT, before)
    return True


class _Pool(ProcessPoolExecutor):
    """A pool whose submits, which may start a worker, are not cut by Ctrl-C (:func:`_interrupt_after`)."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        with _interrupt_after():
            return super().submit(fn, *args, **kwargs)


def process_pool(
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    modules: list[str] = WORKER_MODULES,
) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes from the fork server (:func:`start_fork_server`,
    with ``modules`` when this starts it), spawned where there is none (Windows); each runs
    :func:`worker_start`, then ``initializer(*initargs)``."""
    method = FORK_SERVER if start_fork_server(modules) else "spawn"
    return _Pool(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=worker_start,
        initargs=(initializer, initargs),
    )


def worker_start(initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> None:
    """A pool worker's start.  It takes Ctrl-C as the client does (the fork server's workers start with
    it ignored): the task it runs stops at once.  And it exits when the client does: a worker waits
    for its next task on a queue it holds both ends of, so a client killed (``kill -9``, the OOM
    killer) left its workers waiting for ever; a thread waits on the client's end of the pipe the
    worker was started through instead."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    client = parent_process()
    if client is not None:
        threading.Thread(target=_exit_with, args=(client.sentinel,), name="inspector-client", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


def _exit_with(sentinel: int) -> None:
    wait([sentinel])
    os._exit(1)


@contextmanager
def _interrupt_after() -> Iterator[None]:
    """Ctrl-C in the block is raised when it ends.  A worker is started by sending the fork server
    its request and this process's queues; interrupted between the two, this process exited without
    waiting for a worker it did not know it had, whose queues were gone when it read them: a
    traceback after the run ended.  Only over Python's own handler, in the main thread."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    seen: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if seen:
        raise KeyboardInterrupt
