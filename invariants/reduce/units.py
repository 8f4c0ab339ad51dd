"""The units a log is reduced by, each a set of event indices and capture line indices: whole loop instances
(a resume to the next), then whole turns, steps and compactions, then header deltas, tool call/result pairs, a
step's chunk run, single surface events and capture lines.  Removing a unit removes all of its members."""

from __future__ import annotations

from dataclasses import dataclass

from invariants.reduce.subject import Subject

_SPANS = {"turn/start": "turn/end", "step/start": "step/end", "compact/start": "compact/end"}
_SPANS["compaction/start"] = "compaction/end"
_SINGLE = {"user/message", "context/message", "steering/message", "request/header-delta", "assistant/message"}


@dataclass(frozen=True)
class Unit:
    kind: str
    events: frozenset[int]
    lines: frozenset[int] = frozenset()


def levels(subject: Subject) -> list[list[Unit]]:
    """The units, coarse level first."""
    events = subject.log.events
    resumes: list[int] = []  # where each resumed loop instance begins: the turn/start of its first header
    coarse: list[Unit] = []
    middle: list[Unit] = []
    fine: list[Unit] = []
    open_at: dict[str, int] = {}
    calls: dict[tuple, int] = {}
    chunks: dict[tuple, list[int]] = {}
    for i, ev in enumerate(events):
        kind = ev.get("type")
        if not isinstance(kind, str):  # a type of the wrong kind (a list, an object): an event of no span
            kind = None
        raw = ev.get("data")
        data: dict = raw if isinstance(raw, dict) else {}
        if kind in _SPANS:
            open_at[kind] = i
        for start, end in _SPANS.items():
            if kind == end and start in open_at:
                span = frozenset(range(open_at.pop(start), i + 1))
                (coarse if start == "turn/start" else middle).append(Unit(start.split("/")[0], span))
        if kind == "request/header" and data.get("reason") == "resume" and "turn/start" in open_at:
            resumes.append(open_at["turn/start"])
        if kind in _SINGLE:
            fine.append(Unit(kind, frozenset([i])))
        elif kind == "tool/call":
            calls[(_key(data.get("turn")), _key(data.get("step")), str(data.get("callId")))] = i
        elif kind == "tool/result":
            call = calls.get((_key(data.get("turn")), _key(data.get("step")), str(data.get("callId"))))
            fine.append(Unit("tool-pair", frozenset([i] if call is None else [call, i])))
        elif kind == "assistant/chunk":
            chunks.setdefault((_key(data.get("turn")), _key(data.get("step"))), []).append(i)
    for members in chunks.values():
        fine.append(Unit("chunk-run", frozenset(members)))
    fine.extend(Unit("capture-line", frozenset(), frozenset([k])) for k in range(len(subject.lines)))
    bounds = [0, *resumes, len(events)] if resumes else []
    instances = [Unit("instance", frozenset(range(a, b))) for a, b in zip(bounds, bounds[1:]) if b > a]
    return [instances, coarse, middle, fine]


def _key(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value
