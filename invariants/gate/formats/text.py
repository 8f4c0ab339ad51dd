"""The linter-style text report, plus what a CI run adds to it: per-rule
statistics (``--statistics`` replaces the per-finding listing) and the
baseline's account (suppressed findings, entries that no longer occur)."""

from __future__ import annotations

from typing import Any, Callable

from invariants.gate.formats.context import ReportContext
from invariants.gate.report import iter_finding_lines, rule_hint, summary_line
from invariants.gate.view import ReportView
from invariants.model.inert import inert


def write_text(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    from invariants.gate.formats.context import statistics_text

    if ctx.statistics:
        if view.finding_count:
            out(statistics_text(view) + "\n")
    else:
        for line in iter_finding_lines(view, ctx.verbose, next_steps=True):
            out(line + "\n")
        for line in rule_hint(view):
            out(line + "\n")
    b = ctx.baseline
    if b is not None:
        out(
            f"baseline {inert(b.file)}: {b.suppressed} known finding(s) not shown"
            + (f"; {len(b.stale)} entr{'y' if len(b.stale) == 1 else 'ies'} no longer occur:" if b.stale else "")
            + "\n"
        )
        for e in b.stale:
            where = f"turn {e.get('turn')} step {e.get('step')}: " if e.get("turn") is not None else ""
            out(
                f"  gone    {inert(str(e.get('rule')))}  {inert(str(e.get('file')))} "
                f"session {inert(str(e.get('session')))}, {where}{inert(str(e.get('message', '')))}\n"
            )
    out(summary_line(view) + "\n")
