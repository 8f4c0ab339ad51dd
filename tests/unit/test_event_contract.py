"""The event contract's edge cases: a turn that fails with its step open, one finding per root cause.

* A late-era turn that ends in ``error``/``aborted`` with its step still open is
  what the loop writes when its own step/end append was rejected (EVT012, a
  warning); any other reason with a step open stays EVT006.
* One root cause, one finding: a misnumbered boundary, a damaged line or a
  wrong seq is reported once, the trace re-synchronises on the log's own
  numbering, and the message says how many later events the defect affects.
"""

from __future__ import annotations

import pytest

from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.damage import damage, one_finding_per_defect
from tests.support.logs import Log


def _replay(log, tmp_path, name: str = "s.jsonl"):
    path = log.write(tmp_path / name)
    return replay(LogSource(path, tmp_path))


def _errors(model) -> list:
    return [f for f in model.findings if f.severity == "error"]


# ---------------------------------------------------------------- EVT012
def _late_turn_with_open_step(reason: dict) -> Log:
    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("go")
    log.snapshot()
    c = log.chunk(1, 1, "will not close")
    log.assistant(1, 1, [{"type": "text", "text": "will not close"}], [c])
    log.add("turn/end", {"turn": 1, "reason": reason})  # the step/end append was vetoed
    return log


@pytest.mark.parametrize(
    "reason",
    [
        {"kind": "error", "error": {"message": "step close permanently rejected", "code": "UNKNOWN"}},
        {"kind": "aborted", "reason": {"kind": "user"}},
    ],
)
def test_late_turn_ending_in_failure_with_its_step_open_is_a_warning(tmp_path, reason):
    model = _replay(_late_turn_with_open_step(reason), tmp_path)
    assert _errors(model) == []
    (f,) = [f for f in model.findings if f.rule == "EVT012"]
    assert f.severity == "warning" and f.category == "event-contract"
    assert (f.seq, f.turn) == (6, 1) and reason["kind"] in f.message


@pytest.mark.parametrize("kind", ["completed", "max-tokens", "blocked"])
def test_late_turn_ending_normally_with_its_step_open_stays_an_error(tmp_path, kind):
    model = _replay(_late_turn_with_open_step({"kind": kind}), tmp_path)
    assert [f.rule for f in _errors(model)] == ["EVT006"]
    assert "EVT012" not in {f.rule for f in model.findings}


def test_late_turn_with_its_step_closed_gives_neither(tmp_path):
    log = _late_turn_with_open_step({"kind": "completed"})
    log.events.pop()
    log.step_end(1, 1)
    log.add("turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "x", "code": "UNKNOWN"}}})
    model = _replay(log, tmp_path)
    assert {f.rule for f in model.findings} & {"EVT006", "EVT012"} == set()


def test_seed_turn_ending_in_error_with_its_step_open_stays_an_error(tmp_path):
    # The seed loop retries a rejected step/end in its outer catch and lets a second
    # rejection escape without any turn/end, so no seed log can end a turn this way.
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    log.chunk(1, 1)
    log.add("turn/end", {"turn": 1, "reason": {"kind": "error", "step": 1, "message": "boom"}})
    model = _replay(log, tmp_path)
    assert [f.rule for f in _errors(model)] == ["EVT006"]


# ---------------------------------------------------------------- one root cause, one finding
def _three_turns() -> Log:
    log = Log()
    log.clean_turn(1, "one", header_reason="initial")
    log.turn_start(2)
    log.user("two")
    log.simple_step(2, 1, "a")
    log.step_start(2, 2)
    c = log.chunk(2, 2, "b")
    call = log.tool_call(2, 2, "c1")
    log.assistant(2, 2, [{"type": "text", "text": "b"}], [c])
    log.tool_result(2, 2, "c1", call)
    log.step_end(2, 2)
    log.turn_end(2)
    log.clean_turn(3, "three")
    return log


def _renumber(log: Log, seq: int, **data) -> Log:
    log.events[seq]["data"].update(data)
    return log


def test_a_misnumbered_turn_start_is_one_error_that_counts_what_it_affects(tmp_path):
    log = _three_turns()
    start = next(e["seq"] for e in log.events if e["type"] == "turn/start" and e["data"]["turn"] == 2)
    model = _replay(_renumber(log, start, turn=3), tmp_path)
    (f,) = _errors(model)
    assert (f.rule, f.seq) == ("EVT006", start)
    end = next(e["seq"] for e in log.events if e["type"] == "turn/end" and e["data"]["turn"] == 2)
    assert f.detail["affected_events"] == end - start  # every later event of the turn, up to its turn/end
    assert f"affects the {end - start} later event(s) up to seq {end}" in f.message


def test_a_turn_number_the_log_goes_on_with_is_one_error_and_affects_nothing(tmp_path):
    log = Log()
    log.clean_turn(1, "one", header_reason="initial")
    log.clean_turn(3, "skips two")
    log.clean_turn(4, "four")
    model = _replay(log, tmp_path)
    (f,) = _errors(model)
    assert f.rule == "EVT006" and "affected_events" not in f.detail


def test_a_misnumbered_step_start_is_one_error(tmp_path):
    log = _three_turns()
    start = next(e["seq"] for e in log.events if e["type"] == "step/start" and e["data"] == {"turn": 2, "step": 2})
    model = _replay(_renumber(log, start, step=3), tmp_path)
    (f,) = _errors(model)
    assert (f.rule, f.seq) == ("EVT007", start) and f.detail["affected_events"] >= 4


def test_a_misnumbered_step_end_is_one_error(tmp_path):
    log = _three_turns()
    end = next(e["seq"] for e in log.events if e["type"] == "step/end" and e["data"] == {"turn": 2, "step": 1})
    model = _replay(_renumber(log, end, step=5), tmp_path)
    assert [(f.rule, f.seq) for f in _errors(model)] == [("EVT008", end)]


def test_a_missing_turn_end_is_one_error_in_the_head_contract(tmp_path):
    log = Log(era="late")
    for turn in (1, 2, 3):
        log.turn_start(turn)
        log.step_start(turn, 1)
        log.user(f"u{turn}")
        if turn == 1:
            log.snapshot()
        c = log.chunk(turn, 1)
        log.assistant(turn, 1, [{"type": "text", "text": "hi"}], [c])
        log.step_end(turn, 1)
        if turn != 1:
            log.turn_end(turn)
    (f,) = _errors(_replay(log, tmp_path))
    assert f.rule == "EVT006" and "still open" in f.message


def test_a_non_integer_turn_start_is_one_error(tmp_path):
    log = _three_turns()
    start = next(e["seq"] for e in log.events if e["type"] == "turn/start" and e["data"]["turn"] == 2)
    (f,) = _errors(_replay(_renumber(log, start, turn="2"), tmp_path))
    assert (f.rule, f.seq) == ("EVT011", start) and f.detail["affected_events"] > 0


def test_one_damaged_line_of_a_seed_log_is_one_error(tmp_path):
    assert one_finding_per_defect(_three_turns().lines(), tmp_path) == []


def test_one_damaged_line_of_a_late_log_is_one_error(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("read it")
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], [c])
    call = log.tool_call(1, 1, "c1")
    log.tool_result(1, 1, "c1", call)
    log.step_end(1, 1)
    log.step_start(1, 2)
    c = log.chunk(1, 2, "done")
    log.assistant(1, 2, [{"type": "text", "text": "done"}], [c])
    log.step_end(1, 2)
    log.turn_end(1)
    log.turn_start(2)
    log.step_start(2, 1)
    log.user("again")
    c = log.chunk(2, 1)
    log.assistant(2, 1, [{"type": "text", "text": "hi"}], [c])
    log.step_end(2, 1)
    log.turn_end(2)
    assert one_finding_per_defect(log.lines(), tmp_path) == []


def test_a_wrong_seq_the_next_line_contradicts_is_read_at_its_place(tmp_path):
    lines = _three_turns().lines()
    lines[5] = damage(lines[5], "dupseq")
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    model = replay(LogSource(path, tmp_path))
    (f,) = _errors(model)
    assert (f.rule, f.line, f.seq) == ("LOG003", 6, 4) and "read as seq 4" in f.message
    assert model.events == len(lines) - 1


def test_a_real_seq_gap_is_still_one_gap(tmp_path):
    log = _three_turns()
    lines = log.lines()
    del lines[6:9]  # three events really missing: the seqs after the gap go on from the jump
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    (f,) = _errors(replay(LogSource(path, tmp_path)))
    assert f.rule == "LOG003" and "3 event(s) missing" in f.message


def test_a_repeated_block_of_seqs_is_one_finding(tmp_path):
    lines = _three_turns().lines()
    lines = [*lines[:12], *lines[6:12], *lines[12:]]  # six events written twice
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    (f,) = _errors(replay(LogSource(path, tmp_path)))
    assert f.rule == "LOG003" and f.line == 13 and f.detail["skipped_events"] == 6
