"""A log line as JSON and as an event envelope: the parser every reader shares, the envelope and
header checks the harness's loader makes, and the :class:`Event` built from a valid envelope."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from invariants.model.jsonvalue import MAX_DEPTH, is_safe_int, is_utf8, shorten, too_deep
from invariants.model.records import ENVELOPE_KEYS, Event

MAX_SAFE = 2**53 - 1
ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})


class _Reject(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _Reject(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(data: bytes) -> tuple[Any, str | None]:
    """Parse one line; returns (value, None) or (None, reason)."""
    if too_deep(data):  # before any parser: deep enough nesting crashes orjson
        return None, f"nesting deeper than {MAX_DEPTH} levels"
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError as exc:
        first = str(exc)
    # orjson refuses some valid JSON (integers beyond 64 bits); let the
    # standard parser decide, but never accept NaN/Infinity.
    try:  # json.loads(data, parse_constant=...) without making a decoder per call
        return _DECODER.decode(data.decode(json.detect_encoding(data), "surrogatepass")), None
    except RecursionError:
        return None, "nesting is too deep"
    except (ValueError, _Reject) as exc:
        if "recursion" in first.lower():
            return None, "nesting is too deep"
        return None, _short_reason(str(exc) or first)


def _short_reason(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) < 160 else text[:157] + "…"


def envelope_problem(obj: Any) -> str | None:
    """Why ``obj`` is not a valid event envelope, or None."""
    if not isinstance(obj, dict):
        return f"line is a JSON {type(obj).__name__ if obj is not None else 'null'}, not an event object"
    t = obj.get("type")
    if not isinstance(t, str) or not t:
        return "event has no string `type`"
    extra = [k for k in obj if k not in ENVELOPE_KEYS]
    if extra:
        return f"{t} has unexpected envelope key(s) {', '.join(sorted(extra)[:5])}"
    if not is_safe_int(obj.get("seq")) or obj["seq"] < 0:
        return f"{t} has a seq that is not a safe integer >= 0: {shorten(obj.get('seq'), 40)}"
    if "time" not in obj or not is_safe_int(obj["time"]):
        return f"{t} has a time that is not a safe integer: {shorten(obj.get('time'), 40)}"
    if "data" not in obj:
        return f"{t} has no `data`"
    if "ignorable" in obj and obj["ignorable"] is not True:
        return f"{t} has `ignorable` other than true"
    return None


def header_problem(obj: Any) -> str | None:
    """Why the first line is not a valid session header, or None."""
    if not isinstance(obj, dict):
        return "first line is not a JSON object"
    if obj.get("type") != "session":
        return f'first line has type {shorten(obj.get("type"), 40)}, not "session"'
    if obj.get("version") != 0 or isinstance(obj.get("version"), bool):
        return f"unsupported format version {shorten(obj.get('version'), 40)} (only 0 is known)"
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        return "session header has no string id"
    ca = obj.get("createdAt")
    if not isinstance(ca, (int, float)) or isinstance(ca, bool) or (isinstance(ca, float) and not math.isfinite(ca)):
        return "session header createdAt is not a finite number"
    if "cwd" in obj and not isinstance(obj["cwd"], str):
        return "session header cwd is not a string"
    if "parentSession" in obj and not isinstance(obj["parentSession"], str):
        return "session header parentSession is not a string"
    if "seedLength" in obj and (not is_safe_int(obj["seedLength"]) or obj["seedLength"] < 0):
        return "session header seedLength is not an integer >= 0"
    if "delegationDepth" in obj and (not is_safe_int(obj["delegationDepth"]) or obj["delegationDepth"] < 0):
        return "session header delegationDepth is not an integer >= 0"
    return None


def is_envelope(obj: Any) -> bool:
    """Whether a parsed line is one event's envelope, as the harness writes it (a packed row is not)."""
    return (
        type(obj) is dict
        and ENVELOPE_KEYS.issuperset(obj)
        and type(obj.get("type")) is str
        and type(obj.get("seq")) is int
        and 0 <= obj["seq"] <= MAX_SAFE
        and type(obj.get("time")) is int
        and -MAX_SAFE <= obj["time"] <= MAX_SAFE
        and "data" in obj
        and obj.get("ignorable", True) is True
        and bool(obj["type"])
    )


def plain_envelope(data: bytes, seq: int) -> dict | None:
    """One complete line's event when it is the common case: not too deep to parse, valid JSON, one
    envelope, ``seq`` the seq due; else None (the general path decides what it is)."""
    if len(data) > MAX_DEPTH and too_deep(data):
        return None
    try:
        obj = orjson.loads(data)
    except ValueError:
        return None
    return obj if is_envelope(obj) and obj["seq"] == seq else None


def is_binary(data: bytes) -> bool:
    """Whether a line is not text: a NUL byte, or bytes that are not UTF-8."""
    return b"\x00" in data or not is_utf8(data)


def event_from(obj: dict, line: int, offset: int = -1) -> Event:
    """An :class:`Event` for a validated envelope object."""
    return Event(
        obj["type"],
        obj["seq"],
        obj["time"],
        obj["data"],
        obj.get("surfaceOp"),
        obj.get("sourceEventSeqs"),
        obj.get("ignorable", False) is True,
        line,
        "surfaceOp" in obj,
        "sourceEventSeqs" in obj,
        offset,
    )
