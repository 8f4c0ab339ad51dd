"""Blame of a rebuilt request (invariants.analysis.blame): each part names the event that last set it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from invariants.analysis.blame import blame_request, header_differences, inside, marked
from invariants.model.jsonvalue import MISSING
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.conftest import CORPUS
from tests.support.logs import Log, seq_of, skills_prefix, story_header

T52 = CORPUS / "upstream-seed-era" / "support__invariants__invariants" / "t52"


def _blamed(log: Log, tmp_path: Path, step: int = -1) -> dict[str, tuple[int | None, str, str]]:
    path = log.write(tmp_path / "s.jsonl")
    model = replay(LogSource(path, tmp_path))
    st = model.steps[step]
    exp = model.rebuild_request(st, st.first_chunk_seq)
    assert exp is not None
    return {bl.path: (bl.seq, bl.event, bl.region) for bl in blame_request(model, exp)}


def _two_step_log() -> Log:
    """Step 1.1: an initial snapshot (prefix, temperature 0.2). Step 1.2: a tool result, then a delta that
    changes the temperature and adds a tool; the system prompt and the prefix stay from the snapshot."""
    log = Log(cwd="/w")
    h0 = story_header(skills_prefix(["notes"]), temperature=0.2)
    log.user_turn("count the files")
    log.step_start(1, 1)
    log.snapshot("initial", h0)
    c = log.chunk(1, 1, "looking")
    log.assistant(1, 1, [{"type": "text", "text": "looking"}], [c])
    call = log.tool_call(1, 1, "c1", "bash")
    log.tool_result(1, 1, "c1", call, text="12")
    log.step_end(1, 1)
    h1 = copy.deepcopy(h0)
    h1["config"]["temperature"] = 0.7
    h1["tools"] = h1["tools"] + [{"name": "edit", "description": "Edit.", "parameters": {"type": "object"}}]
    log.streamed_step("There are 12.", delta_to=h1)
    log.end_turn()
    return log


def test_each_part_names_the_event_that_last_set_it(tmp_path):
    log = _two_step_log()
    blamed = _blamed(log, tmp_path)
    snap = seq_of(log, "request/header")
    delta = seq_of(log, "request/header-delta")
    assert blamed["model"] == (snap, "request/header (initial snapshot)", "config")
    assert blamed["system"] == (snap, "request/header (initial snapshot)", "system")
    assert blamed["temperature"] == (delta, "request/header-delta", "config")
    # the tools the snapshot set stay its; the one the delta added is the delta's
    assert [blamed[f"tools[{i}]"][0] for i in range(3)] == [snap, snap, delta]
    assert blamed["messages[0]"] == (snap, "request/header (initial snapshot)", "prefix")
    assert blamed["messages[1]"] == (seq_of(log, "user/message"), "user/message", "derived")
    assert blamed["messages[2]"] == (seq_of(log, "assistant/message"), "assistant/message", "derived")
    assert blamed["messages[3]"] == (seq_of(log, "tool/result"), "tool/result", "derived")
    assert list(blamed) == [
        "model",
        "system",
        "tools[0]",
        "tools[1]",
        "tools[2]",
        *[f"messages[{i}]" for i in range(4)],
        "temperature",
    ]


def test_the_first_step_is_all_the_snapshot_and_the_history(tmp_path):
    log = _two_step_log()
    blamed = _blamed(log, tmp_path, step=0)
    snap = seq_of(log, "request/header")
    assert {p: b[0] for p, b in blamed.items() if b[2] != "derived"} == {
        "model": snap,
        "system": snap,
        "tools[0]": snap,
        "tools[1]": snap,
        "messages[0]": snap,
        "temperature": snap,
    }


def test_a_compaction_replace_is_named_as_one(tmp_path):
    log = Log(cwd="/w")
    log.user_turn("first")
    log.streamed_step("one", header_reason="initial", header=story_header())
    log.end_turn()
    first = seq_of(log, "user/message")
    log.turn_start(2)
    summary = log.add(
        "user/message",
        {"content": [{"type": "text", "text": "summary"}], "source": {"kind": "plugin", "plugin": "compact"}},
        sourceEventSeqs=[first, first + 1],
        surfaceOp={"op": "replace", "start": first, "end": seq_of(log, "assistant/message")},
    )
    log.user(" and then?")
    log.streamed_step("two")
    log.end_turn()
    blamed = _blamed(log, tmp_path)
    assert blamed["messages[0]"] == (summary, "user/message (compaction replace)", "derived")
    assert blamed["messages[1]"][1] == "user/message"


def test_differences_mark_the_parts_they_fall_in():
    assert inside("messages[2].content[0].text", "messages[2]") and not inside("messages[12]", "messages[1]")
    from invariants.analysis.blame import BlameLine

    lines = [BlameLine(p, "", "", None, None, "") for p in ("model", "messages[0]", "messages[1]", "temperature")]
    assert marked(lines, ["messages[1].content[0].text"]) == {"messages[1]"}
    assert marked(lines, ["messages"]) == {"messages[0]", "messages[1]"}
    assert marked(lines, ["temperature"]) == {"temperature"}
    assert marked(lines, []) == set()


@pytest.mark.skipif(not T52.is_dir(), reason=f"the real corpus is not at {T52}")
def test_the_real_t52_prefix_comes_from_the_delta_at_seq_4():
    model = replay(LogSource(T52 / "req-check.jsonl", T52))
    exp = model.rebuild_request(model.steps[0], 5)
    assert exp is not None
    blamed = {bl.path: bl for bl in blame_request(model, exp)}
    assert (blamed["messages[0]"].seq, blamed["messages[0]"].event) == (4, "request/header-delta")
    assert (blamed["model"].seq, blamed["messages[1]"].seq) == (3, 1)


def test_header_differences_name_the_field_and_the_recorded_value(tmp_path):
    log = _two_step_log()
    path = log.write(tmp_path / "s.jsonl")
    model = replay(LogSource(path, tmp_path))
    st = model.steps[-1]
    exp = model.rebuild_request(st, st.first_chunk_seq)
    assert exp is not None
    assert header_differences(exp, copy.deepcopy(exp.request)) == {}
    recorded = copy.deepcopy(exp.request)
    recorded["temperature"] = 0.2
    del recorded["model"]
    recorded["messages"] = recorded["messages"][1:]  # the prefix message dropped
    found = header_differences(exp, recorded)
    assert found["config"] == [("model", MISSING), ("temperature", 0.2)]
    assert found["messagePrefix"] == [("messages[0:1]", recorded["messages"][:1])]
    assert set(found) == {"config", "messagePrefix"}
