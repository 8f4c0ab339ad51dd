"""Where the per-unit half of a check runs: here, or in a pool of worker processes.

An executor maps a top-level function over picklable items and returns the
results in item order.  The pipeline gives it :func:`invariants.gate.unit.run_unit`
over units (JSON-able in, JSON-able out), or replays over the sources of one
unit; any class with the same ``map`` (a Dask client, say) can stand in.
"""

from __future__ import annotations

import os
from typing import Callable, Protocol, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    jobs: int  # how many items it works on at once

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...


class SerialExecutor:
    """Every item in this process, one after the other."""

    jobs = 1

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(x) for x in items]


class ProcessExecutor:
    """A pool of ``jobs`` worker processes, started for each ``map``."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        if self.jobs == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        from concurrent.futures import ProcessPoolExecutor  # not on a serial run's import path

        workers = min(self.jobs, len(items))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(fn, items, chunksize=max(1, len(items) // (workers * 8))))


def executor_for(jobs: int) -> Executor:
    """``jobs`` 1: serial; 0 or less: one process per CPU; N: N processes."""
    n = jobs if jobs > 0 else (os.cpu_count() or 1)
    return SerialExecutor() if n == 1 else ProcessExecutor(n)
