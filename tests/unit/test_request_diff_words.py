"""Request differences in words: classified edits, provenance of every region, windows around long strings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from invariants import check
from invariants.replay.diff_classify import ListEdit, classify_list, window_pair
from tests.support.logs import Log

PREFIX = {"role": "user", "content": [{"type": "text", "text": "<system-reminder>catalog</system-reminder>"}]}
HI = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
TOOLS = [{"name": "read", "description": "read a file"}, {"name": "bash", "description": "run a command"}]


# -- the list edit -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("expected", "recorded", "start", "edit"),
    [
        (["p", "a", "b"], ["a", "b"], 0, ListEdit("missing", 0, 0, 1)),
        (["p", "q", "a"], ["a"], 0, ListEdit("missing", 0, 0, 2)),
        (["a", "b"], ["a"], 1, ListEdit("missing", 1, 1, 1)),
        (["a"], ["x", "a"], 0, ListEdit("extra", 0, 0, 1)),
        (["a"], ["a", "x", "y"], 1, ListEdit("extra", 1, 1, 2)),
        (["p", "a", "b"], ["a", "b", "p"], 0, ListEdit("moved", 0, 2, 1, past=2)),
        (["a", "b", "p"], ["p", "a", "b"], 0, ListEdit("moved", 2, 0, 1, past=-2)),
        (["a", "b"], ["a", "c"], 1, ListEdit("changed", 1, 1)),
        (["a"], ["x"], 0, ListEdit("changed", 0, 0)),
    ],
)
def test_classify_list_names_the_edit(expected, recorded, start, edit):
    assert classify_list(expected, recorded, start) == edit


def test_classify_list_is_bounded_by_the_recorded_side():
    history = [{"role": "user", "content": str(i)} for i in range(5000)]
    assert classify_list(history, [], 0) == ListEdit("missing", 0, 0, 5000)  # no item looked at
    assert classify_list(history, history[:10] + [{"role": "user"}], 10).kind == "changed"  # a far match: not sought


def test_classify_list_compares_by_structure_not_key_order():
    assert classify_list([{"a": 1, "b": 2}, "x"], [{"b": 2, "a": 1}], 1).kind == "missing"


def test_window_pair_shows_both_long_strings_around_their_first_difference():
    head, tail = "lorem ipsum " * 40, " dolor sit amet" * 30
    e, r = window_pair(head + "cat" + tail, head + "dog" + tail, 80)
    assert "cat" in e and "dog" in r  # the differing word is on screen on both sides
    assert e.startswith('"…') and r.startswith('"…')  # neither side is cut at its start
    assert "ipsum cat" in e and "ipsum dog" in r  # with some context before the difference
    start, end, total = map(int, re.search(r"\(chars (\d+)-(\d+) of (\d+)\)$", e).groups())
    assert 0 < start < len(head) < end < total == len(head + "cat" + tail)
    assert len(e) <= 80 + 4  # within the width asked (and the ellipses)


def test_window_pair_keeps_short_strings_whole():
    assert window_pair("hi", "ho", 80) == ('"hi"', '"ho"')
    assert window_pair(1, 2, 80) == ("1", "2")


# -- findings of a check --------------------------------------------------------------
def _session(folder: Path, requests: list[dict], *, delta: dict | None = None, header: dict | None = None) -> Log:
    """Seed era, as t52: the prompt, step/start, an initial snapshot and one delta, then the captures."""
    log = Log("req-check")
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot("initial", header or {"config": {"model": "m"}})
    log.delta(delta if delta is not None else {"messagePrefix": [PREFIX]})
    log.write(folder / "req-check.jsonl")
    lines = [
        {"sessionId": "req-check", "logLength": log.seq, "turn": 1, "step": 1, "loopBuilt": True, "request": r}
        for r in requests
    ]
    log.write_requests(folder / "requests.jsonl", lines)
    return log


def _requests(folder: Path):
    result = check(folder)
    return [f for f in result.findings if f.rule.startswith("DIV")], result


def test_a_dropped_and_a_moved_prefix_read_differently_and_name_their_setter(tmp_path):
    log = _session(
        tmp_path,
        [
            {"model": "m", "messages": [PREFIX, HI]},
            {"model": "m", "messages": [HI]},
            {"model": "m", "messages": [HI, PREFIX]},
        ],
    )
    delta_seq = log.seq - 1
    dropped, moved = _requests(tmp_path)[0]
    assert dropped.message == (
        f"requests.jsonl:2: prefix message 1 of 1 (messages[0]) missing from the recorded request "
        f"(set by request/header-delta seq {delta_seq}, line {delta_seq + 2})"
    )
    assert moved.message.startswith("requests.jsonl:3: prefix placed after the derived history in the recorded request")
    for f in (dropped, moved):
        assert f.detail["source_seq"] == delta_seq and f.detail["source_event"] == "request/header-delta"
        assert f.detail["source_line"] == delta_seq + 2
        assert f.seq == 2 and f.path == "messages[0]"  # placed at the step, as before
    assert dropped.detail["edit"]["kind"] == "missing" and moved.detail["edit"]["kind"] == "moved"


def test_a_config_field_names_the_delta_that_set_it(tmp_path):
    log = _session(
        tmp_path,
        [{"model": "m", "messages": [HI], "temperature": 0.7}],
        delta={"config": {"model": "m", "temperature": 0.2}},
    )
    (f,) = _requests(tmp_path)[0]
    assert f.rule == "DIV010"
    assert f.message == (
        f"requests.jsonl:1: temperature diverges from the folded header (set by request/header-delta seq "
        f"{log.seq - 1}, line {log.seq + 1}): header 0.2, recorded 0.7"
    )
    assert f.detail["source_seq"] == log.seq - 1


def test_a_field_no_header_set_names_the_header_in_force(tmp_path):
    log = _session(tmp_path, [{"model": "m", "messages": [PREFIX, HI], "temperature": 0.7}])
    (f,) = _requests(tmp_path)[0]
    assert "not set by any header event; header in force from request/header-delta" in f.message
    assert f.detail["source_seq"] == log.seq - 1


def test_the_model_keeps_the_snapshot_as_setter_past_a_delta_that_did_not_touch_it(tmp_path):
    log = _session(tmp_path, [{"model": "other", "messages": [PREFIX, HI]}])
    (f,) = _requests(tmp_path)[0]
    snapshot_seq = log.seq - 2
    assert f"(set by request/header seq {snapshot_seq}, line {snapshot_seq + 2})" in f.message
    assert f.detail["source_seq"] == snapshot_seq


def test_a_long_system_prompt_differing_in_one_word_is_windowed_on_both_sides(tmp_path):
    system = "You are a careful assistant. " * 30
    header = {"config": {"model": "m"}, "system": system + "Answer briefly." + system}
    _session(
        tmp_path,
        [{"model": "m", "system": system + "Answer at length." + system, "messages": [PREFIX, HI]}],
        header=header,
    )
    (f,) = _requests(tmp_path)[0]
    assert "Answer briefly" in f.message and "Answer at" in f.message
    assert "Answer briefly" in f.detail["expected"] and "Answer at length" in f.detail["recorded"]


def test_a_tool_missing_from_the_recorded_request_is_named(tmp_path):
    header = {"config": {"model": "m"}, "tools": TOOLS}
    _session(tmp_path, [{"model": "m", "tools": TOOLS[:1], "messages": [PREFIX, HI]}], header=header)
    (f,) = _requests(tmp_path)[0]
    assert f.message.startswith('requests.jsonl:1: tool "bash" (tools[1]) missing from the recorded request (set by')
    assert f.path == "tools[1]"


def test_an_extra_tool_is_named(tmp_path):
    header = {"config": {"model": "m"}, "tools": TOOLS[:1]}
    _session(tmp_path, [{"model": "m", "tools": TOOLS, "messages": [PREFIX, HI]}], header=header)
    (f,) = _requests(tmp_path)[0]
    assert f.message.startswith('requests.jsonl:1: the recorded request has tool "bash" (tools[1]), which the header')
    assert f.detail["edit"]["kind"] == "extra"


def test_an_identical_request_has_no_finding(tmp_path):
    _session(tmp_path, [{"model": "m", "messages": [PREFIX, HI]}])
    findings, result = _requests(tmp_path)
    assert findings == [] and [r.status for r in result.requests] == ["ok"]


# -- counts and verdicts -----------------------------------------------------------------
def test_one_shots_are_counted_apart_from_compared_requests():
    from invariants.gate.report import summary_line
    from tests.conftest import SAMPLES

    result = check(SAMPLES / "compaction.jsonl")
    counts = result.request_counts()
    assert (counts["recorded"], counts["compared"], counts["one_shot"]) == (9, 7, 2)
    assert "9 recorded request(s): 7 compared, 2 one-shot (shown, not checked)" in summary_line(result)


def test_a_fully_compared_capture_keeps_the_short_phrase(tmp_path):
    from invariants.gate.report import summary_line

    _session(tmp_path, [{"model": "m", "messages": [PREFIX, HI]}])
    assert "1 request(s) checked: 0 error(s)" in summary_line(check(tmp_path))


def test_the_capture_verdict_is_kept_beside_ours(tmp_path):
    _session(tmp_path, [{"model": "m", "messages": [PREFIX, HI]}, {"model": "m", "messages": [HI]}])
    lines = (tmp_path / "requests.jsonl").read_text().splitlines()
    import json

    recs = [json.loads(line) for line in lines]
    recs[0]["verdict"], recs[1]["verdict"], recs[1]["shadowVerdict"] = "invariant violated: x", "unchecked", "ok"
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    result = check(tmp_path)
    first, second = result.requests
    assert (first.status, first.verdict, first.agrees) == ("ok", "invariant violated: x", False)
    assert (second.status, second.harness_verdict, second.agrees) == ("diverges", "ok", False)
    assert result.request_counts()["disagreements"] == 2
    assert first.to_json()["verdict"] == "invariant violated: x"


def test_a_capture_without_verdicts_neither_agrees_nor_disagrees(tmp_path):
    _session(tmp_path, [{"model": "m", "messages": [HI]}])
    (rc,) = check(tmp_path).requests
    assert rc.status == "diverges" and rc.agrees is None and rc.verdict is None


# -- unreadable explicit captures ----------------------------------------------------------
def test_capture_problem_names_a_missing_file_and_a_folder(tmp_path):
    from invariants.read.capture import capture_problem, capture_problems

    assert capture_problem(tmp_path / "nope.jsonl") == f"{tmp_path / 'nope.jsonl'}: capture file not found"
    assert "not a capture file" in (capture_problem(tmp_path) or "")
    (tmp_path / "ok.jsonl").write_text("")
    assert capture_problems([tmp_path / "ok.jsonl", tmp_path / "nope.jsonl"]) == [
        f"{tmp_path / 'nope.jsonl'}: capture file not found"
    ]


# -- attempts -------------------------------------------------------------------------------
def test_a_retried_step_names_the_attempt_of_each_recorded_request(tmp_path):
    import copy

    log = Log(era="late")
    log.clean_turn(1, "hi", reply="hello", header_reason="initial", capture=True)
    first = log.requests[0]
    retry = copy.deepcopy(first)
    retry["logLength"] += 1  # the retry is dispatched later in the same step
    retry["request"]["messages"][0]["content"][0]["text"] = "hi (edited)"
    log.write(tmp_path / "late-1.jsonl")
    log.write_requests(tmp_path / "requests.jsonl", [first, retry])
    result = check(tmp_path)
    assert [(r.attempt, r.status) for r in result.requests] == [(1, "ok"), (2, "diverges")]
    (f,) = [f for f in result.findings if f.rule == "DIV001"]
    assert f.message.startswith("requests.jsonl:2, attempt 2: derived message 1 of 1 changed")


def test_lines_recorded_at_one_log_length_are_not_attempts(tmp_path):
    _session(tmp_path, [{"model": "m", "messages": [HI]}, {"model": "m", "messages": [HI, PREFIX]}])
    result = check(tmp_path)
    assert [r.attempt for r in result.requests] == [None, None]
    assert all(", attempt" not in f.message for f in result.findings)
