"""Header versions in space linear in the deltas, and deltas that cost what they change.

Folding keeps the header in force as a :class:`LiveHeader`: its fields, and
its tools indexed by name in list order.  A ``request/header-delta`` is then
applied, and checked (does it apply cleanly, change anything, round-trip
through the harness's diff), in time proportional to the delta, not to the
tool list (:func:`fast_delta`).  The result is exactly what
:func:`~invariants.replay.header_codec.apply_delta` and the codec's
comparisons give; a header outside the regular case (a scrubbed placeholder,
tools with repeated or non-string names, a value orjson cannot encode) or a
delta that would make it so is left to them.

Each version keeps its delta, not its header (:class:`VersionStore`); the
header is materialised when a request or a view needs it, from the nearest
version kept whole (snapshots, and a checkpoint whenever the deltas since the
last one weigh as much as its header), so materialising costs the header's
size and all checkpoints together cost what the deltas do.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import islice
from typing import Any

from invariants.model.jsonvalue import MISSING, exact_bytes, js_equal
from invariants.replay.header_codec import (
    MESSAGE_ARRAYS,
    DeltaResult,
    HeaderShapeError,
    call_config_equals,
    config_keys_for,
    contains_placeholder,
    diff_system,
    is_placeholder,
    tool_arm,
    tool_arm_problems,
)


class LiveHeader:
    """The header in force, regular case: no placeholder, a text system prompt (or none), tools with
    distinct string names, all encodable.

    ``fields`` is the canonical header in key order, None standing for the
    system prompt and the tool list, which live apart: ``lines`` is the
    prompt's lines, ``tools`` maps each tool name to its schema in list order
    and ``pos`` each name to a number that grows with the position.
    """

    __slots__ = ("fields", "lines", "tools", "pos", "next_pos", "_text")

    def __init__(self, fields: dict, lines: list[str] | None, tools: dict, pos: dict, next_pos: int) -> None:
        self.fields, self.lines, self.tools, self.pos, self.next_pos = fields, lines, tools, pos, next_pos
        self._text: str | None = None  # the prompt joined, until it changes

    @classmethod
    def of(cls, header: dict) -> LiveHeader | None:
        """The live form of a canonical header, or None outside the regular case."""
        if any(contains_placeholder(header.get(k)) for k in ("system", *MESSAGE_ARRAYS)):
            return None
        system = header.get("system", MISSING)
        if system is not MISSING and type(system) is not str:
            return None
        index: dict[str, dict] = {}
        tools = header.get("tools", MISSING)
        if tools is not MISSING:
            if type(tools) is not list:
                return None
            for t in tools:
                if type(t) is not dict or type(t.get("name")) is not str or t["name"] in index:
                    return None
                index[t["name"]] = t
            if exact_bytes(tools) is None:
                return None
        fields = {k: None if k in ("system", "tools") else v for k, v in header.items()}
        lines = system.split("\n") if system is not MISSING else None
        live = cls(fields, lines, index, {name: i for i, name in enumerate(index)}, len(index))
        live._text = system if system is not MISSING else None
        return live

    def system(self) -> Any:
        """The system prompt as the header has it (MISSING when there is none)."""
        if self.lines is None:
            return MISSING
        if self._text is None:
            self._text = "\n".join(self.lines)
        return self._text

    def header(self) -> dict:
        """The header as a plain dict (a new tool list; every schema shared)."""
        tools = list(self.tools.values()) if "tools" in self.fields else None
        system = self.system() if "system" in self.fields else None
        return {k: tools if k == "tools" else system if k == "system" else v for k, v in self.fields.items()}

    def weight(self) -> int:
        """What materialising the header costs, in list elements (tools, prompt lines, messages)."""
        arrays = sum(len(v) for k, v in self.fields.items() if k in MESSAGE_ARRAYS)
        return 1 + len(self.tools) + len(self.lines or ()) + arrays


class FastDelta:
    """A delta applied to a :class:`LiveHeader`, with every verdict the fold asks of it.

    ``problems``, ``equal`` (``header_equals(prev, new)``), ``changed``
    (``changed_fields(prev, new)``) and :meth:`redo` (``diff_header(prev,
    new)``) are what the codec's functions give on the two headers; nothing
    changes until :meth:`commit`.
    """

    __slots__ = (
        "live",
        "new_fields",
        "problems",
        "tools_equal",
        "system_equal",
        "equal",
        "changed",
        "_system",
        "_gone",
        "_changed_by",
        "_kept_changed",
        "_added",
    )
    live: LiveHeader
    new_fields: dict
    problems: list[tuple[str, str]]
    tools_equal: bool
    system_equal: bool
    equal: bool
    changed: list[str]
    _system: tuple[int, int, list[str], bool] | None
    _gone: frozenset[str]
    _changed_by: dict[str, dict]
    _kept_changed: list[str]
    _added: list[dict]

    def redo(self) -> dict:
        prev, new = self.live.fields, self.new_fields
        delta: dict = {}
        if not self.system_equal:
            delta["system"] = self._redo_system()
        if not self.tools_equal:
            delta["tools"] = self._redo_tools()
        pc, nc = prev.get("config"), new.get("config")
        if not call_config_equals(pc, nc, config_keys_for(pc, nc)):
            delta["config"] = nc
        for key in MESSAGE_ARRAYS:
            if not js_equal(prev.get(key, []), new.get(key, [])):
                delta[key] = new.get(key, [])
        return delta

    def _redo_system(self) -> dict:
        """``diff_system(prev, new)``, knowing the lines before the arm's start and after its end are shared."""
        old = self.live.lines or []
        assert self._system is not None  # the prompt changed: the delta has a system arm
        start, end, insert, present = self._system
        if not present:
            return diff_system(self.live.system(), MISSING)
        n, k = len(old), len(insert)
        size = start + k + end

        def new(i: int) -> str:
            return old[i] if i < start else insert[i - start] if i < start + k else old[i - start - k + n - end]

        keep_start = min(start, n, size)
        while keep_start < n and keep_start < size and old[keep_start] == new(keep_start):
            keep_start += 1
        keep_end = min(end, n - keep_start, size - keep_start)
        while (
            keep_end < n - keep_start
            and keep_end < size - keep_start
            and old[n - 1 - keep_end] == new(size - 1 - keep_end)
        ):
            keep_end += 1
        return {
            "keepStart": keep_start,
            "keepEnd": keep_end,
            "insert": [new(i) for i in range(keep_start, size - keep_end)],
        }

    def _redo_tools(self) -> dict:
        """``diff_tools(prev, new)`` from the delta alone."""
        index, pos, gone, added = self.live.tools, self.live.pos, self._gone, self._added
        readded = {t["name"] for t in added} & gone
        changed = [self._changed_by[n] for n in sorted(self._kept_changed, key=pos.__getitem__)]
        return {
            "added": [t for t in added if t["name"] not in index],
            "removed": sorted((n for n in gone if n not in readded), key=pos.__getitem__),
            "changed": [t for t in changed if not js_equal(index[t["name"]], t)]
            + [t for t in added if t["name"] in gone and not js_equal(index[t["name"]], t)],
        }

    def commit(self) -> None:
        live = self.live
        index, pos = live.tools, live.pos
        for name in self._gone:
            del index[name], pos[name]
        for name in self._kept_changed:
            index[name] = self._changed_by[name]
        for t in self._added:
            index[t["name"]] = t
            pos[t["name"]] = live.next_pos
            live.next_pos += 1
        if self._system is not None:
            start, end, insert, present = self._system
            if not present:
                live.lines = None
            elif live.lines is None:
                live.lines = list(insert)
            else:
                live.lines[start : len(live.lines) - end] = insert
            live._text = None
        live.fields = self.new_fields


def fast_delta(live: LiveHeader, delta: Any) -> FastDelta | None:
    """``delta`` applied to ``live`` in time proportional to the delta, or None: then the codec's
    functions decide (a malformed delta, a placeholder, a result outside the regular case)."""
    if type(delta) is not dict:
        return None
    prev = live.fields
    out = FastDelta()
    out.live = live
    result = DeltaResult(header={})
    out._system, system_equal = None, True
    has_system = live.lines is not None
    if "system" in delta:
        arm = _system_arm(live.lines or [], delta["system"])
        if arm is None:
            return None
        out._system = arm
        start, end, insert, has_system = arm
        old = live.lines or []
        system_equal = (live.lines is not None) == has_system and (
            not has_system or old[start : len(old) - end] == insert
        )
    index = live.tools
    out._gone, out._changed_by, out._kept_changed, out._added = frozenset(), {}, [], []
    tools_equal = True
    if "tools" in delta:
        try:
            added, removed, changed = tool_arm(delta["tools"])
        except HeaderShapeError:
            return None
        result.problems.extend(tool_arm_problems(index, added, removed, changed))
        removed_set = set(removed)
        names = [t["name"] for t in added]
        if len(set(names)) != len(names) or any(n in index and n not in removed_set for n in names):
            return None  # the new list would repeat a name
        if any(exact_bytes(t) is None for t in (*added, *changed)):
            return None
        gone = frozenset(n for n in removed_set if n in index)
        changed_by = {t["name"]: t for t in changed}
        kept_changed = [n for n in changed_by if n in index and n not in removed_set]
        out._gone, out._changed_by, out._kept_changed, out._added = gone, changed_by, kept_changed, list(added)
        tools_equal = _same_tools(index, gone, changed_by, kept_changed, added)
        tools_left = len(index) - len(gone) + len(added)
    else:
        tools_left = len(index)
    config = prev.get("config")
    if "config" in delta:
        if not isinstance(delta["config"], dict):
            return None
        config = delta["config"]
    for key in MESSAGE_ARRAYS:
        if key in delta and (not isinstance(delta[key], list) or contains_placeholder(delta[key])):
            return None
    # apply_delta's key order, then canonical(): config first, empty fields dropped.
    new: dict = {"config": config}
    if has_system:
        new["system"] = None  # live.lines, after commit()
    if tools_left:
        new["tools"] = None  # the index, after commit()
    for key in MESSAGE_ARRAYS:
        value = delta[key] if key in delta else prev.get(key, MISSING)
        if value is not MISSING and _kept(value):
            new[key] = value
    for key, value in prev.items():
        if key not in new and key not in ("system", "tools", "config", *MESSAGE_ARRAYS):
            new[key] = value
    out.new_fields = new
    out.problems = result.problems
    out.tools_equal, out.system_equal = tools_equal, system_equal
    pc = prev.get("config")
    out.equal = (
        tools_equal
        and system_equal
        and call_config_equals(pc, config, config_keys_for(pc, config))
        and all(js_equal(prev.get(k, []), new.get(k, [])) for k in MESSAGE_ARRAYS)
    )
    same = {"tools": tools_equal and "tools" in prev and "tools" in new, "system": system_equal}
    out.changed = [
        k
        for k in dict.fromkeys([*prev, *new])
        if not (same[k] if k in same else js_equal(prev.get(k, MISSING), new.get(k, MISSING)))
    ]
    return out


def _system_arm(lines: list[str], arm: Any) -> tuple[int, int, list[str], bool] | None:
    """``(keepStart, keepEnd, insert, prompt present after)`` of a system arm that
    ``apply_system_arm`` applies cleanly to ``lines`` without a placeholder, else None."""
    if type(arm) is not dict:
        return None
    start, end, insert = arm.get("keepStart"), arm.get("keepEnd"), arm.get("insert")
    if type(start) is not int or type(end) is not int or start < 0 or end < 0 or start + end > len(lines):
        return None
    if type(insert) is not list or not all(type(x) is str for x in insert) or any(map(is_placeholder, insert)):
        return None
    size = start + len(insert) + end
    if size <= 2:  # "{{x}}" or "{{x}}\n": a prompt of two lines at most may be a placeholder
        text = "\n".join([*lines[:start], *insert, *lines[len(lines) - end :]] if end else [*lines[:start], *insert])
        if is_placeholder(text):
            return None
        return start, end, insert, text != ""
    return start, end, insert, True


def _kept(value: Any) -> bool:
    """canonical()'s test for a field other than config and adapterDefaults."""
    return isinstance(value, (str, list)) and len(value) > 0


def _same_tools(index: dict, gone: frozenset, changed_by: dict, kept_changed: list, added: list) -> bool:
    """Whether the new tool list equals the old (``js_equal``), from the delta alone.

    Names are distinct, so the kept tools line up with the old list only when
    the removed ones were its last; the added ones must then equal those.
    """
    if len(added) != len(gone):
        return False
    tail = list(islice(reversed(index), len(gone)))
    if set(tail) != gone:
        return False
    if not all(js_equal(index[n], changed_by[n]) for n in kept_changed):
        return False
    return all(js_equal(t, index[n]) for t, n in zip(added, reversed(tail)))


def delta_weight(delta: dict) -> int:
    """What applying a delta costs, in the units of :meth:`LiveHeader.weight`."""
    weight = 1
    tools = delta.get("tools")
    if isinstance(tools, dict):
        weight += sum(len(tools.get(k) or ()) for k in ("added", "removed", "changed"))
    system = delta.get("system")
    if isinstance(system, dict):
        weight += len(system.get("insert") or ())
    return weight + sum(len(delta.get(k) or ()) for k in MESSAGE_ARRAYS)


class VersionStore:
    """Every version's header: whole for snapshots and checkpoints, else as the delta that made it."""

    def __init__(self) -> None:
        self.whole: dict[int, dict] = {}
        self.marks: list[int] = []  # versions kept whole, in order
        self.deltas: dict[int, dict] = {}
        self.since = 0  # delta weight since the last version kept whole
        self.budget = 0  # ...and that version's weight: the deltas may cost as much before the next
        self.last: tuple[int, dict] | None = None
        self._live: tuple[int, LiveHeader] | None = None  # the header at ``last``, live: the next version on

    def keep_whole(self, index: int, header: dict, weight: int) -> None:
        self.whole[index] = header
        self.marks.append(index)
        self.since, self.budget = 0, weight

    def keep_delta(self, index: int, delta: dict, live: LiveHeader) -> None:
        """A version made by a fast delta; ``live`` is the header after it."""
        self.since += delta_weight(delta)
        if self.since >= self.budget:
            self.keep_whole(index, live.header(), live.weight())
        else:
            self.deltas[index] = delta

    def header(self, index: int) -> dict:
        whole = self.whole.get(index)
        if whole is not None:
            return whole
        if self.last is not None and self.last[0] == index:
            return self.last[1]
        start = self.marks[bisect_right(self.marks, index) - 1]
        if self._live is not None and start < self._live[0] < index:
            at, live = self._live  # versions asked in order (a request a step) apply each delta once
        else:
            at, fresh = start, LiveHeader.of(self.whole[start])
            assert fresh is not None  # the fold kept only fast deltas after it
            live = fresh
        for i in range(at + 1, index + 1):
            step = fast_delta(live, self.deltas[i])
            assert step is not None
            step.commit()
        header = live.header()  # (a new dict: the commits after it change none of it)
        self.last, self._live = (index, header), (index, live)
        return header
