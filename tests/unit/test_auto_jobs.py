"""--jobs not given: serial for a small run (processes cost more than they save), processes for a large one."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from inspector.cli import main
from invariants.gate.executor import AUTO_BYTES, AutoExecutor

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def _run(executor: AutoExecutor, items: list[int]) -> tuple[list, list[str]]:
    said: list[str] = []
    executor.said = said.append
    with closing(executor):
        got = sorted(executor.imap(str, items))
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
