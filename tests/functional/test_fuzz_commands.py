"""Issue 34: the fuzz run reaches every command that reads a log, and the fault kinds of the hostile audit.

A CI slice of ``benchmarks/fuzz_long.py --faults --tui N``: the long run's generated inputs through
``reduce`` (no traceback, input unchanged, its repro complete or absent) and the TUI headless (it opens and
quits), and each fault kind around such an input (a FIFO or device named like a log, a symlink loop, an
--output hard-linked to the log, a full disk, a kill -9 mid-write)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.functional.test_fuzz import SEEDS, fuzz
from tests.support.fuzz_cases import random_case, write_case
from tests.support.fuzz_faults import FAULTS, fault_case, run_fault_case, run_reduce, run_tui
from tests.support.fuzz_structured import structured_case


def _judge(outcome, bad) -> None:
    assert bad is None, f"{bad}\n{outcome.tb}\nexit {outcome.code}\nstderr: {outcome.err[-2000:]}"


@fuzz(12)
@given(st.integers(0, 2**32), st.booleans())
def test_reduce_takes_every_input_check_takes(rng_seed, structured):
    rng = random.Random(rng_seed)
    case = structured_case(rng)[0] if structured else random_case(rng, SEEDS)[0]
    if case.target == ".":
        case.target = next(n for n in case.files if ".jsonl" in n and ".requests." not in n)
    case.command = "reduce"
    with tempfile.TemporaryDirectory(prefix="fuzz-") as d:
        _judge(*run_reduce(case, Path(d)))


@pytest.mark.parametrize("fault", FAULTS)
@fuzz(3)
@given(st.integers(0, 2**32))
def test_each_fault_kind_around_generated_inputs(fault, rng_seed):
    case, _ = fault_case(random.Random(rng_seed), SEEDS)
    case.extra = [f"fault:{fault}"]
    with tempfile.TemporaryDirectory(prefix="fuzz-") as d:
        _judge(*run_fault_case(case, Path(d)))


@fuzz(4)
@given(st.integers(0, 2**32))
def test_the_tui_opens_and_quits_on_generated_inputs(rng_seed):
    case = random_case(random.Random(rng_seed), SEEDS)[0]
    with tempfile.TemporaryDirectory(prefix="fuzz-") as d:
        _judge(*run_tui(write_case(case, Path(d) / "in"), 60))
