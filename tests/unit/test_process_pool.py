"""The process pool of a check: started once, kept from the units to the fork pass, stopped when closed."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from invariants.gate.executor import ProcessExecutor
from invariants.gate.pipeline import check_report
from tests.support.logs import Log


def _pid(_: int) -> int:
    time.sleep(0.01)  # long enough that both workers take some
    return os.getpid()


def test_a_second_map_runs_on_the_workers_of_the_first_and_close_stops_them() -> None:
    with ProcessExecutor(2) as pool:
        first = {pid for _, pid in pool.imap(_pid, iter(range(256)))}
        second = {pid for _, pid in pool.imap(_pid, iter(range(256)))}
        assert len(first) == 2 and second == first
        assert os.getpid() not in first
    assert not multiprocessing.active_children()


def test_a_map_left_early_cancels_what_has_not_started() -> None:
    with ProcessExecutor(2) as pool:
        started = time.monotonic()
        for _ in pool.imap(_pid, iter(range(2000))):
            break  # 2,000 items of 10 ms would take 10 s on two workers
    assert time.monotonic() - started < 5
    assert not multiprocessing.active_children()


def test_a_check_on_processes_leaves_no_worker_behind(tmp_path: Path) -> None:
    for i in range(6):
        parent = Log(f"parent-{i}")
        parent.clean_turn(1, header_reason="initial")
        child = parent.fork(f"child-{i}")
        child.clean_turn(2, header_reason="resume")
        parent.write(tmp_path / f"f{i}" / "b-parent.jsonl")
        child.write(tmp_path / f"f{i}" / "a-child.jsonl")
    view = check_report([tmp_path], jobs=2)
    view.close()
    assert view.session_count == 12
    assert not multiprocessing.active_children()


def _die(i: int) -> int:
    if i == 0:
        os._exit(3)  # a worker killed mid-task
    return i


def test_a_pool_a_worker_died_in_is_not_used_again() -> None:
    from concurrent.futures.process import BrokenProcessPool

    import pytest

    with ProcessExecutor(2) as pool:
        with pytest.raises(BrokenProcessPool):
            list(pool.imap(_die, iter(range(200))))
        assert sorted(i for _, i in pool.imap(abs, iter(range(200)))) == list(range(200))
    assert not multiprocessing.active_children()
