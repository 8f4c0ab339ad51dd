"""Late-era rules, each with a firing case and a clean twin (HEAD shapes: tests.support.logs.Log with era="late")."""

from __future__ import annotations

import copy

import orjson
import pytest

import invariants
from invariants import CheckOptions
from invariants.model.registry import RULES
from invariants.read.era import sniff
from invariants.read.source import LogSource
from tests.support.logs import LATE_HEADER, Log, one_turn


def check(tmp_path, log, name="late-1.jsonl", captures=True, **options):
    path = log.write(tmp_path / name)
    if captures and log.requests:
        log.write_requests(tmp_path / "requests.jsonl")
    return invariants.check([path], CheckOptions(**options), keep_models=True)


def codes(result, severity=None):
    return sorted(f.rule for f in result.findings if severity is None or f.severity == severity)


def errors(result):
    return [(f.rule, f.message) for f in result.findings if f.severity == "error"]


# -- the clean baseline --------------------------------------------------------------


def test_head_session_is_clean_and_judged_by_head(tmp_path):
    log = one_turn()
    log.turn_start(2)
    log.simple_step(2, 1, prompt="again", capture=True)
    log.turn_end(2)
    result = check(tmp_path, log)
    assert result.findings == []
    (m,) = result.models
    assert m.profile.name == "head" and m.profile.era == "late"
    assert [r.status for r in result.requests] == ["ok", "ok"]


def test_profile_override_is_applied(tmp_path):
    result = check(tmp_path, one_turn(), profile="late-unwrapped")
    assert result.models[0].profile.name == "late-unwrapped"


# -- era sniffing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines, profile",
    [
        (
            [{"type": "user/message", "data": {"content": [], "source": {"kind": "user"}, "role": "user", "id": "a"}}],
            "head",
        ),
        ([{"type": "turn/start", "data": {"turn": 1}}], "head"),
        (
            [
                {
                    "type": "request/header",
                    "data": {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "change"},
                }
            ],
            "head",
        ),
        (
            [
                {
                    "type": "request/header",
                    "data": {
                        "header": {"config": {"provider": "p", "model": "m"}, "messagePrefix": [1]},
                        "reason": "initial",
                    },
                },
                {"type": "user/message", "data": {"content": [], "source": {"kind": "user"}}},
            ],
            "late-unwrapped",
        ),
        (
            [
                {
                    "type": "request/header",
                    "data": {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "initial"},
                },
                {"type": "context/message", "data": {"content": [], "source": {"kind": "user"}, "envelope": "raw"}},
            ],
            "late-early",
        ),
        ([{"type": "request/header-delta", "data": {"system": {"keepStart": 0, "keepEnd": 0, "insert": []}}}], "seed"),
        ([{"type": "request/header", "data": {"header": {"config": {"model": "m"}}, "reason": "fallback"}}], "seed"),
        ([{"type": "user/message", "data": {"content": [], "source": {"kind": "user"}}}], "undetermined"),
    ],
)
def test_era_is_sniffed_from_shapes(tmp_path, lines, profile):
    header = {"type": "session", "version": 0, "id": "s", "createdAt": 1}
    body = [{**obj, "seq": i, "time": i} for i, obj in enumerate(lines)]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in [header, *body]))
    assert sniff(LogSource(path, tmp_path)).profile == profile


def test_late_header_fields_alone_mean_head(tmp_path):
    path = one_turn().write(tmp_path / "s.jsonl")
    assert sniff(LogSource(path, tmp_path)).era == "late"


# -- LOG011 mixed era -------------------------------------------------------------------


def _mixed(bad: bool) -> Log:
    log = one_turn()
    if bad:
        log.add("request/header", {"header": LATE_HEADER, "reason": "fallback"})
    return log


def test_log011_mixed_era_fires_and_is_judged_late(tmp_path):
    result = check(tmp_path, _mixed(True), captures=False)
    assert "LOG011" in codes(result)
    assert result.models[0].profile.era == "late"
    assert RULES["LOG011"].severity == "warning"


def test_log011_quiet_on_one_era(tmp_path):
    assert "LOG011" not in codes(check(tmp_path, _mixed(False), captures=False))


# -- HDR012 delta in a late log -----------------------------------------------------------


def test_hdr012_delta_in_late_log(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.simple_step(1, 1, prompt="hi", header_reason="initial", capture=True)
    log.step_start(1, 2)
    log.add("request/header-delta", {"system": {"keepStart": 0, "keepEnd": 0, "insert": ["new"]}})
    c = log.chunk(1, 2)
    log.assistant(1, 2, [{"type": "text", "text": "hi"}], [c])
    log.step_end(1, 2)
    log.turn_end(1)
    result = check(tmp_path, log, captures=False)
    assert "HDR012" in codes(result, "error")


def test_hdr012_quiet_without_delta(tmp_path):
    assert "HDR012" not in codes(check(tmp_path, one_turn(), captures=False))


# -- LOG007 unknown types ---------------------------------------------------------------------


@pytest.mark.parametrize("extra, fires", [({}, True), ({"ignorable": True}, False)])
def test_log007_unknown_type_needs_ignorable(tmp_path, extra, fires):
    log = Log(era="late")
    log.turn_start(1)
    log.add("plugin/thing", {"x": 1}, **extra)
    log.simple_step(1, 1, prompt="hi", header_reason="initial", capture=True)
    log.turn_end(1)
    result = check(tmp_path, log)
    assert ("LOG007" in codes(result, "error")) is fires
    assert [r.status for r in result.requests] == ["ok"]


def test_log007_known_plugin_type_outside_turn_is_fine(tmp_path):
    log = Log(era="late")
    log.add("subagent/descriptor", {"x": 1})
    log.add("approval/policy", {"policy": "never"})
    one_turn(log)
    assert errors(check(tmp_path, log)) == []


def test_log007_quiet_in_earlier_late_profiles(tmp_path):
    log = one_turn()
    log.add("compact/start", {"turn": 2})
    assert "LOG007" not in codes(check(tmp_path, log, captures=False, profile="late-unwrapped"))
    assert "LOG007" in codes(check(tmp_path, log, captures=False, profile="head"))


# -- HEAD event contract (invariant.ts @ 611615650f) ---------------------------------------------


def test_inbox_and_user_messages_outside_turns_are_fine_at_head(tmp_path):
    log = Log(era="late")
    log.add("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": []})
    log.user("queued before the turn")
    one_turn(log, "now")
    result = check(tmp_path, log)
    assert errors(result) == []
    # the same log judged by the rules before 30b89f94ff: everything turn-enclosed
    assert "EVT010" in codes(check(tmp_path, log, captures=False, profile="late-unwrapped"), "error")


def test_core_events_outside_turns_fire_at_head(tmp_path):
    log = one_turn()
    log.add("todo/write", {"todos": []})
    log.add("request/context", {"provider": "p", "model": "m"})
    result = check(tmp_path, log, captures=False)
    assert [f.seq for f in result.findings if f.rule == "EVT010"] == [log.seq - 2, log.seq - 1]


def _crash_result(code: str | None, with_call: bool, rewrite: bool = False) -> Log:
    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("hi")
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], [c])
    call = log.tool_call(1, 1, "c1") if with_call else None
    error = {"name": "X", "code": code} if code else None
    log.tool_result(1, 1, "c1", call, text="interrupted", error=error, is_error=code is not None)
    log.step_end(1, 1)
    log.turn_end(1, "interrupted")
    return log


@pytest.mark.parametrize(
    "code, with_call, fires",
    [
        ("TOOL_NOT_STARTED", False, False),  # repair result for a call that never started: exempt
        ("TOOL_OUTCOME_UNKNOWN", True, False),  # repair result answering a logged call: pairs normally
        ("TOOL_OUTCOME_UNKNOWN", False, True),  # ... so without the call it is unpaired
        (None, False, True),
    ],
)
def test_crash_repair_codes(tmp_path, code, with_call, fires):
    result = check(tmp_path, _crash_result(code, with_call), captures=False)
    assert ("EVT009" in codes(result, "error")) is fires


def test_seed_interrupted_code_is_not_head_exempt(tmp_path):
    result = check(tmp_path, _crash_result("interrupted", False), captures=False)
    assert "EVT009" in codes(result, "error")


def _rewrite(in_turn: bool) -> Log:
    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("hi")
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], [c])
    call = log.tool_call(1, 1, "c1")
    first = log.tool_result(1, 1, "c1", call, text="a very long output")
    log.step_end(1, 1)
    if not in_turn:
        log.turn_end(1)
    # a later rewrite of that result's content (compaction prune), outside any step
    msg = copy.deepcopy(log.events[first]["data"]["message"])
    msg["content"][0]["content"] = [{"type": "text", "text": "[pruned]"}]
    log.add(
        "tool/result",
        {"turn": 1, "step": 1, "message": msg},
        surfaceOp={"op": "replace", "start": first, "end": first},
        sourceEventSeqs=[first],
    )
    if in_turn:
        log.turn_end(1)
    return log


def test_tool_result_rewrite_needs_only_an_open_turn(tmp_path):
    assert errors(check(tmp_path, _rewrite(True), captures=False)) == []
    assert "EVT010" in codes(check(tmp_path, _rewrite(False), captures=False), "error")


def test_end_seed_marker_may_sit_inside_an_open_turn(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.add("session/end-seed", {})
    log.simple_step(1, 1, prompt="hi", header_reason="initial", capture=True)
    log.turn_end(1)
    assert errors(check(tmp_path, log)) == []


def test_turn_end_with_open_step_fires(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.turn_end(1)
    assert "EVT006" in codes(check(tmp_path, log, captures=False), "error")


# -- HEAD header shape (assertCurrentLlmShape) ---------------------------------------------------


@pytest.mark.parametrize(
    "config, fires",
    [
        ({"provider": "p", "model": "m"}, False),
        ({"model": "m"}, True),
        ({"provider": "p", "model": "m", "reasoningEffort": ""}, True),
    ],
)
def test_head_header_needs_provider_and_model(tmp_path, config, fires):
    log = Log(era="late")
    log.turn_start(1)
    log.simple_step(1, 1, prompt="hi", header_reason="initial", header={"config": config, "system": "s"})
    log.turn_end(1)
    result = check(tmp_path, log, profile="head")
    assert ("HDR006" in codes(result, "error")) is fires


def test_adapter_defaults_must_mark_present_fields(tmp_path):
    good = {
        "config": {"provider": "p", "model": "m", "reasoningEffort": "high"},
        "adapterDefaults": {"reasoningEffort": True},
    }
    bad = {"config": {"provider": "p", "model": "m"}, "adapterDefaults": {"reasoningEffort": True}}
    for header, fires in ((good, False), (bad, True)):
        log = Log(era="late")
        log.turn_start(1)
        log.simple_step(1, 1, prompt="hi", header_reason="initial", header=header, capture=True)
        log.turn_end(1)
        result = check(tmp_path, log)
        assert ("HDR006" in codes(result)) is fires
        assert [r.status for r in result.requests] == ["ok"]


# -- HDR015 anchor reasons in the late era ----------------------------------------------------------


def _anchors(bad: bool) -> Log:
    log = one_turn()
    log.add("session/end-seed", {})  # a new loop instance
    log.turn_start(2)
    log.simple_step(2, 1, prompt="again", header_reason="initial" if bad else "resume", capture=True)
    log.turn_end(2)
    return log


def test_hdr015_initial_after_a_fold(tmp_path):
    result = check(tmp_path, _anchors(True))
    assert "HDR015" in codes(result, "warning") and errors(result) == []


def test_hdr015_quiet_on_resume(tmp_path):
    assert "HDR015" not in codes(check(tmp_path, _anchors(False)))


def test_header_outside_a_step_is_head_legal(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.snapshot()  # written by a title plugin's own request, inside the turn, before any step
    log.simple_step(1, 1, prompt="hi", capture=True)
    log.turn_end(1)
    assert errors(check(tmp_path, log)) == []


# -- LOG017 header fields -------------------------------------------------------------------------


def test_log017_missing_delegation_depth(tmp_path):
    log = one_turn()
    del log.header["delegationDepth"]
    assert "LOG017" in codes(check(tmp_path, log), "warning")


@pytest.mark.parametrize("field, value", [("origin", "root"), ("sandboxMode", "x")])
def test_log017_refused_header_fields(tmp_path, field, value):
    log = one_turn()
    log.header[field] = value
    assert "LOG017" in codes(check(tmp_path, log))


def test_log017_quiet_on_a_current_header(tmp_path):
    log = one_turn()
    log.header.update(origin="subagent", agentPreset="minimal")
    assert "LOG017" not in codes(check(tmp_path, log))


# -- LOG015 scrubbed snapshot fixtures -------------------------------------------------------------


def _gapped(cwd: str) -> Log:
    log = Log(era="late", cwd=cwd)
    log.turn_start(1)
    log.simple_step(1, 1, prompt="hi", header_reason="initial")
    log.turn_end(1)
    del log.events[4]  # a trimmed chunk, as replay fixtures do
    return log


def test_log015_fixture_gaps_are_infos(tmp_path):
    result = check(tmp_path, _gapped("{{cwd}}/workspace"))
    assert codes(result, "error") == []
    assert "LOG015" in codes(result, "info")


def test_log015_quiet_on_a_real_cwd(tmp_path):
    result = check(tmp_path, _gapped("/home/dev/project"))
    assert "LOG015" not in codes(result)
    assert "LOG003" in codes(result, "error")


def test_log015_unframed_replay_turn(tmp_path):
    log = one_turn(Log(era="late", cwd="{{cwd}}"))
    log.user("next prompt")  # a hand-appended replay turn: chunks with no turn/step framing
    log.chunk(2, 1)
    assert codes(check(tmp_path, log, captures=False), "error") == []


# -- the HEAD request rule: derivation over the log at dispatch ----------------------------------------


def _dispatch_rule() -> Log:
    log = Log(era="late")
    log.turn_start(1)
    log.simple_step(1, 1, prompt="first", header_reason="initial", capture=True)
    log.step_start(1, 2)
    log.user("steered in after step/start")  # HEAD: joins this step's request
    log.request(1, 2)
    c = log.chunk(1, 2)
    log.assistant(1, 2, [{"type": "text", "text": "ok"}], [c])
    log.step_end(1, 2)
    log.turn_end(1)
    return log


def test_request_is_the_derivation_at_dispatch(tmp_path):
    result = check(tmp_path, _dispatch_rule())
    assert [r.status for r in result.requests] == ["ok", "ok"]


def test_boundary_rule_would_disagree(tmp_path):
    result = check(tmp_path, _dispatch_rule(), profile="late-unwrapped")
    assert "DIV001" in codes(result, "error")


def test_retries_are_compared_each_on_its_own(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("hi")
    log.snapshot()
    log.request(1, 1)
    log.add(
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "finish", "reason": {"kind": "error", "failure": {"message": "x", "code": "SERVER"}}},
        },
    )
    log.add(
        "llm/retry",
        {
            "retryId": "r",
            "turn": 1,
            "step": 1,
            "provider": "p",
            "mode": "normal",
            "policyKey": "k",
            "retry": 1,
            "maxRetries": 1,
            "delayMs": 1,
            "failure": {"message": "x", "code": "SERVER"},
        },
    )
    log.add("llm/retry-started", {"retryId": "r", "turn": 1, "step": 1, "retry": 1})
    log.request(1, 1)
    log.request(1, 1, messages=[])  # a third attempt that lost its history: diverges
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "text", "text": "ok"}], [c])
    log.step_end(1, 1)
    log.turn_end(1)
    result = check(tmp_path, log)
    assert [r.status for r in result.requests] == ["ok", "ok", "diverges"]
    assert len(result.models[0].steps[0].requests) == 3


def test_head_fold_drops_a_legacy_prefix(tmp_path):
    log = Log(era="late")
    log.turn_start(1)
    log.simple_step(
        1,
        1,
        prompt="hi",
        header_reason="initial",
        header={**LATE_HEADER, "messagePrefix": [{"role": "user", "content": []}]},
        capture=True,
    )
    log.turn_end(1)
    log.requests[0]["request"].pop("messagePrefix", None)
    result = check(tmp_path, log, profile="head")
    assert [r.status for r in result.requests] == ["ok"]


def test_pre_identity_messages_are_read_as_head_migrates_them(tmp_path):
    """A log written before 6816e8a3d5 and resumed by HEAD: its old messages get legacy ids."""
    log = Log("old", era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.snapshot()
    c = log.chunk(1, 1)
    log.add(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [{"type": "text", "text": "hello"}],
            "provenance": {"provider": "p", "model": "m"},
        },
        surfaceOp="append",
        sourceEventSeqs=[c],
    )
    log.step_end(1, 1)
    log.turn_end(1)
    log.events.insert(
        1,
        {
            "type": "user/message",
            "seq": 1,
            "time": 0,
            "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
            "surfaceOp": "append",
        },
    )
    for i, e in enumerate(log.events):
        e["seq"] = i
    log.events[-3]["sourceEventSeqs"] = [log.events[-4]["seq"]]
    log.add("session/end-seed", {})
    log.turn_start(2)
    log.step_start(2, 1)
    log.snapshot("resume")
    migrated = [
        {
            "content": [{"type": "text", "text": "hi"}],
            "source": {"kind": "user"},
            "id": "legacy-message:old:1",
            "role": "user",
        },
        {
            "id": "legacy-message:old:5",
            "role": "assistant",
            "content": [{"type": "text", "text": "hello"}],
            "source": {"provider": "p", "model": "m", "kind": "model"},
        },
    ]
    log.messages = migrated
    log.user("next")
    log.request(2, 1)
    c = log.chunk(2, 1)
    log.assistant(2, 1, [{"type": "text", "text": "ok"}], [c])
    log.step_end(2, 1)
    log.turn_end(2)
    result = check(tmp_path, log, profile="head")
    assert errors(result) == []
    assert [r.status for r in result.requests] == ["ok"]
