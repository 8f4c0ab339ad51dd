"""A fast path for expanding well-formed packed chunk rows.

:func:`invariants.read.chunk_rows.expand_row` validates a row field by field and
explains what is wrong; this module handles the common, valid case with a
few C-level checks and comprehensions, and returns None whenever anything is
unusual, so the caller falls back to the validating decoder (and its
messages).  For every row it accepts, the result equals ``expand_row``'s.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any, TypeGuard

_MAX = 2**53 - 1
_TEXT = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta"}
_TEXT_KEYS = ("turn", "step", "index", "dt", "texts")
_TOOL_KEYS = ("turn", "step", "index", "dt", "id", "args")
_TOOL_KEYS_NAMED = ("turn", "step", "index", "dt", "id", "name", "args")


def _int_list(values: Any) -> TypeGuard[list[int]]:
    return type(values) is list and all(type(v) is int for v in values)


def expand_row_fast(row: dict) -> list[dict] | None:
    """The ``assistant/chunk`` events of a plain, valid row, or None to take the slow path."""
    if len(row) != 4:
        return None
    tag = row.get("type")
    seq0, time0, data = row.get("seq0"), row.get("time0"), row.get("data")
    if type(seq0) is not int or type(time0) is not int or type(data) is not dict:
        return None
    turn, step, index = data.get("turn"), data.get("step"), data.get("index")
    if type(turn) is not int or type(step) is not int or type(index) is not int:
        return None
    dt = data.get("dt")
    kind = _TEXT.get(tag) if type(tag) is str else None
    if kind is not None:
        if len(data) != 5 or not all(k in data for k in _TEXT_KEYS):
            return None
        members = data["texts"]
    elif tag == "tool-call-chunks":
        named = len(data) == 7
        if not all(k in data for k in (_TOOL_KEYS_NAMED if named else _TOOL_KEYS)) or len(data) not in (6, 7):
            return None
        call_id = data["id"]
        if type(call_id) is not str or (named and type(data["name"]) is not str):
            return None
        members = data["args"]
    else:
        return None
    if type(members) is not list or not members or not all(type(m) is str for m in members):
        return None
    n = len(members)
    if not _int_list(dt) or len(dt) != n - 1 or not 0 <= seq0 <= _MAX - n + 1 or abs(time0) > _MAX:
        return None
    if dt and (max(dt) > _MAX or min(dt) < -_MAX):
        return None
    times = list(accumulate(dt, initial=time0))
    if times and (max(times) > _MAX or min(times) < -_MAX):
        return None
    seqs = range(seq0, seq0 + n)
    if kind is not None:
        return [
            {
                "type": "assistant/chunk",
                "seq": s,
                "time": t,
                "data": {"turn": turn, "step": step, "chunk": {"type": kind, "index": index, "text": m}},
            }
            for s, t, m in zip(seqs, times, members)
        ]
    if named:
        name = data["name"]
        return [
            {
                "type": "assistant/chunk",
                "seq": s,
                "time": t,
                "data": {
                    "turn": turn,
                    "step": step,
                    "chunk": {
                        "type": "tool-call-delta",
                        "index": index,
                        "id": call_id,
                        "name": name,
                        "argumentsDelta": m,
                    },
                },
            }
            for s, t, m in zip(seqs, times, members)
        ]
    return [
        {
            "type": "assistant/chunk",
            "seq": s,
            "time": t,
            "data": {
                "turn": turn,
                "step": step,
                "chunk": {"type": "tool-call-delta", "index": index, "id": call_id, "argumentsDelta": m},
            },
        }
        for s, t, m in zip(seqs, times, members)
    ]
