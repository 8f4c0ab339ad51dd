"""Worker processes on this machine: a pool's, gone with the process that made them, and the fork
server a local Dask cluster's workers start from.

A ``--jobs`` pool (:class:`~invariants.gate.executor.ProcessExecutor`) and the
index's pool start here.  Imported only when a run needs processes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver, parent_process
from multiprocessing.connection import wait
from typing import Callable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

FORK_SERVER = "forkserver"


def start_fork_server(modules: list[str]) -> bool:
    """Start the process a local Dask cluster's workers are forked from, importing ``modules``; False
    where there is no fork server.  It starts once per process, on another core while this one goes on.

    A worker forked from this process would inherit every lock another of its threads held at that
    moment (Dask's event loop writing a log line) and wait forever on the first it needs: a test run
    hung so, its worker stuck in its first log line.  The fork server is a fresh process with one
    thread that has imported Dask and the checker; a worker forked from it starts as fast and holds
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


def process_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()
) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes, each running :func:`worker_start`, then
    ``initializer(*initargs)``.

    Its workers start the platform's default way (a fork of this process on Linux up to Python
    3.13), not from the fork server: a worker from the fork server imports the caller's main script
    first, as a spawned one does, and a script calling ``check(paths, jobs=2)`` at its top level
    (the API's own example) then started a check in every worker and broke the pool.  A fork
    copies the locks this process's other threads hold: the progress display's are let go around
    every fork (:mod:`inspector.progress`), and its other threads hold none a worker takes."""
    return ProcessPoolExecutor(max_workers=workers, initializer=worker_start, initargs=(initializer, initargs))


def abandon(pool: ProcessPoolExecutor) -> None:
    """Let go of a pool that could not start a worker (the machine is out of processes or memory): the
    workers it did start are killed, not waited for, since a pool that failed while starting them has
    no thread to stop them.  (``_processes`` is the only handle on them before Python 3.14.)"""
    started = list((getattr(pool, "_processes", None) or {}).values())
    for process in started:
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in started:
        process.join(5)


def worker_start(initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> None:
    """A pool worker's start: it exits when the client does.  A worker waits for its next task on a
    queue it holds both ends of, so a client killed (``kill -9``, the OOM killer) left its workers
    waiting for ever; a thread waits on the client's end of the pipe the worker was started through
    instead.  Ctrl-C, which reaches the client too, ends the worker's batches (:func:`stop_batches`):
    one waiting for a task printed its ``KeyboardInterrupt`` traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, stop_batches)
    client = parent_process()
    if client is not None:
        threading.Thread(target=_exit_with, args=(client.sentinel,), name="inspector-client", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


def _exit_with(sentinel: int) -> None:
    wait([sentinel])
    os._exit(1)


_stopping = False  # Ctrl-C reached this pool worker (:func:`stop_batches`)


def stop_batches(signum: int, frame: object) -> None:
    """A pool worker's Ctrl-C: the batch it runs (:func:`~invariants.gate.executor.run_batch`) ends
    after the item it is on, and so does every later one, each with ``KeyboardInterrupt`` as its
    result (a task of :func:`unless_stopped` too).  Not at once: a worker ended in the middle of
    sending a result left the pool's thread in the client waiting for the rest of it, and the
    client for that thread, for ever."""
    global _stopping
    _stopping = True


def unless_stopped(fn: Callable[[T], R], item: T) -> R:
    """A pool worker's task of one item: ``fn(item)``, or ``KeyboardInterrupt`` once Ctrl-C reached the
    worker (:func:`stop_batches`)."""
    if _stopping:
        raise KeyboardInterrupt
    return fn(item)
