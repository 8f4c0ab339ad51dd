"""The request-header codec: canonical form, delta apply, diff and equality.

A request's non-content half (config, system prompt, tools, session prefix,
suffix) is logged as ``request/header`` snapshots and, in the seed era,
``request/header-delta`` amendments.  These are our own Python versions of
the harness's pure fold/diff/apply trio (LOG-FORMAT.md §3-§4), written over
plain dicts whose key order is the logged order, because the harness compares
tool schemas and message arrays by their JSON text.

Scrubbed test fixtures replace values by placeholders such as ``"{{system}}"``
or the *string* ``"{{tools}}"``.  Those are opaque: an arm that touches one
yields an opaque value and is never reported as un-appliable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Container

from invariants.model.jsonvalue import MISSING, js_equal, map_key

MESSAGE_ARRAYS = ("messagePrefix", "messageSuffix")
_PLACEHOLDER = re.compile(r"^\{\{[A-Za-z0-9_.-]+\}\}$")


def is_placeholder(value: Any) -> bool:
    """A scrubbed fixture token like ``"{{system}}"``."""
    return isinstance(value, str) and bool(_PLACEHOLDER.match(value))


def contains_placeholder(value: Any) -> bool:
    if is_placeholder(value):
        return True
    if isinstance(value, list):
        return any(is_placeholder(v) for v in value)
    return False


class HeaderShapeError(ValueError):
    """A header or delta payload whose shape the codec cannot interpret."""


def _non_empty(value: Any) -> bool:
    # The harness keeps a field when ``value.length > 0``: strings and arrays.
    return isinstance(value, (str, list)) and len(value) > 0


def canonical(header: dict) -> dict:
    """Canonical header: ``config`` always, other fields only when non-empty.

    Raises HeaderShapeError when the snapshot is not an object or has no
    config object, since no request could have been built from it.
    """
    if not isinstance(header, dict):
        raise HeaderShapeError("header is not an object")
    config = header.get("config", MISSING)
    if not isinstance(config, dict):
        raise HeaderShapeError("header.config is missing or not an object")
    out: dict = {"config": config}
    for key, value in header.items():
        if key == "config":
            continue
        if key == "adapterDefaults":
            if isinstance(value, dict) and any(v is True for v in value.values()):
                out[key] = value
            continue
        if _non_empty(value):
            out[key] = value
    return out


def non_canonical_fields(header: Any) -> list[str]:
    """Fields a snapshot carries that canonical form would drop (``system: ""``...)."""
    if not isinstance(header, dict):
        return []
    canon = canonical(header) if isinstance(header.get("config"), dict) else header
    return [k for k in header if k not in canon]


def call_config_equals(a: Any, b: Any, keys: tuple[str, ...] = ("model", "temperature", "maxTokens")) -> bool:
    """``callConfigEquals``: strict scalars; ``stop`` absent only equals absent."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return js_equal(a, b)
    for k in keys:
        x, y = a.get(k, MISSING), b.get(k, MISSING)
        if not strict_equal(x, y):
            return False
    sa, sb = a.get("stop", MISSING), b.get("stop", MISSING)
    if sa is MISSING or sb is MISSING:
        return sa is sb
    return js_equal(sa, sb)


def strict_equal(x: Any, y: Any) -> bool:
    """JS ``===`` on parsed JSON scalars (objects compare by JSON text here)."""
    if x is MISSING or y is MISSING:
        return x is y
    if isinstance(x, bool) or isinstance(y, bool):
        return type(x) is type(y) and x == y
    return js_equal(x, y)


def config_keys_for(a: Any, b: Any) -> tuple[str, ...]:
    """Config keys compared for equality; late-era configs add provider and effort."""
    keys: tuple[str, ...] = ("model", "temperature", "maxTokens")
    if any(isinstance(c, dict) and ("provider" in c or "reasoningEffort" in c) for c in (a, b)):
        keys += ("provider", "reasoningEffort")
    return keys


def header_equals(a: dict, b: dict) -> bool:
    """``headerEquals`` over canonical headers: config, system, arrays, tools in order."""
    ca, cb = a.get("config"), b.get("config")
    if not call_config_equals(ca, cb, config_keys_for(ca, cb)):
        return False
    if not strict_equal(a.get("system", MISSING), b.get("system", MISSING)):
        return False
    if not js_equal(a.get("adapterDefaults", {}), b.get("adapterDefaults", {})):
        return False
    for key in MESSAGE_ARRAYS:
        if not js_equal(a.get(key, []), b.get(key, [])):
            return False
    return js_equal(a.get("tools", []), b.get("tools", []))


def _lines(system: Any) -> list:
    """The system prompt's lines; a prompt that is not a string (a malformed snapshot) is one opaque line."""
    if system is MISSING:
        return []
    return system.split("\n") if isinstance(system, str) else [system]


def diff_system(prev: Any, nxt: Any) -> dict:
    a, b = _lines(prev), _lines(nxt)
    keep_start = 0
    while keep_start < len(a) and keep_start < len(b) and a[keep_start] == b[keep_start]:
        keep_start += 1
    keep_end = 0
    while (
        keep_end < len(a) - keep_start
        and keep_end < len(b) - keep_start
        and a[len(a) - 1 - keep_end] == b[len(b) - 1 - keep_end]
    ):
        keep_end += 1
    return {"keepStart": keep_start, "keepEnd": keep_end, "insert": b[keep_start : len(b) - keep_end]}


def _tool_name(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, dict) else None


def _name_key(tool: Any) -> Any:
    """A tool's name as a dict key; an object or array name (a malformed schema) matches nothing."""
    name = tool.get("name") if type(tool) is dict else None
    return name if type(name) is str else map_key(name)


def diff_tools(prev: list, nxt: list) -> dict:
    by_name = {_name_key(t): t for t in prev}
    next_names = {_name_key(t) for t in nxt}
    return {
        "added": [t for t in nxt if _name_key(t) not in by_name],
        "removed": [_tool_name(t) for t in prev if _name_key(t) not in next_names],
        "changed": [t for t in nxt if _name_key(t) in by_name and not js_equal(by_name[_name_key(t)], t)],
    }


def diff_header(prev: dict, nxt: dict) -> dict | None:
    """The delta payload between two canonical headers, or None when equal."""
    delta: dict = {}
    ps, ns = prev.get("system", MISSING), nxt.get("system", MISSING)
    if not strict_equal(ps, ns):
        delta["system"] = diff_system(ps, ns)
    pt, nt = prev.get("tools", []), nxt.get("tools", [])
    if not js_equal(pt, nt):
        delta["tools"] = diff_tools(pt, nt)
    pc, nc = prev.get("config"), nxt.get("config")
    if not call_config_equals(pc, nc, config_keys_for(pc, nc)):
        delta["config"] = nc
    for key in MESSAGE_ARRAYS:
        if not js_equal(prev.get(key, []), nxt.get(key, [])):
            delta[key] = nxt.get(key, [])
    return delta or None


DELTA_ARMS = ("system", "tools", "config", "messagePrefix", "messageSuffix")


@dataclass(slots=True)
class DeltaResult:
    """Outcome of applying one delta: the new header and what did not apply cleanly."""

    header: dict
    problems: list[tuple[str, str]] = field(default_factory=list)  # (arm, sentence)
    opaque: bool = False  # a placeholder was involved: round-trip checks are meaningless


def _check_str_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise HeaderShapeError(f"{what} must be an array of strings")
    return value


def _check_count(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise HeaderShapeError(f"{what} must be a non-negative integer")
    return value


def apply_system_arm(prev: Any, arm: Any, result: DeltaResult) -> Any:
    if not isinstance(arm, dict):
        raise HeaderShapeError("delta.system must be an object {keepStart, keepEnd, insert}")
    ks = _check_count(arm.get("keepStart"), "delta.system.keepStart")
    ke = _check_count(arm.get("keepEnd"), "delta.system.keepEnd")
    insert = _check_str_list(arm.get("insert"), "delta.system.insert")
    if is_placeholder(prev) or any(is_placeholder(x) for x in insert):
        result.opaque = True
        return "{{system}}"
    if prev is not MISSING and not isinstance(prev, str):
        raise HeaderShapeError("the system prompt in force is not a string")
    lines = _lines(prev)
    if ks + ke > len(lines):
        result.problems.append(
            ("system", f"keepStart {ks} + keepEnd {ke} exceed the {len(lines)} line(s) of the system prompt in force")
        )
    tail = lines[len(lines) - ke :] if ke else []
    new = lines[:ks] + list(insert) + tail
    return "\n".join(new) if new else MISSING


def tool_arm(arm: Any) -> tuple[list, list, list]:
    """The ``(added, removed, changed)`` of a tools arm; HeaderShapeError for a malformed one."""
    if not isinstance(arm, dict):
        raise HeaderShapeError("delta.tools must be an object {added, removed, changed}")
    added, removed, changed = arm.get("added", MISSING), arm.get("removed", MISSING), arm.get("changed", MISSING)
    for name, v in (("added", added), ("changed", changed)):
        if not isinstance(v, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in v):
            raise HeaderShapeError(f"delta.tools.{name} must be an array of tool schemas with a name")
    _check_str_list(removed, "delta.tools.removed")
    return added, removed, changed


def tool_arm_problems(in_force: Container, added: list, removed: list, changed: list) -> list[tuple[str, str]]:
    """What does not apply cleanly in a tools arm, given the names of the tools in force."""
    problems = []
    for n in removed:
        if n not in in_force:
            problems.append(("tools", f"removes tool {n!r}, which is not in the tool list in force"))
    removed_set = set(removed)
    for t in changed:
        if t["name"] not in in_force or t["name"] in removed_set:
            problems.append(("tools", f"changes tool {t['name']!r}, which is not in the tool list in force"))
    for t in added:
        if t["name"] in in_force and t["name"] not in removed_set:
            problems.append(("tools", f"adds tool {t['name']!r}, which is already in the tool list in force"))
    return problems


def _apply_tools(prev: Any, arm: Any, result: DeltaResult) -> Any:
    added, removed, changed = tool_arm(arm)
    if is_placeholder(prev):
        result.opaque = True
        return prev
    if not isinstance(prev, list):
        raise HeaderShapeError("the tools in force are not an array")
    result.problems.extend(tool_arm_problems([_tool_name(t) for t in prev], added, removed, changed))
    removed_set = set(removed)
    changed_by = {t["name"]: t for t in changed}
    kept = [changed_by.get(_name_key(t), t) for t in prev if _name_key(t) not in removed_set]
    return kept + list(added)


def apply_delta(prev: dict, delta: Any) -> DeltaResult:
    """Apply a ``request/header-delta`` payload to a canonical header.

    Raises HeaderShapeError for a payload of the wrong shape; records arms that
    do not apply cleanly (the harness's apply would silently produce something
    else) as problems while still producing the harness's result.
    """
    if not isinstance(delta, dict):
        raise HeaderShapeError("delta payload is not an object")
    result = DeltaResult(header={})
    system = prev.get("system", MISSING)
    tools = prev.get("tools", MISSING)
    if "system" in delta:
        system = apply_system_arm(system, delta["system"], result)
    if "tools" in delta:
        tools = _apply_tools(prev.get("tools", []), delta["tools"], result)
    config = prev.get("config")
    if "config" in delta:
        if not isinstance(delta["config"], dict):
            raise HeaderShapeError("delta.config must be an object")
        config = delta["config"]
    new: dict = {"config": config}
    if system is not MISSING:
        new["system"] = system
    if tools is not MISSING:
        new["tools"] = tools
    for key in MESSAGE_ARRAYS:
        value = prev.get(key, MISSING)
        if key in delta:
            value = delta[key]
            if not isinstance(value, list):
                raise HeaderShapeError(f"delta.{key} must be an array")
            if contains_placeholder(value):
                result.opaque = True
        if value is not MISSING:
            new[key] = value
    for key, value in prev.items():
        if key not in new and key not in DELTA_ARMS:
            new[key] = value
    if any(contains_placeholder(prev.get(k)) for k in ("system", "tools", *MESSAGE_ARRAYS)):
        result.opaque = result.opaque or any(k in delta for k in DELTA_ARMS)
    result.header = canonical(new)
    return result


def unknown_delta_keys(delta: Any) -> list[str]:
    return [k for k in delta if k not in DELTA_ARMS] if isinstance(delta, dict) else []


def changed_fields(prev: dict | None, nxt: dict) -> list[str]:
    """Which header fields differ between two canonical headers (for timelines)."""
    if prev is None:
        return sorted(nxt)
    keys = list(dict.fromkeys([*prev, *nxt]))
    return [k for k in keys if not js_equal(prev.get(k, MISSING), nxt.get(k, MISSING))]
