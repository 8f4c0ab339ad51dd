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

from invariants.model.jsonvalue import MISSING

Projector = Callable[[Any], "dict | None"]


def _tagged(tag: str, data: Any) -> dict | None:
    source = data.get("source") if isinstance(data.get("source"), dict) else {}
    kind = source.get("kind")
    opening = f"<{tag} source={json.dumps(kind, ensure_ascii=False) if kind is not None else 'undefined'}>"
    content = data.get("content")
    inner = list(content) if isinstance(content, list) else []
    return {
        "role": "user",
        "content": [{"type": "text", "text": opening}, *inner, {"type": "text", "text": f"</{tag}>"}],
    }


def _defined(**fields: Any) -> dict:
    """A JS object literal: keys whose value is undefined vanish from its JSON."""
    return {k: v for k, v in fields.items() if v is not MISSING}


# The three plain projections below are the hot ones: each writes its common case out
# (every key present) and leaves any other to _defined, with the same key order.
def _user_plain(data: Any) -> dict | None:
    if "content" in data:
        return {"role": "user", "content": data["content"]}
    return {"role": "user"}


def _assistant_plain(data: Any) -> dict | None:
    content = data.get("content")
    if isinstance(content, list) and len(content) == 0:
        return None
    if "content" in data:
        return {"role": "assistant", "content": content}
    return {"role": "assistant"}


def _tool_result_plain(data: Any) -> dict | None:
    if "callId" in data and "content" in data and "isError" not in data:
        block = {"type": "tool-result", "toolCallId": data["callId"], "content": data["content"]}
    else:
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


class LegacyIds:
    """What HEAD needs to read a pre-identity event (``coordinator.ts`` @ 611615650f).

    HEAD loads older late-era shapes by migrating them in memory before any
    derivation: a message without an identity gets ``legacy-message:<session
    id>:<seq>``, and a rewriting ``tool/result`` inherits the id of the event
    it replaces.  Requests sent after such a load carry the migrated objects.
    """

    __slots__ = ("session_id", "ids")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.ids: dict[int, Any] = {}  # seq -> message id of every identified surface event

    def mint(self, seq: int) -> str:
        return f"legacy-message:{self.session_id}:{seq}"


def _replacement_start(surface_op: Any) -> int | None:
    if isinstance(surface_op, dict) and surface_op.get("op") == "replace" and isinstance(surface_op.get("start"), int):
        return surface_op["start"]
    return None


def _head_user(
    data: Any, seq: int | None = None, legacy: LegacyIds | None = None, surface_op: Any = None
) -> dict | None:
    if "id" in data or "role" in data or "message" in data or "content" not in data or "source" not in data:
        return _message_object(data)
    if legacy is None or seq is None:
        return _user_plain(data)
    return {**data, "id": legacy.mint(seq), "role": "user"}


def _head_steering(
    data: Any, seq: int | None = None, legacy: LegacyIds | None = None, surface_op: Any = None
) -> dict | None:
    """HEAD reads a removed steering/message as the user/message it migrates to."""
    wrapped = data.get("message")
    if isinstance(wrapped, dict) and set(data) == {"turn", "message"}:
        return wrapped
    if legacy is None or seq is None:
        return _user_plain(data)
    rest = {k: v for k, v in data.items() if k != "turn"}
    return {**rest, "id": legacy.mint(seq), "role": "user"}


def _head_assistant(
    data: Any, seq: int | None = None, legacy: LegacyIds | None = None, surface_op: Any = None
) -> dict | None:
    if "message" in data:
        return _wrapped_message(data)
    if legacy is None or seq is None or "content" not in data or "provenance" not in data:
        return _assistant_plain(data)
    content = data["content"]
    if isinstance(content, list) and len(content) == 0:
        return None
    provenance = data["provenance"] if isinstance(data["provenance"], dict) else {}
    return {"id": legacy.mint(seq), "role": "assistant", "content": content, "source": {**provenance, "kind": "model"}}


def _head_tool_result(
    data: Any, seq: int | None = None, legacy: LegacyIds | None = None, surface_op: Any = None
) -> dict | None:
    if "message" in data:
        return _wrapped_message(data)
    if legacy is None or seq is None or not all(k in data for k in ("callId", "content", "isError")):
        return _tool_result_plain(data)
    start = _replacement_start(surface_op)
    msg_id = legacy.mint(seq) if start is None else legacy.ids.get(start)
    block = {
        "type": "tool-result",
        "toolCallId": data["callId"],
        "content": data["content"],
        "isError": data["isError"],
    }
    return _defined(
        id=msg_id if msg_id is not None else MISSING,
        role="user",
        content=[block],
        source={"kind": "tool", "callId": data["callId"]},
    )


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
# HEAD (6816e8a3d5+): stored message objects.  Older late shapes are read the
# way HEAD's loader migrates them (with LegacyIds); context/message is not
# HEAD vocabulary at all (its loader refuses the log), so it projects plainly.
HEAD: dict[str, Projector] = {
    **LATE_UNWRAPPED,
    "user/message": _head_user,
    "steering/message": _head_steering,
    "assistant/message": _head_assistant,
    "tool/result": _head_tool_result,
}
_CONTEXT_AWARE = frozenset({_head_user, _head_steering, _head_assistant, _head_tool_result})

PROJECTIONS: dict[str, dict[str, Projector]] = {
    "seed": SEED,
    "late-early": LATE_EARLY,
    "late-unwrapped": LATE_UNWRAPPED,
    "head": HEAD,
}


def project(
    projection: dict[str, Projector],
    event_type: str,
    data: Any,
    seq: int | None = None,
    legacy: LegacyIds | None = None,
    surface_op: Any = None,
) -> dict | None:
    """The message for one surface event; None for events that carry none or bad data.

    ``seq``, ``legacy`` and ``surface_op`` matter only to the HEAD projection
    of pre-identity shapes; without them such events project plainly.  When
    ``legacy`` is given, the message id of every projected event is recorded
    in it (a later rewrite inherits it).
    """
    fn = projection.get(event_type)
    if fn is None or not isinstance(data, dict):
        return None
    if fn in _CONTEXT_AWARE:
        msg = fn(data, seq, legacy, surface_op)
        if legacy is not None and seq is not None and isinstance(msg, dict) and "id" in msg:
            legacy.ids[seq] = msg["id"]
        return msg
    return fn(data)
