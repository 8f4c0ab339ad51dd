"""Sniff a log's format era from its shapes (the version field cannot tell).

LOG-FORMAT.md §9: deltas, ``fallback`` and content-only user messages are
seed-era; ``delegationDepth``, chunk rows, ``provider`` in the call config,
message objects with ``role`` are late-era.  We read only the head of the log
(a bounded number of lines), which is enough in practice because the first
turn already shows the header and message shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice

from .discover import LogSource
from .lines import FrameProblem, iter_lines
from .load import parse_json

SNIFF_LINES = 400


@dataclass
class EraGuess:
    profile: str
    evidence: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


def classify_object(obj: dict, seen: dict[str, str]) -> None:
    """Record era evidence found in one parsed line into ``seen`` (marker -> era)."""
    t = obj.get("type")
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    if t == "session":
        if "delegationDepth" in obj or "origin" in obj or "agentPreset" in obj:
            seen.setdefault("late session header fields", "late")
        return
    if t in ("text-chunks", "reasoning-chunks", "tool-call-chunks") and "seq0" in obj:
        seen.setdefault("packed chunk rows", "late")
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
        header = data.get("header") if isinstance(data.get("header"), dict) else {}
        config = header.get("config") if isinstance(header.get("config"), dict) else {}
        if "provider" in config:
            seen.setdefault("config.provider", "late")
        if "adapterDefaults" in header:
            seen.setdefault("adapterDefaults", "head")
        if "messageSuffix" in header:
            seen.setdefault("messageSuffix", "seed-suffix")
    elif t == "user/message":
        if "role" in data:
            seen.setdefault("message objects", "head")
    elif t in ("agent/inbox/spliced", "session/end-seed", "request/context"):
        seen.setdefault(t, "head")
    elif t == "assistant/message" and "message" in data:
        seen.setdefault("message objects", "head")
    elif t == "turn/start" and "trigger" not in data and "turn" in data:
        seen.setdefault("turn/start without trigger", "head")


def profile_for(seen: dict[str, str]) -> EraGuess:
    eras = set(seen.values())
    evidence = [f"{k} ({v})" for k, v in seen.items()]
    if "head" in eras:
        profile = "head"
    elif "late" in eras:
        profile = "late-unwrapped"
    elif "seed-suffix" in eras:
        profile = "seed-suffix"
    else:
        profile = "seed"
    conflicts = []
    if eras & {"seed", "seed-suffix"} and eras & {"late", "head"}:
        conflicts = [k for k, v in seen.items() if v in ("seed", "seed-suffix")]
    return EraGuess(profile, evidence, conflicts)


def sniff(source: LogSource, max_lines: int = SNIFF_LINES) -> EraGuess:
    seen: dict[str, str] = {}
    for raw in islice(iter_lines(source.path), max_lines):
        if isinstance(raw, FrameProblem) or raw.oversized:
            continue
        obj, err = parse_json(raw.data)
        if err is None and isinstance(obj, dict):
            classify_object(obj, seen)
    return profile_for(seen)
