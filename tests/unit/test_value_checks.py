"""Unknown values do not pass silently: typed fields and enumerations per era."""

from __future__ import annotations

import pytest

from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.logs import Log


def _findings(log, tmp_path, rule: str) -> list:
    path = log.write(tmp_path / "s.jsonl")
    return [f for f in replay(LogSource(path, tmp_path)).findings if f.rule == rule]


def _seed(reason=None, trigger=None, chunk=None, source=None, status="pending", block="text") -> Log:
    log = Log()
    log.clean_turn(1, header_reason="initial")
    log.add("turn/start", {"turn": 2, "trigger": trigger or {"kind": "message", "source": {"kind": "user"}}})
    log.add(
        "user/message",
        {"content": [{"type": block, "text": "hi"}], "source": source or {"kind": "user"}},
        surfaceOp="append",
    )
    log.step_start(2, 1)
    c = [log.chunk(2, 1, t) for t in ("a", "b")]
    c.append(
        log.add(
            "assistant/chunk", {"turn": 2, "step": 1, "chunk": chunk or {"type": "finish", "reason": {"kind": "stop"}}}
        )
    )
    c.append(log.chunk(2, 1, "c"))
    log.assistant(2, 1, [{"type": "text", "text": "abc"}], c)
    log.add("todo/write", {"todos": [{"content": "x", "status": status}]})
    log.step_end(2, 1)
    log.add("turn/end", {"turn": 2, "reason": reason or {"kind": "completed"}})
    return log


def _late(reason=None, role="user", source=None, target="next-turn", msg_id="u1") -> Log:
    log = Log(era="late")
    log.add("agent/inbox/spliced", {"target": target, "start": 0, "inserted": []})
    log.turn_start(1)
    log.step_start(1, 1)
    log.add(
        "user/message",
        {"content": [{"type": "text", "text": "go"}], "source": source or {"kind": "user"}, "role": role, "id": msg_id},
        surfaceOp="append",
    )
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "text", "text": "hi"}], [c])
    log.step_end(1, 1)
    log.add("turn/end", {"turn": 1, "reason": reason or {"kind": "completed"}})
    return log


def test_the_clean_logs_give_no_value_findings(tmp_path):
    for log in (_seed(), _late()):
        path = log.write(tmp_path / "clean.jsonl")
        assert [f for f in replay(LogSource(path, tmp_path)).findings if f.rule in ("EVT011", "EVT013")] == []


@pytest.mark.parametrize(
    ("build", "field", "allowed"),
    [
        (lambda: _seed(reason={"kind": "weird"}), "reason.kind", "aborted, completed, disposed, error, interrupted"),
        (
            lambda: _seed(reason={"kind": "blocked"}),
            "reason.kind",
            "max-tokens, rejected",
        ),  # HEAD's, not the seed era's
        (lambda: _late(reason={"kind": "weird"}), "reason.kind", "aborted, blocked, completed, disposed, error"),
        (lambda: _late(reason={"kind": "rejected"}), "reason.kind", "max-tokens"),  # the seed era's, not HEAD's
        (lambda: _seed(trigger={"kind": "cron"}), "trigger.kind", "injection, message"),
        (lambda: _seed(chunk={"type": "weird-delta"}), "chunk.type", "block-end, block-start, finish"),
        (lambda: _seed(chunk={"type": "finish", "reason": {"kind": "odd"}}), "chunk.reason.kind", "stop, tool-calls"),
        (lambda: _seed(chunk={"type": "block-start", "index": 1, "blockType": "video"}), "chunk.blockType", "text"),
        (lambda: _seed(source={"kind": "robot"}), "source.kind", "plugin, user"),
        (lambda: _late(source={"kind": "robot"}), "source.kind", "goal, model, plugin"),
        (lambda: _seed(status="done"), "todos[0].status", "completed, in_progress, pending"),
        (lambda: _seed(block="video"), "content[0].type", "reasoning, text, tool-call, tool-result"),
        (lambda: _late(target="later"), "target", "next-step, next-turn"),
    ],
)
def test_an_unknown_value_is_a_warning_naming_the_field_and_the_allowed_values(tmp_path, build, field, allowed):
    (f,) = _findings(build(), tmp_path, "EVT013")
    assert f.severity == "warning" and f.path == f"data.{field}" and f.detail["field"] == field
    assert allowed in f.message and allowed.split(", ")[0] in f.detail["allowed"]


def test_a_chunk_folded_in_a_run_is_checked_at_its_own_line(tmp_path):
    log = _seed(chunk={"type": "weird-delta", "index": 0})
    (f,) = _findings(log, tmp_path, "EVT013")
    seq = next(
        e["seq"] for e in log.events if e["type"] == "assistant/chunk" and e["data"]["chunk"]["type"] == "weird-delta"
    )
    assert (f.seq, f.line, f.turn, f.step) == (seq, seq + 2, 2, 1)


@pytest.mark.parametrize(
    ("build", "path"),
    [
        (lambda: _seed(reason="completed"), "data.reason"),
        (lambda: _seed(reason={"kind": 3}), "data.reason.kind"),
        (lambda: _seed(trigger=["message"]), "data.trigger"),
        (lambda: _seed(chunk={"type": "block-end", "index": 0, "block": "text"}), "data.chunk.block"),
        (lambda: _late(role="assistant"), "data.role"),
        (lambda: _late(msg_id=""), "data.id"),
    ],
)
def test_a_mistyped_field_is_an_error(tmp_path, build, path):
    (f,) = _findings(build(), tmp_path, "EVT011")
    assert f.severity == "error" and f.path == path


def test_a_tool_call_with_non_string_arguments_is_an_error(tmp_path):
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    c = log.chunk(1, 1)
    log.assistant(1, 1, [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], [c])
    call = log.add("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": {"path": "x"}})
    log.tool_result(1, 1, "c1", call)
    log.step_end(1, 1)
    log.turn_end(1)
    (f,) = _findings(log, tmp_path, "EVT011")
    assert f.seq == call and f.path == "data.arguments"


def test_the_enumerations_other_rules_check_name_their_allowed_values(tmp_path):
    """Header reasons (HDR011), delta arms (HDR006) and surface ops (EVT002) already had rules; pin their words."""
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot("refresh")
    log.delta({"sytem": {"keepStart": 0, "keepEnd": 0, "insert": []}})
    log.add("user/message", {"content": [], "source": {"kind": "user"}}, surfaceOp="prepend")
    log.step_end(1, 1)
    log.turn_end(1)
    path = log.write(tmp_path / "s.jsonl")
    found = {f.rule: f.message for f in replay(LogSource(path, tmp_path)).findings}
    assert "refresh" in found["HDR011"] and "(fallback, initial, resume)" in found["HDR011"]
    assert "sytem" in found["HDR006"] and "system, tools, config, messagePrefix, messageSuffix" in found["HDR006"]
    assert 'surfaceOp must be "append" or {op:"replace", start, end}' in found["EVT002"]
