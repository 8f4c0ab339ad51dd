"""The per-unit half of a check on a Dask cluster: a task per batch of units, results in unit order.

A drop-in :class:`~invariants.gate.executor.Executor`: the pipeline maps
:func:`~invariants.gate.unit.run_unit` (or :func:`~invariants.gate.unit.replay_job`)
over it exactly as over the process pool, and the cross-session half (forks,
baselines, ordering) stays on the client, so the report is the serial one.

Units are batched (consecutive units) since most units are one small folder
whose check costs less than a task's round trip: a task costs the client
~12 ms of CPU (submit, the in-process scheduler's transitions, the result's
trip back), on the same cores as the workers on one machine, so a stream goes
in tasks of up to :data:`BATCH` units, smaller at its start so that the workers
start while it is still walked, and towards its end so that no worker
finishes long after the other (measured in docs/FLEET.md).
``batch=1`` gives one task per unit.

Failure semantics: a worker lost mid-run has its tasks re-run by the
scheduler on another worker; a task that raises is retried ``retries``
times; a task that still cannot finish (it raised every time, or it killed
every worker it ran on) becomes the problem sentence the pipeline would
give for an unreadable log (:func:`~invariants.gate.unit.lost_result`), so a
run is never hung and never silently shorter.

Dask is imported only here, and this module only when ``--scheduler`` is
given: ``import invariants`` never loads it.
"""

from __future__ import annotations

import logging
import pickle
import signal
import sys
import threading
import time
from collections import deque
from contextlib import ExitStack, contextmanager
from itertools import chain, islice
from typing import Any, Callable, Iterable, Iterator, Sequence, TextIO, TypeVar

from invariants.gate.executor import run_batch
from invariants.gate.process_pool import FORK_SERVER, start_fork_server
from invariants.gate.unit import lost_result

T = TypeVar("T")
R = TypeVar("R")

LOCAL = "local"


class SchedulerError(Exception):
    """A ``--scheduler`` value that names no usable cluster."""


class DaskExecutor:
    """Maps over the workers of a connected ``distributed.Client``.  ``interrupted``: Ctrl-C was pressed
    (:class:`_Interrupts`); the next result raises ``KeyboardInterrupt``."""

    def __init__(
        self,
        client: Any,
        retries: int = 2,
        progress: TextIO | None = None,
        progress_every: float = 2.0,
        lost: Callable[[Callable, Any, str], Any] = lost_result,
        batch: int | None = None,
    ) -> None:
        self.client = client
        self.lost = lost
        self.batch = batch  # items per task at most (None: BATCH); a short run known whole: a few tasks a worker
        self.retries = retries
        self.progress = progress
        self.progress_every = progress_every
        self.jobs = max(1, sum(client.nthreads().values()))
        self.here = False  # items run on the workers
        self.interrupted = False

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]:
        """``fn`` over ``items``, results in item order (see :meth:`imap`)."""
        results: list[Any] = [None] * len(items)
        for i, r in self.imap(fn, items, costs):
            results[i] = r
        return results

    def imap(
        self, fn: Callable[[T], R], items: Iterable[T], costs: Sequence[int] | None = None
    ) -> Iterator[tuple[int, R]]:
        """``(index, result)`` as tasks finish; a task is a batch of consecutive items.

        At most ``jobs * AHEAD`` tasks are out at a time and none more than that many past the oldest
        unfinished one, so neither the client nor the cluster holds the run's results.  ``costs``
        (the executor contract's bytes per item) is not used: the scheduler balances the batches over
        the workers as they finish."""
        from distributed import as_completed

        from invariants.gate.executor import _head

        # A short run is known whole before its first task; a long one starts as soon as its first
        # short tasks are walked (512 units, ~25 ms; waiting for a whole first round of full tasks
        # kept the workers idle for a quarter second).
        most = self.batch or BATCH
        head, rest = _head(items, self.jobs * AHEAD * max(1, most // 16))
        if not head:
            return
        size = most if rest is not None else max(1, min(most, len(head) // (self.jobs * AHEAD)))
        batches = tapered(enumerate(chain(head, rest or ())), size, self.jobs, ramp=rest is not None)
        ahead = self.jobs * AHEAD
        pending = as_completed([], with_results=False)
        keys: dict[str, tuple[int, list[tuple[int, Any]]]] = {}
        done: set[int] = set()
        oldest = submitted = finished = 0
        more = True
        started = last = time.monotonic()

        def submit() -> bool:
            batch = next(batches, None)
            if batch is None:
                return False
            # pure=False: equal batches (never the case for units, but cheap to be sure) stay two tasks
            items = pickle.dumps([x for _, x in batch], protocol=pickle.HIGHEST_PROTOCOL)
            fut = self.client.submit(_pickled_batch, fn, items, retries=self.retries, pure=False)
            keys[fut.key] = (submitted, batch)
            pending.add(fut)
            return True

        while more and submitted - oldest < ahead:
            more = submit()
            submitted += more
        for fut in pending:
            b, batch = keys.pop(fut.key)
            try:
                # Also when the status is no longer "finished": a result lost with its worker after the task
                # completed is recomputed by the scheduler, and result() waits for that.
                got = pickle.loads(fut.result())
            except Exception:
                reason = _reason(fut)
                got = [self.lost(fn, item, reason) for _, item in batch]
            fut.release()
            if self.interrupted:
                raise KeyboardInterrupt
            for (i, _), r in zip(batch, got):
                yield i, r
            finished += 1
            done.add(b)
            while oldest in done:
                done.discard(oldest)
                oldest += 1
            while more and submitted - oldest < ahead:
                more = submit()
                submitted += more
            now = time.monotonic()
            if self.progress is not None and now - last >= self.progress_every:
                last = now
                line = f"inspector: {finished}/{submitted}{'+' if more else ''} tasks ({now - started:.0f}s)"
                print(line, file=self.progress, flush=True)


AHEAD = 4  # tasks per worker thread in flight (and the reorder window's reach, in tasks)
BATCH = 1024  # units per task at most


def tapered(items: Iterator[T], size: int, jobs: int, ramp: bool = False) -> Iterator[list[T]]:
    """Consecutive ``items`` in batches of ``size`` while more than ``jobs`` batches are left, then in
    batches of about a ``2 * jobs``-th of what is left, down to a sixteenth of ``size`` (guided
    scheduling): the last tasks are short, so every worker ends at about the same time.  ``ramp``:
    the first ``jobs`` batches are a sixteenth of ``size``, each next ``jobs`` twice as long up to
    ``size``, so the first tasks leave after a few items are read, not ``size * jobs``."""
    least = max(1, size // 16)
    now = least if ramp else size
    ahead: deque[T] = deque(islice(items, now * jobs))
    made = 0
    while ahead:
        more = list(islice(items, now * jobs + now - len(ahead)))
        ahead.extend(more)
        n = now if more else min(now, max(least, -(-len(ahead) // (2 * jobs))))
        yield [ahead.popleft() for _ in range(min(n, len(ahead)))]
        made += 1
        if now < size and made % jobs == 0:
            now = min(size, now * 2)


def _pickled_batch(fn: Callable[[T], R], items: bytes) -> bytes:
    """:func:`run_batch` over pickled items, its results as one pickle: Dask measures a task's data
    (``sizeof``), and the scheduler unpickles and pickles a task's arguments again, walking every
    nested value (a unit's paths and options), a cost that bytes do not have."""
    return pickle.dumps(run_batch(fn, pickle.loads(items)), protocol=pickle.HIGHEST_PROTOCOL)


def _reason(fut: Any) -> str:
    try:
        exc = fut.exception()
    except Exception as err:  # the exception itself could not be brought back
        exc = err
    name = type(exc).__name__
    if name == "KilledWorker":
        return "its worker was lost on every attempt"
    return f"{name}: {exc}"


def parse_scheduler(value: str) -> tuple[str, int | None]:
    """``local`` / ``local:N`` -> ("local", N or None); ``tcp://HOST:PORT`` (any distributed address) -> itself."""
    if value == LOCAL or value.startswith(LOCAL + ":"):
        n = value[len(LOCAL) + 1 :]
        if not n:
            return LOCAL, None
        if not n.isdigit() or int(n) < 1:
            raise SchedulerError(f"--scheduler {value}: expected local or local:N with N >= 1")
        return LOCAL, int(n)
    if "://" not in value:
        raise SchedulerError(f"--scheduler {value}: expected tcp://HOST:PORT, local or local:N")
    return value, None


WORKER_MODULES = ["distributed", "invariants.gate.executor_dask", "invariants.gate.unit"]
"""What a fork server imports once for every local worker: Dask and the checker."""


def _local_config(fork_server: bool) -> dict[str, Any]:
    """Dask settings for a cluster on this machine, whose workers share its cores with the client.

    A worker's event loop otherwise wakes ~150 times a second (the 20 ms tick monitor, the 10 ms
    statistical profiler, the 100 ms memory monitor) and takes the GIL from the task thread each
    time; a check needs none of it.  Workers start from the fork server when one runs
    (``fork_server``: :func:`~invariants.gate.process_pool.start_fork_server` started it).  The nanny would set
    ``MALLOC_TRIM_THRESHOLD_=65536`` in this process for its workers, which makes glibc give freed
    memory back at once: workers started with it took 10 % longer on the same tasks.  The scheduler
    runs in this process and keeps its last 1,000 transitions and 10,000 log records by default,
    which grew the client with the run (64 -> 90 MB from 10,000 to 100,000 sessions); no one reads
    an ephemeral cluster's diagnostics, so it keeps a few.  Each worker runs :func:`dask_setup` as it
    starts.  Measured in docs/FLEET.md."""
    config: dict[str, Any] = {
        "distributed.worker.profile.enabled": False,
        "distributed.admin.tick.interval": "1s",
        "distributed.admin.system-monitor.interval": "5s",
        "distributed.worker.memory.monitor-interval": "1s",
        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
        "distributed.admin.low-level-log-length": 50,
        "distributed.admin.log-length": 100,
        "distributed.worker.preload": [__name__],  # dask_setup: Ctrl-C is the client's
    }
    if fork_server:
        config["distributed.worker.multiprocessing-method"] = FORK_SERVER
    return config


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, run in each local worker as it starts (``distributed.worker.preload``):
    Ctrl-C in a terminal reaches every process of the run, and is the client's to handle (it stops
    the cluster and exits 130).  A local worker that took it too printed a traceback, and one
    stopped in the middle of a task a warning that the task was cancelled, which the client knows."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed.worker.state_machine").addFilter(_not_cancelled)


def _not_cancelled(record: logging.LogRecord) -> bool:
    return "ended with CancelledError" not in record.getMessage()


@contextmanager
def dask_executor(
    scheduler: str,
    progress: TextIO | None = sys.stderr,
    lost: Callable[[Callable, Any, str], Any] = lost_result,
    batch: int | None = None,
) -> Iterator[DaskExecutor]:
    """An executor on the cluster ``scheduler`` names; a ``local`` cluster lives as long as the block.

    ``lost`` makes the result of a task that could not finish anywhere (the index passes its own);
    ``batch``: items a task at most (:class:`DaskExecutor`).
    Ctrl-C stops the block with ``KeyboardInterrupt`` (:class:`_Interrupts`)."""
    address, n = parse_scheduler(scheduler)
    with _Interrupts.caught() as interrupts:
        try:
            # started before this process imports Dask, so the two imports run side by side
            fork_server = address == LOCAL and start_fork_server(WORKER_MODULES)
        except OSError as exc:  # the machine is out of processes or memory
            raise SchedulerError(f"--scheduler {scheduler}: cannot start the cluster's processes ({exc})") from exc
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise SchedulerError(
                f"--scheduler needs dask and distributed (pip install 'dsh-inspector[fleet]'): {exc}"
            ) from exc
        if address == LOCAL:
            import dask

            with ExitStack() as stack:
                stack.enter_context(dask.config.set(_local_config(fork_server)))
                try:
                    with _nanny_errors_held():
                        cluster = LocalCluster(
                            n_workers=n,
                            processes=True,
                            threads_per_worker=1,
                            host="127.0.0.1",
                            dashboard_address=None,
                            # The scheduler's HTTP endpoints (health, metrics) still listen, by default on port
                            # 8787: when that port is taken (a user's own Dask dashboard) Dask warns on stderr.
                            # Any free port will do.
                            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                        )
                except Exception as exc:  # a worker that could not start: Nanny failed to start, from its cause
                    raise SchedulerError(f"--scheduler {scheduler}: cannot start the cluster ({_causes(exc)})") from exc
                stack.enter_context(cluster)
                client = stack.enter_context(Client(cluster))
                yield interrupts.watching(DaskExecutor(client, progress=progress, lost=lost, batch=batch))
            return
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise SchedulerError(f"--scheduler {scheduler}: cannot connect ({exc})") from exc
        with client:
            yield interrupts.watching(DaskExecutor(client, progress=progress, lost=lost, batch=batch))


@contextmanager
def _nanny_errors_held() -> Iterator[None]:
    """While a local cluster starts, a worker process that cannot start is the one line its failure
    becomes (:class:`SchedulerError`), not Dask's log record and traceback of it for each worker."""

    def held(record: logging.LogRecord) -> bool:
        return record.getMessage() != "Failed to start process"

    nanny = logging.getLogger("distributed.nanny")
    nanny.addFilter(held)
    try:
        yield
    finally:
        nanny.removeFilter(held)


def _causes(exc: BaseException) -> str:
    """``exc``, and the first error of the chain it ends, where Dask's own are between:
    "Nanny failed to start. (EOFError: unexpected EOF)"."""
    root = exc
    while (below := root.__cause__ or root.__context__) is not None:
        root = below
    return f"{type(exc).__name__}: {exc}" if root is exc else f"{exc} ({type(root).__name__}: {root})"


class _Interrupts:
    """Ctrl-C during a run on a cluster: the run stops, the cluster is closed, nothing else is said.

    - While the cluster starts, Ctrl-C is noted, not raised: raised inside Dask's start, it left a
      half-made cluster whose close failed at exit, and workers that failed to start, each with a
      traceback.  It is raised as soon as the executor is given (:meth:`watching`).
    - The in-process scheduler hooks the garbage collector (distributed's GC diagnosis), and an
      interrupt raised while such a hook runs is printed ("Exception ignored in ...") and dropped:
      the run went on to its end and wrote its report.  So the executor is marked too, and raises
      at its next result; so does leaving the block; a dropped interrupt is not printed.
    - Raised once: a second Ctrl-C while the cluster closes is only noted.

    Only in the main thread, and only over Python's own handler (an application's is left alone)."""

    def __init__(self) -> None:
        self.seen = False
        self.executor: DaskExecutor | None = None

    @classmethod
    @contextmanager
    def caught(cls) -> Iterator[_Interrupts]:
        interrupts = cls()
        ours = threading.current_thread() is threading.main_thread()
        if not ours or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield interrupts
            return
        hook = sys.unraisablehook

        def unraisable(what: Any) -> None:
            if not isinstance(what.exc_value, KeyboardInterrupt):
                hook(what)

        signal.signal(signal.SIGINT, interrupts._on_sigint)
        sys.unraisablehook = unraisable
        try:
            yield interrupts
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.unraisablehook = hook
        if interrupts.seen:
            raise KeyboardInterrupt

    def watching(self, executor: DaskExecutor) -> DaskExecutor:
        """``executor``, marked by the first Ctrl-C from now on; one noted while the cluster started is raised now."""
        self.executor = executor
        if self.seen:
            self._raise(executor)
        return executor

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.seen = True
        if self.executor is not None and not self.executor.interrupted:
            self._raise(self.executor)

    def _raise(self, executor: DaskExecutor) -> None:
        executor.interrupted = True  # raised once: a later Ctrl-C is only noted
        raise KeyboardInterrupt
