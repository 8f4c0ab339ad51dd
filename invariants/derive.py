"""Project surface events into the messages a request carries.

The projection changed across the harness's history (LOG-FORMAT.md §6), so it
is a table keyed by profile: the seed era wraps context and steering in tagged
text blocks; later shapes drop the wrappers and finally store whole message
objects that are projected as they are.  Every function takes the event's
``data`` and returns a message dict (key order as the harness builds it) or
None when the event contributes nothing.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .jsonvalue import MISSING

Projector = Callable[[Any], "dict | None"]


def _tagged(tag: str, data: Any) -> dict | None:
    source = data.get("source") if isinstance(data.get("source"), dict) else {}
    kind = source.get("kind")
    opening = f"<{tag} source={json.dumps(kind, ensure_ascii=False) if kind is not None else 'undefined'}>"
    content = data.get("content")
    inner = list(content) if isinstance(content, list) else []
    return {"role": "user", "content": [{"type": "text", "text": opening}, *inner, {"type": "text", "text": f"</{tag}>"}]}


def _defined(**fields: Any) -> dict:
    """A JS object literal: keys whose value is undefined vanish from its JSON."""
    return {k: v for k, v in fields.items() if v is not MISSING}


def _user_plain(data: Any) -> dict | None:
    return _defined(role="user", content=data.get("content", MISSING))


def _assistant_plain(data: Any) -> dict | None:
    content = data.get("content")
    if isinstance(content, list) and len(content) == 0:
        return None
    return _defined(role="assistant", content=data.get("content", MISSING))


def _tool_result_plain(data: Any) -> dict | None:
    block = _defined(
        type="tool-result",
        toolCallId=data.get("callId", MISSING),
        content=data.get("content", MISSING),
        isError=data.get("isError", MISSING),
    )
    return {"role": "user", "content": [block]}


def _context_tagged(data: Any) -> dict | None:
    return _tagged("context", data)


def _steering_tagged(data: Any) -> dict | None:
    return _tagged("steering", data)


def _context_late(data: Any) -> dict | None:
    # 3fe196a751 .. f593ef5ab5: an optional envelope; "raw" meant no wrapper.
    if data.get("envelope") == "raw":
        return _user_plain(data)
    return _tagged("context", data)


def _message_object(data: Any) -> dict | None:
    """HEAD user/message: the data *is* the stored message object."""
    return data


def _wrapped_message(data: Any) -> dict | None:
    """HEAD assistant/message and tool/result: ``data.message`` is projected as is."""
    msg = data.get("message")
    if isinstance(msg, dict) and msg.get("role") == "assistant":
        content = msg.get("content")
        if isinstance(content, list) and len(content) == 0:
            return None
    return msg


def _head_user(data: Any) -> dict | None:
    return _message_object(data) if "role" in data else _user_plain(data)


def _head_assistant(data: Any) -> dict | None:
    return _wrapped_message(data) if "message" in data else _assistant_plain(data)


def _head_tool_result(data: Any) -> dict | None:
    return _wrapped_message(data) if "message" in data else _tool_result_plain(data)


SEED: dict[str, Projector] = {
    "user/message": _user_plain,
    "assistant/message": _assistant_plain,
    "tool/result": _tool_result_plain,
    "context/message": _context_tagged,
    "steering/message": _steering_tagged,
}

# 1123e946c0 .. 6816e8a3d5: wrappers go away in two steps (b25b78fd02, f593ef5ab5).
LATE_EARLY: dict[str, Projector] = {**SEED, "context/message": _context_late}
LATE_UNWRAPPED: dict[str, Projector] = {
    **SEED,
    "context/message": _user_plain,
    "steering/message": _user_plain,
}
# HEAD (6816e8a3d5+): stored message objects; older shapes still read plainly.
HEAD: dict[str, Projector] = {
    **LATE_UNWRAPPED,
    "user/message": _head_user,
    "assistant/message": _head_assistant,
    "tool/result": _head_tool_result,
}

PROJECTIONS: dict[str, dict[str, Projector]] = {
    "seed": SEED,
    "late-early": LATE_EARLY,
    "late-unwrapped": LATE_UNWRAPPED,
    "head": HEAD,
}


def project(projection: dict[str, Projector], event_type: str, data: Any) -> dict | None:
    """The message for one surface event; None for events that carry none or bad data."""
    fn = projection.get(event_type)
    if fn is None or not isinstance(data, dict):
        return None
    return fn(data)
