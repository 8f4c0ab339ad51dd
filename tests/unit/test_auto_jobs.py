"""--jobs not given: serial for a small run (processes cost more than they save), a process per usable
CPU for a large one."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Iterable

import pytest

from inspector.cli import main
from invariants.gate import executor
from invariants.gate.executor import AUTO_BYTES, AutoExecutor

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def _run(auto: AutoExecutor, items: Iterable[int]) -> tuple[list, list[str]]:
    said: list[str] = []
    auto.said = said.append
    with closing(auto):
        got = sorted(auto.imap(str, items))
    return got, said


def test_a_small_run_stays_in_this_process() -> None:
    got, said = _run(AutoExecutor(jobs=2, cost=lambda x: 1000), list(range(5)))
    assert got == [(i, str(i)) for i in range(5)]
    assert said == ["--jobs chosen: 1 (5 unit(s), 0.0 MB: below 32 MB processes cost more than they save)"]


def test_a_large_run_gets_the_processes() -> None:
    got, said = _run(AutoExecutor(jobs=2, cost=lambda x: AUTO_BYTES), list(range(4)))
    assert got == [(i, str(i)) for i in range(4)]
    assert said and said[0].startswith("--jobs chosen: 2 (4 unit(s)")


def test_check_says_its_choice_with_v(capsys) -> None:
    main(["check", str(SAMPLES), "--no-cache", "--format", "json", "-v", "-q"])
    assert "--jobs chosen: 1 (" in capsys.readouterr().err


def test_check_says_what_jobs_0_is_with_v(capsys, monkeypatch) -> None:
    monkeypatch.setattr(executor, "usable_cpus", lambda: 3)
    main(["check", str(SAMPLES), "--no-cache", "--format", "json", "-v", "-q", "--jobs", "0"])
    assert "inspector: --jobs 0: 3 process(es), one per usable CPU\n" in capsys.readouterr().err


def test_a_large_run_gets_a_process_per_usable_cpu(monkeypatch) -> None:
    monkeypatch.setattr(executor, "usable_cpus", lambda: 3)
    auto = AutoExecutor(cost=lambda x: AUTO_BYTES)
    got, said = _run(auto, list(range(6)))
    assert got == [(i, str(i)) for i in range(6)]
    assert said == ["--jobs chosen: 3 (6 unit(s), 201.3 MB: a large run)"]
    assert auto.jobs == 3


def test_a_large_run_on_one_usable_cpu_stays_in_this_process(monkeypatch) -> None:
    """A container's quota of one CPU on a larger host: no worker, and -v says why."""
    monkeypatch.setattr(executor, "usable_cpus", lambda: 1)
    auto = AutoExecutor(cost=lambda x: AUTO_BYTES)
    got, said = _run(auto, list(range(4)))
    assert got == [(i, str(i)) for i in range(4)]
    assert said == ["--jobs chosen: 1 (4 unit(s), 134.2 MB: a large run, but this process may use only one CPU)"]
    assert auto.here


def test_the_cpus_are_counted_only_for_a_run_longer_than_one_workers_reach(monkeypatch) -> None:
    """A stream read ahead a reach per CPU of the host's (64 on a node whose pod may use 2) walked
    16,384 folders before a worker started; the usable CPUs set the reach, counted only when needed."""
    asked: list[int] = []
    monkeypatch.setattr(executor, "usable_cpus", lambda: asked.append(1) or 2)
    reach = executor.AHEAD * executor.BATCH_MAX
    _run(AutoExecutor(cost=lambda x: 1), iter(range(reach - 1)))
    assert asked == []
    got, said = _run(AutoExecutor(cost=lambda x: 1), iter(range(reach + 10)))
    assert got == [(i, str(i)) for i in range(reach + 10)]
    assert asked  # within two usable CPUs' reach, and small: this process
    assert said == [f"--jobs chosen: 1 ({reach + 10} unit(s), 0.0 MB: below 32 MB processes cost more than they save)"]


def _in_child(code: str, cpus: set[int] | None = None) -> str:
    """``code``'s output in a fresh interpreter, on ``cpus`` only when given (its affinity mask)."""
    prefix = f"import os; os.sched_setaffinity(0, {cpus!r}); " if cpus is not None else ""
    done = subprocess.run([sys.executable, "-c", prefix + code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs an affinity mask of 2+ CPUs"
)
def test_the_usable_cpus_follow_the_affinity_mask() -> None:
    """``taskset -c 0``: os.cpu_count() still says the machine's CPUs; --jobs 0 and index's default do not."""
    one = {min(os.sched_getaffinity(0))}
    code = (
        "from invariants.gate.executor import executor_for, usable_cpus; "
        "from inspector.index.schedule import default_jobs; "
        "print(os.cpu_count(), usable_cpus(), executor_for(0).jobs, default_jobs())"
    )
    machine, usable, jobs0, index = map(int, _in_child(code, one).split())
    assert machine >= 2
    assert (usable, jobs0, index) == (1, 1, 1)
    two = set(sorted(os.sched_getaffinity(0))[:2])
    assert _in_child("from invariants.gate.executor import usable_cpus; print(usable_cpus())", two) == "2"


def test_a_small_run_does_not_count_the_cpus() -> None:
    """Counting them imports loky (~60 ms alone): a run that stays in this process never pays for it."""
    code = (
        "import sys; from inspector.cli import main; "
        f"main(['check', {str(SAMPLES)!r}, '--no-cache', '-q', '--format', 'json']); "
        "print('loky' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr
