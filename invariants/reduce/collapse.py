"""Collapse chunk runs: consecutive kept delta chunks of one block (same turn, step, index, kind and call id)
become one chunk carrying their joined text, so a finding that needs the stream keeps it in one event instead
of hundreds.  The oracle decides whether a collapse keeps the finding."""

from __future__ import annotations

from typing import Any

from invariants.reduce.logfile import LogData
from invariants.reduce.subject import Subject

_TEXT = {"text-delta": "text", "reasoning-delta": "text", "tool-call-delta": "argumentsDelta"}


def _block(ev: dict) -> tuple | None:
    """What a delta chunk event belongs to, or None when it is not one."""
    data = ev.get("data")
    if ev.get("type") != "assistant/chunk" or not isinstance(data, dict):
        return None
    chunk = data.get("chunk")
    if not isinstance(chunk, dict) or type(chunk.get("type")) is not str or chunk["type"] not in _TEXT:
        return None
    if not isinstance(chunk.get(_TEXT[chunk["type"]]), str):
        return None
    key = (data.get("turn"), data.get("step"), chunk.get("type"), chunk.get("index"), chunk.get("id"))
    return tuple(repr(k) for k in key)


def runs(subject: Subject, keep: list[int]) -> list[list[int]]:
    """The runs of two or more consecutive kept delta chunks of one block, as event indices."""
    out: list[list[int]] = []
    current: list[int] = []
    last: tuple | None = None
    for i in keep:
        block = _block(subject.log.events[i])
        if block is not None and block == last:
            current.append(i)
            continue
        if len(current) > 1:
            out.append(current)
        current, last = ([i], block) if block is not None else ([], None)
    if len(current) > 1:
        out.append(current)
    return out


def _joined(events: list[Any], members: list[int]) -> None:
    """Put the run's joined text into its first member (in place)."""
    first = events[members[0]]
    chunk = first["data"]["chunk"]
    field = _TEXT[chunk["type"]]
    joined = "".join(events[i]["data"]["chunk"][field] for i in members)
    events[members[0]] = {**first, "data": {**first["data"], "chunk": {**chunk, field: joined}}}


def collapse(subject: Subject, run_list: list[list[int]]) -> tuple[Subject, set[int]]:
    """``subject`` with each run's first chunk carrying the run's joined text, and the indices of the other
    members (to be dropped).  A fork parent's copy of a seed run is collapsed alike, so the seed still lines
    up; a run the parent does not have verbatim is left alone."""
    log = subject.log
    events: list[Any] = list(log.events)
    parent_events: list[Any] | None = None if log.parent is None else list(log.parent.events)
    bound = min(log.seed_length, len(parent_events)) if parent_events is not None else 0
    dropped: set[int] = set()
    for members in run_list:
        in_seed = parent_events is not None and members[0] < bound
        if in_seed:
            assert parent_events is not None
            if members[-1] >= bound or any(parent_events[i] != events[i] for i in members):
                continue
            _joined(parent_events, members)
        _joined(events, members)
        dropped.update(members[1:])
    parent = log.parent
    if parent is not None and parent_events is not None:
        parent = LogData(parent.name, parent.header, parent_events, parent.captures)
    return Subject(LogData(log.name, log.header, events, log.captures, parent), subject.lines), dropped
