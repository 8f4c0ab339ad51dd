"""Verdicts side by side, request counts and one-shot placement (invariants.analysis.verdicts)."""

from __future__ import annotations

from pathlib import Path

from invariants import check
from invariants.analysis.verdicts import Verdicts, one_shot_steps, request_counts, verdicts
from invariants.gate.result import RequestCheck
from invariants.read.capture import Recorded

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def _check(status: str, **extra) -> RequestCheck:
    return RequestCheck(status=status, recorded=Recorded("requests.jsonl", 1, {}, extra=extra))


def test_ours_beside_the_harness_and_where_they_disagree():
    agree = verdicts(_check("ok", verdict="ok", shadowVerdict="ok"))
    assert agree == Verdicts("ok", "ok", "ok", False)
    violated = "invariant violated: llm request diverges"
    assert not verdicts(_check("diverges", verdict=violated)).disagree
    assert verdicts(_check("diverges", verdict="ok")).disagree  # we say it diverges, the harness said ok
    assert verdicts(_check("ok", verdict=violated)).disagree
    assert verdicts(_check("header", verdict="unchecked", shadowVerdict="ok")).disagree  # the shadow check said ok
    assert not verdicts(_check("ok", verdict="unchecked")).disagree
    assert not verdicts(_check("one-shot", verdict="ok")).disagree  # never ours to judge
    assert verdicts(_check("ok", verdict=3)) == Verdicts("ok", None, None, False)


def test_counts_say_how_many_were_compared_and_how_many_are_one_shots():
    assert request_counts([_check("ok")] * 7 + [_check("one-shot")] * 2) == "9 recorded: 7 compared, 2 one-shot"
    assert request_counts([_check("diverges"), _check("unexplained")]) == "2 recorded: 1 compared, 1 unexplained"
    assert request_counts([]) == "0 recorded: 0 compared"


def test_the_sample_one_shots_sit_under_the_steps_they_name():
    result = check([SAMPLES / "compaction.jsonl"], keep_models=True)
    model = result.models[0]
    assert request_counts(model.requests) == "9 recorded: 7 compared, 2 one-shot"
    placed = one_shot_steps(model.requests, model.steps)
    named = {i: [(rc.recorded.turn, rc.recorded.step) for rc in rcs] for i, rcs in placed.items()}
    assert {(model.steps[i].turn, model.steps[i].step): v for i, v in named.items()} == {
        (1, 4): [(1, 4)],
        (2, 1): [(2, 1)],
    }


def test_a_one_shot_without_turn_and_step_goes_by_log_length_or_nowhere():
    class St:
        def __init__(self, index, seq):
            self.index, self.seq, self.turn, self.step = index, seq, 1, index + 1

    steps = [St(0, 2), St(1, 10)]
    by_length = RequestCheck(status="one-shot", recorded=Recorded("r", 1, {}, log_length=12, loop_built=False))
    nowhere = RequestCheck(status="one-shot", recorded=Recorded("r", 2, {}, log_length=0, loop_built=False))
    assert one_shot_steps([by_length, nowhere, _check("ok")], steps) == {1: [by_length], None: [nowhere]}
