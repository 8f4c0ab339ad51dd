"""The process pool of a check: started once, kept from the units to the fork pass, stopped when closed."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from invariants.gate.executor import ProcessExecutor
from invariants.gate.pipeline import check_report
from tests.conftest import ROOT
from tests.support.logs import Log
from tests.support.processes import children, descendants, gone_within


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
    if i == 3:
        os._exit(3)  # a worker killed mid-task (kill -9, the OOM killer)
    return i * 10


def _lost(fn, item, reason):
    return ("lost", item, reason)


def test_a_worker_that_dies_costs_the_run_only_the_item_it_died_on() -> None:
    """A dead worker breaks the pool and fails every batch out; the run ended in a traceback.  Now those
    batches run again an item at a time, each on a worker of its own: the item whose worker dies again
    is ``lost`` (for a unit: its logs' problem lines), every other item gets its result, the rest of
    the run goes on to new workers, and a later map too."""
    with ProcessExecutor(2, batch=4, lost=_lost) as pool:
        got = dict(pool.imap(_die, iter(range(200))))
        assert got == {i: ("lost", 3, "its worker process ended abruptly") if i == 3 else i * 10 for i in range(200)}
        assert dict(pool.imap(_die, list(range(3)))) == {0: 0, 1: 10, 2: 20}
    assert not multiprocessing.active_children()


def _can_draw(_: int) -> bool:
    from inspector.progress import DRAWING

    if DRAWING.acquire(timeout=1):
        DRAWING.release()
        return True
    return False


def test_workers_started_while_a_display_draws_can_draw() -> None:
    """A worker is a fork of this process: one forked while the progress display's thread held
    stderr's lock would wait for ever on its first line to stderr.  The fork waits for the drawing."""
    from inspector.progress import DRAWING

    drawing = threading.Event()

    def draw() -> None:
        with DRAWING:
            drawing.set()
            time.sleep(0.3)

    drawer = threading.Thread(target=draw)
    drawer.start()
    drawing.wait()
    try:
        with ProcessExecutor(2) as pool:
            assert [free for _, free in pool.imap(_can_draw, iter(range(4)))] == [True] * 4
    finally:
        drawer.join()


_KILLED_CLIENT = """
import sys, time
from invariants.gate.executor import ProcessExecutor
from tests.unit.test_process_pool import _pid
pool = ProcessExecutor(2)
results = pool.imap(_pid, iter(range(100_000)))
next(results)
print("running", flush=True)
time.sleep(60)
"""


def test_workers_end_with_a_client_killed_mid_run() -> None:
    """A worker waits for its next task on a queue it holds both ends of: a client killed (kill -9,
    the OOM killer) left its workers running for ever."""
    client = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CLIENT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    tree: list[int] = []
    try:
        assert client.stdout is not None and client.stdout.readline() == "running\n"
        tree = descendants(client.pid)
        assert len(children(client.pid)) == 2
        client.kill()
        client.wait(timeout=10)
        assert gone_within(tree, 10) == []
    finally:
        if client.poll() is None:
            client.kill()
        gone_within(tree, 0)


@pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork",
    reason="workers here are started by importing the main script: a script needs the __main__ guard",
)
def test_a_script_checking_on_workers_at_its_top_level_runs(tmp_path: Path) -> None:
    """The API's example as a script, with no ``if __name__ == "__main__"``: a worker that imported
    the script first (from a fork server) started a check of its own and broke the pool."""
    from tests.conftest import SAMPLES

    script = tmp_path / "gate.py"
    script.write_text(f"from invariants import check\n\nprint(len(check({str(SAMPLES)!r}, jobs=2).findings))\n")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 0


def _slow(i: int) -> int:
    time.sleep(0.02)
    return i


def test_ctrl_c_on_the_workers_ends_their_batches_after_the_item_they_are_on(capfd) -> None:
    """A worker Ctrl-C reaches stops after the item it is on, its batch answering ``KeyboardInterrupt``;
    it does not die: one ended while it sent a result left the client waiting for the rest for ever."""
    others = {p.pid for p in multiprocessing.active_children()}  # (another test's, if any)
    with pytest.raises(KeyboardInterrupt):
        with ProcessExecutor(2) as pool:
            started = time.monotonic()
            for n, _ in enumerate(pool.imap(_slow, iter(range(20_000)))):  # 200 s of work on two workers
                if n == 0:
                    for worker in multiprocessing.active_children():
                        if worker.pid not in others:
                            os.kill(worker.pid, signal.SIGINT)
    assert time.monotonic() - started < 30
    assert {p.pid for p in multiprocessing.active_children()} <= others
    assert "Traceback" not in capfd.readouterr().err


_INTERRUPTED_CLIENT = """
import os, signal, sys
from invariants.gate.executor import ProcessExecutor
from tests.unit.test_process_pool import _slow
try:
    with ProcessExecutor(2) as pool:
        for n, _ in enumerate(pool.imap(_slow, iter(range(20_000)))):
            if n == int(sys.argv[1]):
                os.killpg(0, signal.SIGINT)  # Ctrl-C in a terminal: the client and its workers
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


@pytest.mark.parametrize("after", [0, 1, 63, 64, 200])
def test_ctrl_c_on_the_client_and_its_workers_ends_the_run_quietly(after: int) -> None:
    """On Python 3.11 a future the client cancelled in a pool a worker then left made the pool's
    thread fail, and the client waited at exit for ever; a worker waiting for a task printed its
    ``KeyboardInterrupt`` traceback."""
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_CLIENT, str(after)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.stdout == "stopped\n", done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr[-2000:]
