"""The findings of one check, explained for a person reading a failed test (the pytest plugin's report).

One block per log, then per finding: the rule (code, name, category,
severity), where it is (turn.step, line, seq), the message, the first differing JSON path,
a compact expected/recorded pair cut around the first difference, the capture
line it was recorded at, and the message.  All log text is made inert.
"""

from __future__ import annotations

from typing import Iterable

from invariants.gate.result import CheckResult, SessionSummary
from invariants.model.findings import SEVERITY_RANK, Finding
from invariants.model.inert import inert
from invariants.model.registry import RULES

CONTEXT = 24  # characters kept before the first difference of an expected/recorded pair
WIDTH = 100  # characters shown of each side at most


def at_or_above(findings: list[Finding], fail_on: str) -> list[Finding]:
    threshold = SEVERITY_RANK[fail_on]
    return [f for f in findings if SEVERITY_RANK.get(f.severity, 0) >= threshold]


def explain(result: CheckResult, fail_on: str = "error") -> str:
    """The result's unusable inputs and its findings at or above ``fail_on``, grouped by file."""
    return explain_findings(at_or_above(result.findings, fail_on), result.sessions, fail_on, result.problems)


def explain_findings(
    findings: Iterable[Finding],
    sessions: Iterable[SessionSummary] = (),
    fail_on: str = "error",
    problems: Iterable[str] = (),
) -> str:
    """``problems`` (unusable inputs), then ``findings`` grouped by file, each file's session named."""
    lines = [f"unusable input: {inert(p)}" for p in problems]
    by_session = {s.file: s for s in sessions}
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.file or "(no file)", []).append(f)
    for file, found in by_file.items():
        if lines:
            lines.append("")
        s = by_session.get(file)
        about = f" (session {inert(s.session)}, {s.profile}, {s.events} events, {s.steps} steps)" if s else ""
        lines.append(f"{inert(file)}: {len(found)} finding(s) at or above {fail_on}{about}")
        for f in found:
            lines.extend(finding_block(f))
    if not lines:
        lines.append(f"no finding at or above {fail_on}")
    return "\n".join(lines)


def finding_block(f: Finding) -> list[str]:
    rule = RULES.get(f.rule)
    head = f"  {f.rule}" + (f" {rule.name}" if rule else "") + f" [{f.category}, {f.severity}]"
    where = _where(f)
    out = [head + (f" at {where}" if where else ""), f"    {inert(f.message)}"]
    if f.path:
        out.append(f"    path      {inert(f.path)}")
    detail = f.detail or {}
    expected, recorded = detail.get("expected"), detail.get("recorded")
    if isinstance(expected, str) and isinstance(recorded, str):
        a, b = compact_pair(expected, recorded)
        out.append(f"    expected  {inert(a)}")
        out.append(f"    recorded  {inert(b)}")
    if isinstance(detail.get("capture"), str):
        out.append(f"    capture   {inert(detail['capture'])}")
    return out


def _where(f: Finding) -> str:
    parts = []
    if f.turn is not None:
        parts.append(f"turn.step {f.turn}.{f.step}" if f.step is not None else f"turn {f.turn}")
    if f.line is not None:
        parts.append(f"line {f.line}")
    if f.seq is not None:
        parts.append(f"seq {f.seq}")
    return ", ".join(parts)


def compact_pair(a: str, b: str, context: int = CONTEXT, width: int = WIDTH) -> tuple[str, str]:
    """``a`` and ``b`` cut to a window that starts a little before their first difference."""
    if len(a) <= width and len(b) <= width:
        return a, b
    same = 0
    for x, y in zip(a, b):
        if x != y:
            break
        same += 1
    start = max(0, same - context)
    return _cut(a, start, width), _cut(b, start, width)


def _cut(s: str, start: int, width: int) -> str:
    part = s[start : start + width]
    return ("…" if start else "") + part + ("…" if start + width < len(s) else "")
