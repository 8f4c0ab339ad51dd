"""Sniff a log's format era from its shapes (the version field cannot tell).

Every era writes ``version: 0``, so the profile is chosen from evidence
(LOG-FORMAT.md §9).  Each marker names the era it proves:

* ``seed``: a ``request/header-delta``, a ``fallback`` snapshot reason;
* ``pre-provider``: a call config without ``provider`` (required from
  e547980d77, one day into the late era; HEAD refuses such a header), seed
  evidence only while nothing late shows, never a conflict;
* ``late``: reason ``change``, ``provider`` in a call config, packed chunk rows,
  ``delegationDepth``/``origin``/``agentPreset`` in the session header, a
  SQLite schema-17 database;
* ``pre-objects``: shapes HEAD no longer writes (it only migrates them on
  load): a ``user/message`` without ``role``, an ``assistant/message`` with
  top-level ``content``, a ``tool/result`` with top-level ``callId``,
  ``context/message``/``steering/message`` events, a ``messagePrefix``.  The
  seed era and the early late era share them, so alone they decide nothing;
* ``wrapped``: ``context/message`` with an ``envelope`` field (3fe196a751,
  only before f593ef5ab5), so the wrapped projections still apply;
* ``head``: identified message objects (6816e8a3d5+), ``turn/start`` without
  ``trigger``, ``request/context``, ``session/end-seed``,
  ``agent/inbox/spliced``, ``adapterDefaults``, ``ignorable``, ``compaction/*``.

Choice: any ``head`` marker -> ``head`` (HEAD reads and migrates older late
shapes, so a log resumed across an upgrade mixes both); otherwise a late log
with pre-object shapes -> ``late-unwrapped`` (``late-early`` when a wrapped
context envelope shows); a late log with nothing older -> ``head``, because
that is what a current harness writes; seed evidence and no late marker ->
``seed``; no era-specific shape at all (a header-only log, a chunk-only replay
script) -> ``undetermined``, which is judged by the seed profile's rules.  Seed
markers next to late ones are a mixed log (reported once as LOG011, judged by
the late profile).  Only shapes count, not the container: the same events judge
the same whether they sit in ``.jsonl``, ``.jsonl.zstd`` or a database (a seed
database schema is evidence too, as its rows can hold nothing else).

The whole log decides.  The replay gathers this evidence during its one pass
(:func:`classify_object` per event); it takes a provisional verdict after at
most :data:`SNIFF_LINES` lines (or at the first ``head`` marker, which nothing
later overturns) and judges the log again only when the evidence of the whole
file says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from invariants.read.envelope import parse_json
from invariants.read.line_records import DEFAULT_MAX_LINE, RawLine
from invariants.read.lines import iter_source_lines
from invariants.read.source import LogSource

SNIFF_LINES = 400  # lines read before the replay takes its provisional verdict
UNDETERMINED = "undetermined"
SEED_MARKS = frozenset({"seed", "seed-suffix"})
LATE_MARKS = frozenset({"late", "head", "wrapped"})

LATE_HEADER_FIELDS = ("delegationDepth", "origin", "agentPreset")
_ROW_TYPES = ("text-chunks", "reasoning-chunks", "tool-call-chunks")
_HEAD_TYPES = frozenset({"agent/inbox/spliced", "session/end-seed", "request/context"})
_PRE_OBJECT_TYPES = frozenset({"context/message", "steering/message"})
_SILENT_TYPES = frozenset({"assistant/chunk", "step/start", "step/end", "tool/call", "turn/end"})


@dataclass(slots=True)
class EraGuess:
    profile: str
    evidence: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    @property
    def era(self) -> str:
        if self.profile == UNDETERMINED:
            return UNDETERMINED
        return "seed" if self.profile.startswith("seed") else "late"


def classify_object(obj: dict, seen: dict[str, str]) -> None:
    """Record era evidence found in one parsed line into ``seen`` (marker -> era)."""
    t = obj.get("type")
    if not isinstance(t, str):
        return  # not an event (the loader reports it); a list or object here is not even hashable
    if t in _SILENT_TYPES and "ignorable" not in obj:
        return  # the most common events, which carry no evidence of their own
    raw = obj.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if t == "session":
        for k in LATE_HEADER_FIELDS:
            if k in obj:
                seen.setdefault("late session header fields", "late")
                break
        return
    if obj.get("ignorable") is True:
        seen.setdefault("ignorable events", "head")
    if t in _ROW_TYPES and "seq0" in obj:
        seen.setdefault("packed chunk rows", "late")
    elif t == "assistant/chunk":
        return
    elif t == "request/header-delta":
        seen.setdefault("request/header-delta", "seed")
        if "messageSuffix" in data:
            seen.setdefault("messageSuffix", "seed-suffix")
    elif t == "request/header":
        reason = data.get("reason")
        if reason == "fallback":
            seen.setdefault("reason fallback", "seed")
        elif reason == "change":
            seen.setdefault("reason change", "late")
        header = data.get("header")
        header = header if isinstance(header, dict) else {}
        config = header.get("config")
        config = config if isinstance(config, dict) else {}
        if "provider" in config:
            seen.setdefault("config.provider", "late")
        elif "model" in config:
            seen.setdefault("call config without provider", "pre-provider")
        if "adapterDefaults" in header:
            seen.setdefault("adapterDefaults", "head")
        if "messageSuffix" in header:
            seen.setdefault("messageSuffix", "seed-suffix")
        if "messagePrefix" in header:
            seen.setdefault("messagePrefix", "pre-objects")
    elif t == "user/message":
        if "role" in data or "id" in data:
            seen.setdefault("message objects", "head")
        elif "content" in data:
            seen.setdefault("content-only user/message", "pre-objects")
    elif t == "assistant/message":
        if "message" in data:
            seen.setdefault("message objects", "head")
        elif "content" in data:
            seen.setdefault("content-only assistant/message", "pre-objects")
    elif t == "tool/result":
        if "message" in data:
            seen.setdefault("message objects", "head")
        elif "callId" in data:
            seen.setdefault("callId-keyed tool/result", "pre-objects")
    elif t in _PRE_OBJECT_TYPES:
        seen.setdefault(t, "pre-objects")
        if t == "context/message" and "envelope" in data:
            seen.setdefault("context envelope", "wrapped")
    elif t in _HEAD_TYPES:
        seen.setdefault(t, "head")
    elif t == "turn/start" and "trigger" not in data and "turn" in data:
        seen.setdefault("turn/start without trigger", "head")
    elif isinstance(t, str) and t.startswith("compaction/"):
        seen.setdefault("compaction/* events", "head")


def profile_for(seen: dict[str, str]) -> EraGuess:
    eras = set(seen.values())
    evidence = [f"{k} ({v})" for k, v in seen.items()]
    late = bool(eras & LATE_MARKS)
    if "head" in eras:
        profile = "head"
    elif late and "wrapped" in eras:
        profile = "late-early"
    elif late and "pre-objects" in eras:
        profile = "late-unwrapped"
    elif late:
        profile = "head"
    elif "seed-suffix" in eras:
        profile = "seed-suffix"
    elif eras & (SEED_MARKS | {"pre-provider"}):
        profile = "seed"
    else:
        profile = UNDETERMINED
    conflicts = []
    if late and eras & SEED_MARKS:
        conflicts = [k for k, v in seen.items() if v in SEED_MARKS]
    return EraGuess(profile, evidence, conflicts)


def is_decisive(seen: dict[str, str]) -> bool:
    """Whether nothing later in the log can change the verdict (a ``head`` marker wins over every other)."""
    return "head" in seen.values()


def classify_header(raw: Any, seen: dict[str, str]) -> None:
    if isinstance(raw, dict):
        classify_object({**raw, "type": "session"}, seen)


def sniff(source: LogSource, max_line: int = DEFAULT_MAX_LINE) -> EraGuess:
    """The era verdict over the whole log, read on its own (the replay gathers the same in its pass)."""
    seen: dict[str, str] = {}
    if source.member is not None:
        from invariants.read.sqlite_backend import schema_era_evidence

        schema_era_evidence(source, seen)
    for raw in iter_source_lines(source, max_line):
        if not isinstance(raw, RawLine) or raw.oversized:
            continue
        obj, err = parse_json(raw.data)
        if err is None and isinstance(obj, dict):
            classify_object(obj, seen)
    return profile_for(seen)
