"""One line per finding, ``path:line:col: CODE message``, as ruff's ``concise`` format.

Editors and ``grep`` read the ``path:line:col:`` prefix (the column is
always 1: a finding points at a log line, not into it; a finding with no
line is at line 1).  The path is the file as the check named it; a finding
about no file starts with its code.  Log text is made inert, and the line
ends with the session and step so two findings on one line stay apart.
No summary: it goes to stderr, as for every machine format.
"""

from __future__ import annotations

from typing import Any, Callable

from invariants.gate.formats.context import ReportContext
from invariants.gate.report import after_location
from invariants.gate.view import ReportView
from invariants.model.findings import Finding
from invariants.model.inert import inert


def concise_line(f: Finding) -> str:
    where = []
    if f.session:
        where.append(f"session {f.session}")
    if f.turn is not None:
        where.append(f"turn {f.turn}" + (f" step {f.step}" if f.step is not None else ""))
    suffix = f" ({', '.join(where)})" if where else ""
    if not f.file:
        return inert(f"{f.rule} {f.message}{suffix}")
    line = f.line if f.line is not None and f.line >= 1 else 1
    return inert(f"{f.file}:{line}:1: {f.rule} {after_location(f)}{suffix}")


def write_concise(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    for f in view.findings():
        out(concise_line(f) + "\n")
