"""Where the per-unit half of a check runs: here, or in a pool of worker processes.

An executor maps a top-level function over picklable items and returns the
results in item order.  The pipeline gives it :func:`invariants.gate.unit.run_unit`
over units (JSON-able in, JSON-able out), or replays over the sources of one
unit, with each item's estimated cost (bytes to read) so it can schedule the
big ones first; any class with the same ``map`` (a Dask client, say) can
stand in.
"""

from __future__ import annotations

import os
from typing import Callable, Protocol, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    jobs: int  # how many items it works on at once

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]: ...


class SerialExecutor:
    """Every item in this process, one after the other."""

    jobs = 1

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]:
        return [fn(x) for x in items]


class ProcessExecutor:
    """A pool of ``jobs`` worker processes, started for each ``map``.

    Items go to the workers in batches: the costliest alone and first, the
    small ones grouped (about a quarter of a worker's share per batch), so no
    worker is left with a big folder at the end and a small folder does not
    cost a round trip of its own.
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def map(self, fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None) -> list[R]:
        if self.jobs == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        from concurrent.futures import ProcessPoolExecutor  # not on a serial run's import path

        workers = min(self.jobs, len(items))
        batches = batches_by_cost(list(costs) if costs is not None else [1] * len(items), workers)
        out: list = [None] * len(items)
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_apply, fn, [items[i] for i in batch]) for batch in batches]
            for batch, future in zip(batches, futures):
                for i, result in zip(batch, future.result()):
                    out[i] = result
        return out


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


def _apply(fn: Callable[[T], R], items: list[T]) -> list[R]:
    return [fn(x) for x in items]


def executor_for(jobs: int) -> Executor:
    """``jobs`` 1: serial; 0 or less: one process per CPU; N: N processes."""
    n = jobs if jobs > 0 else (os.cpu_count() or 1)
    return SerialExecutor() if n == 1 else ProcessExecutor(n)
