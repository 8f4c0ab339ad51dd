"""The seed-era projection of each surface event type, and the surface fold."""

from __future__ import annotations

from invariants.replay.derive import PROJECTIONS, project
from invariants.replay.surface import Surface

SEED = PROJECTIONS["seed"]
TEXT = [{"type": "text", "text": "hi"}]


def test_user_message_drops_source():
    assert project(SEED, "user/message", {"content": TEXT, "source": {"kind": "user"}}) == {
        "role": "user",
        "content": TEXT,
    }


def test_assistant_message_drops_usage_and_skips_empty_content():
    assert project(SEED, "assistant/message", {"turn": 1, "step": 1, "content": TEXT, "usage": {"inputTokens": 3}}) == {
        "role": "assistant",
        "content": TEXT,
    }
    assert project(SEED, "assistant/message", {"turn": 1, "step": 1, "content": [], "usage": {}}) is None


def test_tool_result_becomes_a_user_tool_result_block():
    msg = project(
        SEED, "tool/result", {"turn": 1, "step": 1, "callId": "c1", "content": TEXT, "isError": False, "meta": {"x": 1}}
    )
    assert msg == {
        "role": "user",
        "content": [{"type": "tool-result", "toolCallId": "c1", "content": TEXT, "isError": False}],
    }
    assert list(msg["content"][0]) == ["type", "toolCallId", "content", "isError"]


def test_context_and_steering_are_wrapped_with_their_source_kind():
    ctx = project(SEED, "context/message", {"content": TEXT, "source": {"kind": "plugin", "plugin": "hooks"}})
    assert ctx == {
        "role": "user",
        "content": [
            {"type": "text", "text": '<context source="plugin">'},
            *TEXT,
            {"type": "text", "text": "</context>"},
        ],
    }
    steer = project(SEED, "steering/message", {"turn": 1, "content": TEXT, "source": {"kind": "user"}})
    assert steer["content"][0]["text"] == '<steering source="user">' and steer["content"][-1]["text"] == "</steering>"


def test_log_only_events_project_to_nothing():
    for t in ("turn/start", "assistant/chunk", "request/header", "compact/summary", "plugin/x"):
        assert project(SEED, t, {"turn": 1}) is None


def test_unwrapped_late_profiles_project_context_plainly():
    assert project(PROJECTIONS["late-unwrapped"], "context/message", {"content": TEXT, "source": {"kind": "user"}}) == {
        "role": "user",
        "content": TEXT,
    }


def test_surface_replace_is_positional_and_keeps_history_positions():
    s = Surface()
    for seq in (1, 5, 9, 12):
        s.append(seq, {"m": seq})
    before = s.position()
    assert s.check_replace(5, 9).shadowed == [5, 9]
    s.replace(20, 5, 9, {"m": "summary"})
    assert s.nodes == [1, 20, 12]
    assert s.messages_at(before)[0] == [{"m": 1}, {"m": 5}, {"m": 9}, {"m": 12}]
    assert s.messages_at(s.position())[1] == [1, 20, 12]
    assert not s.check_replace(12, 1).ok  # start after end
    assert not s.check_replace(5, 12).ok  # 5 is no longer on the surface
    assert s.position_before(13) == before
    assert s.position_before(21) == s.position()
