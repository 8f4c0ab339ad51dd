"""The linter-style text report, plus what a CI run adds to it: per-rule
statistics (``--statistics`` replaces the per-finding listing) and the
baseline's account (suppressed findings, entries that no longer occur)."""

from __future__ import annotations

from invariants.gate.formats.context import ReportContext
from invariants.gate.report import report_text
from invariants.gate.result import CheckResult
from invariants.model.inert import inert


def render_text(result: CheckResult, ctx: ReportContext) -> str:
    from invariants.gate.formats.context import statistics_text

    text = report_text(result, verbose=ctx.verbose)
    lines = text.split("\n")
    tail = lines.pop()  # the summary line stays last
    if ctx.statistics:
        lines = [statistics_text(result)] if result.findings else []
    b = ctx.baseline
    if b is not None:
        lines.append(
            f"baseline {inert(b.file)}: {b.suppressed} known finding(s) not shown"
            + (f"; {len(b.stale)} entr{'y' if len(b.stale) == 1 else 'ies'} no longer occur:" if b.stale else "")
        )
        for e in b.stale:
            where = f"turn {e.get('turn')} step {e.get('step')}: " if e.get("turn") is not None else ""
            lines.append(
                f"  gone    {inert(str(e.get('rule')))}  {inert(str(e.get('file')))} "
                f"session {inert(str(e.get('session')))}, {where}{inert(str(e.get('message', '')))}"
            )
    lines.append(tail)
    return "\n".join(lines)
