"""Compare a recorded request with its reconstruction.

The walk stops at the first difference per part (messages, then each header
field) and names its JSON path and region (prefix, derived history, suffix).
Structural equality decides; a difference only in key order is reported
apart, because it changes the bytes and busts provider prefix caches.
deepdiff is asked for the full picture only once a difference exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .jsonvalue import MISSING, exact_bytes, first_difference, get_path, join_path, key_order_difference, shorten
from .replay import Expected

HEADER_FIELDS = ("model", "system", "tools", "temperature", "maxTokens", "stop")
SOFT_FIELDS = ("provider", "reasoningEffort")  # spread from config; upstream does not compare them
KNOWN_FIELDS = frozenset({"messages", *HEADER_FIELDS, *SOFT_FIELDS})


@dataclass
class Difference:
    code: str  # DIV001 | DIV002 | DIV010 | DIV011
    path: str
    message: str
    detail: dict = field(default_factory=dict)


def _absent_as_empty(value: Any, empty: Any) -> Any:
    return empty if value is MISSING else value


def _field_difference(name: str, expected: Any, recorded: Any) -> str | None:
    """Path of a structural header-field difference, following upstream's absent rules."""
    if name == "tools":
        return first_difference(_absent_as_empty(expected, []), _absent_as_empty(recorded, []), "tools")
    if name == "system":
        e, r = _absent_as_empty(expected, ""), _absent_as_empty(recorded, "")
        return first_difference(e, r, "system")
    # model, temperature, maxTokens, stop: absent equals only absent.
    return first_difference(expected, recorded, name)


def deep_summary(expected: Any, recorded: Any, limit: int = 8) -> dict:
    """A compact deepdiff report: counts per change kind and the first few paths."""
    from deepdiff import DeepDiff  # deferred: only paid for when a difference exists

    try:
        diff = DeepDiff(expected, recorded, verbose_level=1, ignore_order=False, cutoff_intersection_for_pairs=1)
    except Exception as exc:  # deepdiff on hostile data must not take the report down
        return {"error": f"deepdiff failed: {type(exc).__name__}"}
    out: dict = {}
    for kind, entries in diff.items():
        items = list(entries.items()) if isinstance(entries, dict) else [(e, None) for e in entries]
        out[kind] = {"count": len(items), "paths": [str(k).replace("root", "", 1) for k, _ in items[:limit]]}
    return out


def compare(expected: Expected, recorded: dict) -> list[Difference]:
    out: list[Difference] = []
    exp_msgs = expected.request["messages"]
    rec_msgs = recorded.get("messages", MISSING)
    same = _same_bytes(exp_msgs, rec_msgs)
    path = None if same else first_difference(exp_msgs, rec_msgs, "messages")
    if same:
        pass
    elif path is not None:
        index = _message_index(path)
        region = expected.region(index) if index is not None else "messages"
        origin = None
        if region == "derived" and index is not None and index - expected.prefix_len < len(expected.origins):
            origin = expected.origins[index - expected.prefix_len]
        e_val, r_val = get_path({"messages": exp_msgs}, path), get_path({"messages": rec_msgs}, path)
        where = {"prefix": "the session prefix", "derived": "the derived history", "suffix": "the message suffix",
                 "beyond": "messages the log does not have"}.get(region, "the message list")
        msg = f"messages diverge from the log's reconstruction at {path} (in {where}"
        msg += f", from event seq {origin})" if origin is not None else ")"
        msg += f": expected {shorten(e_val, 80)}, recorded {shorten(r_val, 80)}"
        out.append(Difference("DIV001", path, msg, {
            "region": region, "message_index": index, "source_seq": origin,
            "expected": shorten(e_val, 400), "recorded": shorten(r_val, 400),
            "expected_count": len(exp_msgs), "recorded_count": len(rec_msgs) if isinstance(rec_msgs, list) else None,
            "deepdiff": deep_summary(exp_msgs, rec_msgs),
        }))
    else:
        order = key_order_difference(exp_msgs, rec_msgs, "messages")
        if order is not None:
            out.append(_order_difference(order, exp_msgs, rec_msgs, "messages"))
    for name in HEADER_FIELDS:
        e, r = expected.request.get(name, MISSING), recorded.get(name, MISSING)
        if e is not MISSING and _same_bytes(e, r):
            continue
        p = _field_difference(name, e, r)
        if p is not None:
            e_val, r_val = get_path({name: e}, p), get_path({name: r}, p)
            out.append(Difference("DIV010", p, f"{name} diverges from the folded header at {p}: header {shorten(e_val, 80)}, recorded {shorten(r_val, 80)}",
                                  {"field": name, "expected": shorten(e_val, 400), "recorded": shorten(r_val, 400)}))
        elif name == "tools" and e is not MISSING and r is not MISSING:
            order = key_order_difference(e, r, "tools")
            if order is not None:
                out.append(_order_difference(order, e, r, "tools"))
    for name in SOFT_FIELDS:
        e, r = expected.request.get(name, MISSING), recorded.get(name, MISSING)
        if e is not MISSING and first_difference(e, r) is not None:
            out.append(Difference("DIV011", name, f"{name} {shorten(r, 60)} differs from the header config's {shorten(e, 60)}",
                                  {"field": name, "expected": shorten(e, 200), "recorded": shorten(r, 200)}))
    for name in recorded:
        if name not in KNOWN_FIELDS:
            out.append(Difference("DIV011", join_path("", name), f"recorded request carries {name}={shorten(recorded[name], 60)}, which the log has no account of",
                                  {"field": name}))
    return out


def _same_bytes(a: Any, b: Any) -> bool:
    """Byte-identical JSON: equal in content and key order; decided without a Python walk."""
    if b is MISSING:
        return False
    ba = exact_bytes(a)
    return ba is not None and ba == exact_bytes(b)


def _order_difference(path: str, expected: Any, recorded: Any, root: str) -> Difference:
    e, r = get_path({root: expected}, path), get_path({root: recorded}, path)
    ek = list(e) if isinstance(e, dict) else []
    rk = list(r) if isinstance(r, dict) else []
    return Difference("DIV002", path, f"same content, different key order at {path}: expected keys {ek}, recorded {rk} (bytes differ; provider prefix caches miss)",
                      {"expected_keys": ek, "recorded_keys": rk})


def _message_index(path: str) -> int | None:
    if not path.startswith("messages["):
        return None
    try:
        return int(path[len("messages[") : path.index("]")])
    except ValueError:
        return None
