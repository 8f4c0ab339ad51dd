"""Packed chunk rows (LOG-FORMAT §1.4): decode them back into events, and pack
event runs into them.

A late-era log line may hold a ``text-chunks``, ``reasoning-chunks`` or
``tool-call-chunks`` row standing for a run of ``assistant/chunk`` delta
events. ``expand_row`` validates a row with the same rules as the harness
decoder and rebuilds the events (same values, same key order);
``pack_events`` is the matching encoder, used for tests and sample logs.

Numbers follow JavaScript rules where the harness does: a "safe integer" is
an integer of magnitude at most 2**53 - 1, and an integral float such as
``5.0`` counts as one (JSON cannot tell them apart); ``turn``/``step``/
``index`` only have to be numbers. ``bool`` is never a number here.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CHUNK_ROW_TYPES",
    "MAX_SAFE_INTEGER",
    "MIN_RUN",
    "ChunkRowError",
    "decode_record",
    "expand_row",
    "pack_events",
]

CHUNK_ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
MAX_SAFE_INTEGER = 2**53 - 1
#: Shortest run the encoder packs; shorter runs stay one event per line.
MIN_RUN = 3

_ROW_KEYS = ("type", "seq0", "time0", "data")
_TEXT_DATA_KEYS = ("turn", "step", "index", "dt", "texts")
_TOOL_DATA_KEYS = ("turn", "step", "index", "id", "dt", "args")
_TOOL_DATA_KEYS_NAMED = ("turn", "step", "index", "id", "name", "dt", "args")
_EVENT_KEYS = ["type", "seq", "time", "data"]
_EVENT_DATA_KEYS = ["turn", "step", "chunk"]
_TEXT_CHUNK_KEYS = ["type", "index", "text"]
_TOOL_CHUNK_KEYS = ["type", "index", "id", "argumentsDelta"]
_TOOL_CHUNK_KEYS_NAMED = ["type", "index", "id", "name", "argumentsDelta"]
_ROW_TAG_OF_KIND = {
    "text-delta": "text-chunks",
    "reasoning-delta": "reasoning-chunks",
    "tool-call-delta": "tool-call-chunks",
}
_KIND_OF_ROW_TAG = {tag: kind for kind, tag in _ROW_TAG_OF_KIND.items()}


class ChunkRowError(ValueError):
    """A value tagged as a chunk row that the harness would refuse to decode."""

    def __init__(self, tag: str | None, reason: str) -> None:
        self.tag = tag  # the row's type tag; None when the value is not tagged as a row
        self.reason = reason
        super().__init__(f"malformed {tag} chunk row: {reason}" if tag else f"not a chunk row: {reason}")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _safe_int(value: object) -> int | None:
    """``value`` as an int when JavaScript's ``Number.isSafeInteger`` holds, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value) if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    return None


def _has_keys(obj: dict, keys: tuple[str, ...]) -> bool:
    return len(obj) == len(keys) and all(key in obj for key in keys)


def expand_row(row: Any) -> list[dict]:
    """Validate one chunk row and return the ``assistant/chunk`` events it stores.

    Raises ``ChunkRowError`` (and nothing else) when ``row`` is not a
    well-formed chunk row. Expanded ``seq``/``time`` are ints; every other
    field is the row's own value.
    """
    tag = row.get("type") if isinstance(row, dict) else None
    if not isinstance(tag, str) or tag not in CHUNK_ROW_TYPES:
        raise ChunkRowError(None, "type must be one of " + ", ".join(sorted(CHUNK_ROW_TYPES)))

    def bad(reason: str) -> ChunkRowError:
        return ChunkRowError(tag, reason)

    if not _has_keys(row, _ROW_KEYS):
        raise bad("the row must have exactly the keys type, seq0, time0, data")
    seq0 = _safe_int(row["seq0"])
    if seq0 is None or seq0 < 0:
        raise bad("seq0 must be a safe integer >= 0")
    time0 = _safe_int(row["time0"])
    if time0 is None:
        raise bad("time0 must be a safe integer")
    data = row["data"]
    if not isinstance(data, dict):
        raise bad("data must be an object")
    named = False
    if tag == "tool-call-chunks":
        named = _has_keys(data, _TOOL_DATA_KEYS_NAMED)
        if not named and not _has_keys(data, _TOOL_DATA_KEYS):
            raise bad("data must have exactly the keys turn, step, index, id, name (optional), dt, args")
        if not isinstance(data["id"], str) or (named and not isinstance(data["name"], str)):
            raise bad("id, and name when present, must be strings")
        payload_key = "args"
    else:
        if not _has_keys(data, _TEXT_DATA_KEYS):
            raise bad("data must have exactly the keys turn, step, index, dt, texts")
        payload_key = "texts"
    turn, step, index = data["turn"], data["step"], data["index"]
    if not (_is_number(turn) and _is_number(step) and _is_number(index)):
        raise bad("turn, step and index must be numbers")
    members = data[payload_key]
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise bad(f"{payload_key} must be a non-empty list of strings")
    raw_dt = data["dt"]
    safe = [_safe_int(gap) for gap in raw_dt] if isinstance(raw_dt, list) else None
    if safe is None or any(gap is None for gap in safe):
        raise bad("dt must be a list of safe integers")
    gaps = [gap for gap in safe if gap is not None]
    if len(gaps) != len(members) - 1:
        raise bad(f"dt has {len(gaps)} entries but {len(members)} members need {len(members) - 1}")
    if seq0 + len(members) - 1 > MAX_SAFE_INTEGER:
        raise bad("member seqs leave the safe-integer range")
    times = [time0]
    for gap in gaps:
        times.append(times[-1] + gap)
        if abs(times[-1]) > MAX_SAFE_INTEGER:
            raise bad("member times leave the safe-integer range")

    kind = _KIND_OF_ROW_TAG[tag]
    events = []
    for j, member in enumerate(members):
        if named:
            chunk = {"type": kind, "index": index, "id": data["id"], "name": data["name"], "argumentsDelta": member}
        elif kind == "tool-call-delta":
            chunk = {"type": kind, "index": index, "id": data["id"], "argumentsDelta": member}
        else:
            chunk = {"type": kind, "index": index, "text": member}
        events.append(
            {
                "type": "assistant/chunk",
                "seq": seq0 + j,
                "time": times[j],
                "data": {"turn": turn, "step": step, "chunk": chunk},
            }
        )
    return events


def decode_record(value: Any) -> list[Any]:
    """The events one parsed log line stores: a chunk row expands, anything else is itself."""
    if isinstance(value, dict):
        tag = value.get("type")
        if isinstance(tag, str) and tag in CHUNK_ROW_TYPES:
            return expand_row(value)
    return [value]


# --- encoder -----------------------------------------------------------------


def _same(a: object, b: object) -> bool:
    """Equal and of the same type, so packing never changes a value's Python type."""
    if type(a) is not type(b) or a != b:
        return False
    return not isinstance(a, float) or str(a) == str(b)  # keeps -0.0 apart from 0.0


def _delta_kind(event: Any) -> str | None:
    """The delta kind of an event whose whole shape the encoder accepts, else None.

    Beyond the harness's whitelist, keys must be in canonical order and seq/time
    must be real ints, so an expanded row is identical to its source events.
    """
    if not isinstance(event, dict) or list(event) != _EVENT_KEYS or event["type"] != "assistant/chunk":
        return None
    seq, time = event["seq"], event["time"]
    if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER:
        return None
    if type(time) is not int or abs(time) > MAX_SAFE_INTEGER:
        return None
    data = event["data"]
    if not isinstance(data, dict) or list(data) != _EVENT_DATA_KEYS:
        return None
    if not (_is_number(data["turn"]) and _is_number(data["step"])):
        return None
    chunk = data["chunk"]
    if not isinstance(chunk, dict) or not _is_number(chunk.get("index")):
        return None
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta"):
        ok = list(chunk) == _TEXT_CHUNK_KEYS and isinstance(chunk["text"], str)
    elif kind == "tool-call-delta":
        keys = list(chunk)
        ok = (
            (keys == _TOOL_CHUNK_KEYS or (keys == _TOOL_CHUNK_KEYS_NAMED and isinstance(chunk["name"], str)))
            and isinstance(chunk["id"], str)
            and isinstance(chunk["argumentsDelta"], str)
        )
    else:
        return None
    return kind if ok else None


def _continues(prev: dict, nxt: dict, kind: str) -> bool:
    if nxt["seq"] != prev["seq"] + 1 or abs(nxt["time"] - prev["time"]) > MAX_SAFE_INTEGER:
        return False
    a, b = prev["data"], nxt["data"]
    if not (_same(a["turn"], b["turn"]) and _same(a["step"], b["step"])):
        return False
    ca, cb = a["chunk"], b["chunk"]
    if not _same(ca["index"], cb["index"]):
        return False
    if kind != "tool-call-delta":
        return True
    return ca["id"] == cb["id"] and ("name" in ca) == ("name" in cb) and ca.get("name") == cb.get("name")


def _build_row(kind: str, run: list[dict]) -> dict:
    first = run[0]
    chunk = first["data"]["chunk"]
    data: dict[str, Any] = {
        "turn": first["data"]["turn"],
        "step": first["data"]["step"],
        "index": chunk["index"],
        "dt": [b["time"] - a["time"] for a, b in zip(run, run[1:])],
    }
    if kind == "tool-call-delta":
        data["id"] = chunk["id"]
        if "name" in chunk:
            data["name"] = chunk["name"]
        data["args"] = [e["data"]["chunk"]["argumentsDelta"] for e in run]
    else:
        data["texts"] = [e["data"]["chunk"]["text"] for e in run]
    return {"type": _ROW_TAG_OF_KIND[kind], "seq0": first["seq"], "time0": first["time"], "data": data}


def pack_events(events: list[Any]) -> list[Any]:
    """Pack each run of >= ``MIN_RUN`` packable delta events into one chunk row.

    Every other value passes through verbatim (the same object), in order.
    Rows are uncapped, like the harness's JSONL writer (only its SQLite
    backend splits rows). Inputs are session events: a value already tagged
    as a chunk row would pass through and be expanded on read.
    """
    out: list[Any] = []
    kind: str | None = None
    run: list[dict] = []

    def flush() -> None:
        nonlocal kind, run
        if kind is not None and len(run) >= MIN_RUN:
            out.append(_build_row(kind, run))
        else:
            out.extend(run)
        kind, run = None, []

    for event in events:
        k = _delta_kind(event)
        if k is None:
            flush()
            out.append(event)
        elif k == kind and run and _continues(run[-1], event, k):
            run.append(event)
        else:
            flush()
            kind, run = k, [event]
    flush()
    return out
