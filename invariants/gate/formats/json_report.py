"""The JSON report (version 1) and JSON Lines, streamed from a :class:`~invariants.gate.view.ReportView`.

The report's ``summary`` comes before its ``sessions`` and ``findings``, so
it is written once the run is done, the two arrays read from the view's
blocks item by item (:mod:`.streamjson`): the bytes equal encoding the
whole document at once.
"""

from __future__ import annotations

from typing import Any, Callable

from invariants.gate.formats.context import ReportContext
from invariants.gate.formats.streamjson import marker, write_document
from invariants.gate.report import dumps_json
from invariants.gate.view import ReportView


def write_json(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    doc = {"version": 1, "summary": view.summary(), "sessions": marker("sessions"), "findings": marker("findings")}
    if ctx.statistics:
        doc["statistics"] = view.statistics()
    if ctx.baseline is not None:
        doc["baseline"] = ctx.baseline.to_json()
    rows = view.session_rows()
    findings = (f.to_json() for f in view.findings())
    write_document(doc, [("sessions", rows), ("findings", findings)], out, not view.plain_json())


def write_jsonl(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    for f in view.findings():
        out(dumps_json(f.to_json()) + "\n")
