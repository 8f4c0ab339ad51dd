"""Worker processes that start clean: forked from a fork server.

A local Dask cluster's workers start here.  Imported only when a run needs processes.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from multiprocessing import forkserver

FORK_SERVER = "forkserver"


def start_fork_server(modules: list[str]) -> bool:
    """Start the process this one's workers are forked from, importing ``modules``; False where there
    is no fork server.  It starts once per process (its modules are the first caller's), on another
    core while this one goes on.

    A worker forked from this process would inherit every lock another of its threads held at that
    moment (the event loop writing a log line, a progress bar drawing) and wait forever on the first
    it needs: a test run hung so, its worker stuck in its first log line.  The fork server is a fresh process
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
