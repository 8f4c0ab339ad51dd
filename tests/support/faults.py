"""Faults injected into tmp copies of real corpus logs, and the checks every reduced repro must pass: it shows
the same rule, is 1-minimal over the reducer's units, and (redacted) leaks no long content string."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from invariants import check
from invariants.reduce.logfile import read_log
from invariants.reduce.subject import Oracle, Subject, signature, tie_captures
from invariants.reduce.units import levels

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"

SCENARIOS = "upstream-seed-era/core__agent-loop__zz-corpus-scenarios"
SEED_PREFIX = f"{SCENARIOS}/t02/prefix-session-8580d0a0-c14d-4c30-b80d-08bbdd7be4cb.jsonl"
SEED_DELTAS = f"{SCENARIOS}/t00/deltas-session-e7ad222c-c209-4c78-abb6-207f7de9fd9c.jsonl"
SEED_RESUMED = f"{SCENARIOS}/t03/resumed-changed.jsonl"
SEED_FORK = f"{SCENARIOS}/t04/forked-child-agent.jsonl"
LATE_TOOLS = "upstream-late-era/core__agent-loop__tool-calls/t14/a1.jsonl"
LATE_FORK = (
    "upstream-late-era/subagent__subagent-fork-in-process__subagent-fork-in-process/t04/"
    "b8fd2442-f7e5-42a8-8cb9-fac6cd796e6a.jsonl"
)


def _read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _copy(rel: str, tmp: Path) -> Path:
    src = CORPUS / rel
    if not src.is_file():
        pytest.skip(f"corpus absent: {src}")
    folder = tmp / "in"
    folder.mkdir()
    shutil.copy(src, folder / src.name)
    if (src.parent / "requests.jsonl").is_file():
        shutil.copy(src.parent / "requests.jsonl", folder / "requests.jsonl")
    return folder / src.name


def _last_request(log: Path) -> tuple[Path, list[dict], dict]:
    cap = log.parent / "requests.jsonl"
    lines, sid = _read(cap), _read(log)[0]["id"]
    mine = [line for line in lines if line.get("sessionId") == sid and line.get("loopBuilt")]
    return cap, lines, mine[-1]["request"]


def dropped_message(rel: str, tmp: Path) -> Path:
    """The last recorded request lost its second message."""
    log = _copy(rel, tmp)
    cap, lines, request = _last_request(log)
    request["messages"].pop(1)
    _write(cap, lines)
    return log


def changed_system(rel: str, tmp: Path) -> Path:
    """The last recorded request's system prompt has a line the header never had."""
    log = _copy(rel, tmp)
    cap, lines, request = _last_request(log)
    request["system"] += "\nA line of the system prompt that no header delta ever wrote."
    _write(cap, lines)
    return log


def missing_prefix(rel: str, tmp: Path) -> Path:
    """The last recorded request lacks the header's messagePrefix (its first message)."""
    log = _copy(rel, tmp)
    cap, lines, request = _last_request(log)
    request["messages"].pop(0)
    _write(cap, lines)
    return log


def delta_removes_absent_tool(rel: str, tmp: Path) -> Path:
    """The first header delta that removes a tool removes one the header does not have."""
    log = _copy(rel, tmp)
    records = _read(log)
    delta = next(
        r for r in records if r.get("type") == "request/header-delta" and r["data"].get("tools", {}).get("removed")
    )
    delta["data"]["tools"]["removed"] = ["a-tool-that-is-not-there"]
    _write(log, records)
    return log


def result_without_call(rel: str, tmp: Path) -> Path:
    """The first tool result answers a call id that no tool call has."""
    log = _copy(rel, tmp)
    records = _read(log)
    next(r for r in records if r.get("type") == "tool/result")["data"]["callId"] = "a-call-that-never-was"
    _write(log, records)
    return log


def header_after_first_chunk(rel: str, tmp: Path) -> Path:
    """The first header event moved to just after its step's first chunk (every seq and reference renumbered)."""
    log = _copy(rel, tmp)
    records = _read(log)
    events = records[1:]
    at = next(i for i, e in enumerate(events) if e["type"] == "request/header")
    header = events.pop(at)
    events.insert(next(i for i in range(at, len(events)) if events[i]["type"] == "assistant/chunk") + 1, header)
    new = {e["seq"]: n for n, e in enumerate(events)}
    for n, e in enumerate(events):
        e["seq"] = n
        if isinstance(e.get("sourceEventSeqs"), list):
            e["sourceEventSeqs"] = [new[x] for x in e["sourceEventSeqs"]]
        if isinstance(e.get("surfaceOp"), dict):
            e["surfaceOp"] = {
                **e["surfaceOp"],
                "start": new[e["surfaceOp"]["start"]],
                "end": new[e["surfaceOp"]["end"]],
            }
    _write(log, records[:1] + events)
    return log


def child_differs_from_parent(rel: str, tmp: Path) -> Path:
    """A fork child (its parent beside it) whose last seed user message was edited after the fork."""
    log = _copy(rel, tmp)
    records = _read(log)
    src = CORPUS / rel
    parent = next(
        p
        for p in src.parent.glob("*.jsonl")
        if p not in (src, src.parent / "requests.jsonl") and _read(p)[0]["id"] == records[0]["parentSession"]
    )
    shutil.copy(parent, log.parent / parent.name)
    seed = records[1 : records[0]["seedLength"] + 1]
    message = [r for r in seed if r["type"] == "user/message"][-1]
    message["data"]["content"][0]["text"] += " (edited in the child after the fork)"
    _write(log, records)
    return log


@dataclass(frozen=True)
class Fault:
    kind: str
    rule: str
    log: str
    inject: Callable[[str, Path], Path]


# Seed era only: a messagePrefix (removed in ba31823fc8) and header deltas (removed in 1123e946c0) are
# not in the late-era format, so the late corpus has neither.
FAULTS = [
    Fault("dropped-message-seed", "DIV001", SEED_PREFIX, dropped_message),
    Fault("dropped-message-late", "DIV001", LATE_TOOLS, dropped_message),
    Fault("dropped-message-resumed-seed", "DIV001", SEED_RESUMED, dropped_message),
    Fault("changed-system-seed", "DIV010", SEED_PREFIX, changed_system),
    Fault("changed-system-late", "DIV010", LATE_TOOLS, changed_system),
    Fault("missing-prefix-seed", "DIV001", SEED_PREFIX, missing_prefix),
    Fault("delta-removes-absent-tool-seed", "HDR002", SEED_DELTAS, delta_removes_absent_tool),
    Fault("result-without-call-seed", "EVT009", SEED_PREFIX, result_without_call),
    Fault("result-without-call-late", "EVT009", LATE_TOOLS, result_without_call),
    Fault("header-after-first-chunk-seed", "HDR010", SEED_PREFIX, header_after_first_chunk),
    Fault("child-differs-from-parent-seed", "FRK001", SEED_FORK, child_differs_from_parent),
    Fault("child-differs-from-parent-late", "FRK001", LATE_FORK, child_differs_from_parent),
]


def content_strings(value: object, out: set[str]) -> set[str]:
    """Every string in a JSON value (keys excluded)."""
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, list):
        for v in value:
            content_strings(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            content_strings(v, out)
    return out


def leaked(originals: list[Path], written: list[Path], kept: set[str]) -> list[str]:
    """The original content strings of 12 characters or more, outside ``kept``, that a written file holds."""
    strings: set[str] = set()
    for p in originals:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                content_strings(json.loads(line), strings)
    text = "".join(p.read_text(encoding="utf-8") for p in written)
    return sorted(s for s in strings if len(s) >= 12 and s not in kept and json.dumps(s)[1:-1] in text)


def assert_one_minimal(log_path: Path, rule: str) -> None:
    """Removing any single unit of the reduced log loses the finding or makes the log invalid."""
    log = read_log(log_path, None)
    subject = Subject(log, tie_captures(log, log_path))
    found = check(log_path).findings
    target = next(signature(f) for f in found if f.rule == rule)
    oracle = Oracle(subject, target, {f.rule for f in found})
    try:
        keep, lines = list(range(len(log.events))), list(range(len(subject.lines)))
        assert oracle.holds(keep, lines)
        for unit in (u for tier in levels(subject) for u in tier):
            k = [i for i in keep if i not in unit.events]
            c = [i for i in lines if i not in unit.lines]
            assert not oracle.holds(k, c), f"removing {unit.kind} {sorted(unit.events)} keeps {rule}"
    finally:
        oracle.close()
