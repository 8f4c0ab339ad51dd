"""Where the per-unit half of a check runs: here, or in a pool of worker processes.

An executor maps a top-level function over picklable items and returns the
results in item order.  The pipeline gives it :func:`invariants.gate.unit.run_unit`
over units (JSON-able in, JSON-able out), or replays over the sources of one
unit, with each item's estimated cost (bytes to read) so it can schedule the
big ones first; any class with the same ``map`` (a Dask client, say) can
stand in.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from functools import cache
from itertools import chain, islice
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, TypeVar

from invariants.gate.unit import lost_result

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """What the pipeline maps over.  An executor may also say whether its items run in this process
    (``here``, true when it does not say): what a unit replayed here leaves cyclic the pipeline frees
    before the next one, a young-generation pass a client of workers need not pay for."""

    @property
    def jobs(self) -> int:
        """How many items it works on at once."""
        ...

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]: ...


def completed(
    executor: Executor, fn: Callable[[T], R], items: Iterable[T], costs: Sequence[int] | None = None
) -> Iterator[tuple[int, R]]:
    """``(item index, result)`` as the executor finishes them: its ``imap`` when it has one (the results
    stream back, none is held for the others), else its ``map`` in item order."""
    imap = getattr(executor, "imap", None)
    if imap is not None:
        yield from imap(fn, items, costs)
    else:
        yield from enumerate(executor.map(fn, items if isinstance(items, Sequence) else list(items), costs))


def in_order(results: Iterable[tuple[int, R]]) -> Iterator[R]:
    """The results of :func:`completed` in item order, each as soon as every item before it has come:
    holds only the results that arrived ahead of an unfinished item (an executor bounds how many)."""
    held: dict[int, R] = {}
    due = 0
    for i, result in results:
        held[i] = result
        while due in held:
            yield held.pop(due)
            due += 1


class SerialExecutor:
    """Every item in this process, one after the other."""

    jobs = 1
    here = True

    def close(self) -> None:
        pass

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]:
        return [fn(x) for x in items]

    def imap(
        self, fn: Callable[[T], R], items: Iterable[T], costs: Sequence[int] | None = None
    ) -> Iterator[tuple[int, R]]:
        for i, x in enumerate(items):
            yield i, fn(x)


class ProcessExecutor:
    """A pool of ``jobs`` worker processes, started by the first ``map`` that needs one and kept for the
    next (a check's units, then its fork pass) until :meth:`close`: workers forked once, while this
    process is small, are not forked again from it at the end of a run, with its memory and start-up.
    Close it, or use it as a context manager.

    Items go to the workers in batches: the costliest alone and first, the
    small ones grouped (about a quarter of a worker's share per batch), so no
    worker is left with a big folder at the end and a small folder does not
    cost a round trip of its own.  A worker that dies (``kill -9``, the OOM
    killer) costs the run only the item it dies on again, alone (:meth:`_alone`).  When no worker
    process can be started (the machine is out of processes or memory), the run goes on in this
    process, and ``notes`` says so once (:meth:`_unstarted`): the results are the same, only slower.
    """

    def __init__(
        self,
        jobs: int,
        initializer: Callable[..., None] | None = None,
        initargs: tuple = (),
        batch: int = 0,
        lost: Callable[[Callable, Any, str], Any] = lost_result,
    ) -> None:
        self.jobs = max(1, jobs)
        self.lost = lost  # the result of an item whose worker died on its own, as DaskExecutor's
        self._init = initializer, initargs  # what each worker runs as it starts
        self.batch = batch or BATCH_MAX  # a stream's items a batch at most (jobs * AHEAD batches are read ahead)
        self._pool: Any = None  # a concurrent.futures.ProcessPoolExecutor, once one was needed
        self._workers = 0  # its processes
        self.notes: list[str] = []  # what the caller should say about the run (no worker could start)
        self._no_workers = False  # since then, every item runs here

    @property
    def here(self) -> bool:
        """Items run in this process (one worker; a run of one item runs here too, with nothing after it)."""
        return self.jobs == 1

    def close(self) -> None:
        """Stop the workers (a task not started is cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def idle(self) -> None:
        """No work for a while: the workers stop now (a later ``map`` starts them again)."""
        self.close()

    def __enter__(self) -> "ProcessExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]:
        out: list = [None] * len(items)
        for i, result in self.imap(fn, items, costs):
            out[i] = result
        return out

    def imap(
        self, fn: Callable[[T], R], items: Iterable[T], costs: Sequence[int] | None = None
    ) -> Iterator[tuple[int, R]]:
        """``(index, result)`` as batches finish; ``items`` may be a stream (read as batches are sent).

        At most ``jobs * AHEAD`` batches are out at a time, and none starts more than that many
        batches past the oldest unfinished one, so the caller's reorder window holds a few batches,
        never the run."""
        head, rest = _head(items, self.jobs * AHEAD * self.batch)
        if self.jobs == 1 or (rest is None and len(head) <= 1):
            for i, x in enumerate(chain(head, rest or ())):
                yield i, fn(x)
            return
        if self._no_workers:
            yield from enumerate(_here(fn, chain(head, rest or ())))
            return
        from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, wait  # not on a serial run's path
        from concurrent.futures.process import BrokenProcessPool

        from invariants.gate.process_pool import process_pool

        if self._pool is None:  # (a later map uses these workers, however many it would have started)
            self._workers = self.jobs if rest is not None else min(self.jobs, len(head))
        workers = self._workers
        batches = _batches(head, rest, costs, workers, self.batch)
        ahead = workers * AHEAD
        running: dict = {}  # future -> (batch number, its items' indexes, its items)
        try:
            done: set[int] = set()
            oldest = 0  # the first batch not yet given back
            k = 0
            more = True
            while more or running:
                while more and k - oldest < ahead:
                    batch = next(batches, None)
                    if batch is None:
                        more = False
                        break
                    sent = [x for _, x in batch]
                    indexes = [i for i, _ in batch]
                    try:
                        if self._pool is None:  # made here: where processes cannot be had, this fails too
                            self._pool = process_pool(workers, *self._init)
                        future = self._pool.submit(run_batch, fn, sent)
                    except BrokenProcessPool as exc:  # a worker died since the last result: this batch is lost too
                        future = Future()
                        future.set_exception(exc)
                    except OSError as exc:  # a worker could not be started: the rest of the run, here
                        yield from self._unstarted(fn, exc, running, (indexes, sent), batches)
                        return
                    running[future] = (k, indexes, sent)
                    k += 1
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                broken: list[tuple[int, list[int], list]] = []  # batches a dead worker's pool failed
                for future in finished:
                    b, indexes, sent = running.pop(future)
                    try:
                        got = future.result()
                    except BrokenProcessPool:
                        broken.append((b, indexes, sent))
                        continue
                    yield from zip(indexes, got)
                    done.add(b)
                if broken:
                    # The pool is broken: every batch still out fails with it, unless it finished first.
                    wait(running, return_when=ALL_COMPLETED)
                    for future, (b, indexes, sent) in list(running.items()):
                        del running[future]
                        if future.exception() is None:
                            yield from zip(indexes, future.result())
                            done.add(b)
                        else:
                            broken.append((b, indexes, sent))
                    self._pool.shutdown(wait=False, cancel_futures=True)
                    self._pool = None
                    for b, indexes, sent in sorted(broken, key=lambda one: one[0]):
                        yield from zip(indexes, self._alone(fn, sent))
                        done.add(b)
                while oldest in done:
                    done.discard(oldest)
                    oldest += 1
        finally:
            if running:  # the caller stopped early, or Ctrl-C: what has not started never will.
                # Closing lets the pool's own thread cancel them.  Cancelled here instead, on Python
                # 3.11, they made that thread fail once a worker left (Ctrl-C reaches workers too),
                # and the process waited for ever at exit for workers no one stopped.
                self.close()

    def _unstarted(
        self,
        fn: Callable[[T], R],
        exc: OSError,
        running: dict,
        failed: tuple[list[int], list],
        batches: Iterator[list[tuple[int, T]]],
    ) -> Iterator[tuple[int, R]]:
        """A worker could not be started: the pool is let go, and every batch it had not finished, the
        one it failed to take and every later one run here, in order.  None is a suspect (no worker
        died on it), and a report checked here is the one the workers would have given."""
        from invariants.gate.process_pool import abandon

        if self._pool is not None:
            abandon(self._pool)
        self._pool = None
        self._no_workers = True
        self.notes.append(
            f"no worker process could be started ({type(exc).__name__}: {exc}); the run went on in this process"
        )
        for future, (_, indexes, sent) in sorted(running.items(), key=lambda one: one[1][0]):
            if future.done() and not future.cancelled() and future.exception() is None:
                yield from zip(indexes, future.result())
            else:
                yield from zip(indexes, _here(fn, sent))
        running.clear()
        for indexes, sent in chain([failed], (([i for i, _ in b], [x for _, x in b]) for b in batches)):
            yield from zip(indexes, _here(fn, sent))

    def _alone(self, fn: Callable[[T], R], items: list[T]) -> Iterator[R]:
        """The results of ``items`` a worker died among (killed, or out of memory), each on a worker of
        its own: an item whose worker dies again is ``lost`` (its problem lines: exit 2), the others
        are checked as usual, and no item is ever run in this process, which it could take down too."""
        from concurrent.futures.process import BrokenProcessPool

        from invariants.gate.process_pool import abandon, process_pool

        pool = None
        try:
            for x in items:
                try:
                    if pool is None:
                        pool = process_pool(1, *self._init)
                    got = pool.submit(run_batch, fn, [x]).result()[0]
                except BrokenProcessPool:
                    if pool is not None:
                        pool.shutdown(wait=False, cancel_futures=True)
                    pool = None
                    got = self.lost(fn, x, "its worker process ended abruptly")
                except OSError as exc:  # not run here: it may be what killed the worker
                    if pool is not None:
                        abandon(pool)
                    pool = None
                    got = self.lost(fn, x, f"its worker process ended abruptly, and no other could start: {exc}")
                yield got
        finally:
            if pool is not None:
                pool.shutdown(wait=True)


def _here(fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
    """``fn`` over ``items`` in this process, each as a worker runs it (:func:`run_batch`)."""
    for x in items:
        yield run_batch(fn, [x])[0]


def _head(items: Iterable[T], n: int) -> tuple[list[T], Iterator[T] | None]:
    """The first ``n`` items, and the rest (None when there is no more: the whole run is known)."""
    if isinstance(items, Sequence):
        return list(items), None
    it = iter(items)
    head = list(islice(it, n))
    if len(head) < n:
        return head, None
    return head, it


def _batches(
    head: list[T], rest: Iterator[T] | None, costs: Sequence[int] | None, workers: int, size: int
) -> Iterator[list[tuple[int, T]]]:
    """Batches of ``(index, item)``: a known run split by :func:`batches_in_order`; a stream in
    ``size`` consecutive items."""
    if rest is None:
        for indexes in batches_in_order(list(costs) if costs is not None else [1] * len(head), workers):
            yield [(i, head[i]) for i in indexes]
        return
    numbered: Iterator[tuple[int, T]] = enumerate(chain(head, rest))
    while batch := list(islice(numbered, size)):
        yield batch


AHEAD = 4  # batches per worker in flight (and the reorder window's reach, in batches)
BATCH_MAX = 64  # items per batch at most: a batch's results come back (and are held) together


def batches_in_order(costs: list[int], workers: int, per_worker: int = 4) -> list[list[int]]:
    """Item indexes in batches of consecutive items (the report's order, so the reorder window stays
    small), each closing at ``1 / (workers * per_worker)`` of the total cost or :data:`BATCH_MAX` items;
    an item costlier than a batch's share is a batch of its own and goes first, so no worker is left
    with a big folder at the end."""
    target = max(1, sum(costs) // (workers * per_worker))
    big = [[i] for i in sorted(range(len(costs)), key=lambda i: -costs[i]) if costs[i] >= target]
    bigs = {b[0] for b in big}
    batches: list[list[int]] = []
    batch: list[int] = []
    weight = 0
    for i, c in enumerate(costs):
        if i in bigs:
            continue
        batch.append(i)
        weight += c
        if weight >= target or len(batch) >= BATCH_MAX:
            batches.append(batch)
            batch, weight = [], 0
    if batch:
        batches.append(batch)
    return big + batches


def batches_by_cost(costs: list[int], workers: int, per_worker: int = 4) -> list[list[int]]:
    """Item indexes in batches, costliest first; a batch closes at ``1 / (workers * per_worker)`` of the total."""
    order = sorted(range(len(costs)), key=lambda i: -costs[i])
    target = max(1, sum(costs) // (workers * per_worker))
    batches: list[list[int]] = []
    batch: list[int] = []
    weight = 0
    for i in order:
        batch.append(i)
        weight += costs[i]
        if weight >= target:
            batches.append(batch)
            batch, weight = [], 0
    if batch:
        batches.append(batch)
    return batches


def run_batch(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """A worker's task (a pool process or a Dask worker): ``fn`` over a few items with the cyclic
    collector paused as in a serial run, and what each item leaves cyclic freed after it, scanning
    only what the item allocated and still holds, so a worker's memory does not grow
    with the items it has done.  Nothing is frozen: a worker's own heap (Dask's) is never rescanned."""
    from invariants.gate.collector import collect_young
    from invariants.gate.process_pool import unless_stopped

    was = gc.isenabled()
    gc.disable()
    try:
        out = []
        for x in items:
            out.append(unless_stopped(fn, x))  # (Ctrl-C in a pool worker: KeyboardInterrupt, sent back as the result)
            collect_young()
        return out
    finally:
        if was:
            gc.enable()


AUTO_BYTES = 32 << 20  # a run smaller than this is checked in this process: workers cost more than they save


@cache
def usable_cpus() -> int:
    """The CPUs this process may run on: the machine's, or fewer under an affinity mask (``taskset``, a
    cpuset) or a container's CPU quota (cgroups v1 and v2: ``docker --cpus``, a Kubernetes limit).
    ``os.cpu_count()`` says the host's in both cases, and a worker per host CPU on a quota of two
    costs a worker's memory each and runs no faster.  loky (joblib's process pool) reads all three."""
    from loky import cpu_count  # ~25 ms to import beside a pool: only a run that goes parallel asks

    return int(cpu_count())


class AutoExecutor:
    """``--jobs`` not given: one process per usable CPU (:func:`usable_cpus`), or this process alone when
    the run is small or may use one CPU.

    The stream's first ``jobs * AHEAD * BATCH_MAX`` items are read before deciding: when the run ends
    within them and costs less than :data:`AUTO_BYTES` (``cost(item)``: bytes to read), starting worker
    processes and sending results back would cost more than it saves (~0.3 s a worker to start, against
    ~50 MB/s of checking on one core), so it runs here.  ``jobs``: the processes of a large run (default:
    the usable CPUs, counted only once the run is longer than one worker's share of that head).
    ``said`` hears the choice."""

    def __init__(self, jobs: int | None = None, cost: Callable[[object], int] | None = None) -> None:
        self._asked = jobs
        self._pool: ProcessExecutor | None = None
        self.cost = cost
        self.said: Callable[[str], None] | None = None
        self.chosen: int | None = None

    @property
    def pool(self) -> ProcessExecutor:
        """The workers of a large run, made (not started) when first asked for."""
        if self._pool is None:
            self._pool = ProcessExecutor(self._asked or usable_cpus())
        return self._pool

    @property
    def jobs(self) -> int:
        """The processes of a large run (asking counts the usable CPUs)."""
        return self.pool.jobs

    @property
    def here(self) -> bool:
        """Items run in this process: the choice was this process (before the choice, none has run)."""
        return self.chosen == 1

    @property
    def notes(self) -> list[str]:
        return self._pool.notes if self._pool is not None else []

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]:
        out: list = [None] * len(items)
        for i, r in self.imap(fn, items, costs):
            out[i] = r
        return out

    def imap(
        self, fn: Callable[[T], R], items: Iterable[T], costs: Sequence[int] | None = None
    ) -> Iterator[tuple[int, R]]:
        # A run within one worker's reach never counts the CPUs (loky's import); a longer one is read
        # ahead a reach per usable CPU before the choice.
        reach = AHEAD * BATCH_MAX
        head, rest = _head(items, reach)
        if rest is not None and self.jobs > 1:
            more, rest = _head(rest, (self.jobs - 1) * reach)
            head.extend(more)
        if self.chosen is None:
            size = None
            if rest is None:
                if costs is not None:
                    size = sum(costs)
                elif self.cost is not None:
                    size = sum(self.cost(x) for x in head)
            small = rest is None and (len(head) <= 1 or (size is not None and size < AUTO_BYTES))
            self.chosen = 1 if small else self.jobs
            if self.said is not None:
                what = f"{len(head)}{'+' if rest is not None else ''} unit(s)"
                if size is not None:
                    what += f", {size / 1e6:.1f} MB"
                if small:
                    why = f"below {AUTO_BYTES >> 20} MB processes cost more than they save"
                elif self.chosen == 1:
                    why = "a large run, but this process may use only one CPU"
                else:
                    why = "a large run"
                self.said(f"--jobs chosen: {self.chosen} ({what}: {why})")
        if self.chosen == 1:
            for i, x in enumerate(chain(head, rest or ())):
                yield i, fn(x)
            return
        yield from self.pool.imap(fn, head if rest is None else chain(head, rest), costs if rest is None else None)

    def idle(self) -> None:
        if self._pool is not None:
            self._pool.idle()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


@contextmanager
def owned(executor: Executor | None, jobs: int | None) -> Iterator[Executor]:
    """``executor`` as it is (its owner closes it), or :func:`executor_for` ``jobs``, closed after the run."""
    if executor is not None:
        yield executor
        return
    made = executor_for(jobs)
    try:
        yield made
    finally:
        made.close()


def executor_for(jobs: int | None) -> SerialExecutor | ProcessExecutor | AutoExecutor:
    """``jobs`` 1: serial; 0 or less: one process per usable CPU (:func:`usable_cpus`); N: N processes;
    None: chosen from the run (:class:`AutoExecutor`).  Close it when the run is done."""
    if jobs is None:
        return AutoExecutor()
    n = jobs if jobs > 0 else usable_cpus()
    return SerialExecutor() if n == 1 else ProcessExecutor(n)
