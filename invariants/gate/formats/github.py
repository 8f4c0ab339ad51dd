"""GitHub Actions workflow commands: one annotation per finding.

    ::error file=logs/s1.jsonl,line=17,title=HDR002 delta-does-not-apply::tools arm does not apply cleanly: …

Severity maps to ``error``, ``warning`` or ``notice``.  Escaping follows the
workflow-command rules: in the message ``%``, CR and LF are percent-encoded;
in property values ``:`` and ``,`` are too.  Since every newline is encoded,
log text cannot start a workflow command of its own; other control
characters are shown as visible escapes.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from invariants.gate.formats.context import ReportContext
from invariants.gate.report import after_location
from invariants.gate.view import ReportView
from invariants.model.findings import Finding

_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def _visible(m: re.Match) -> str:
    o = ord(m.group())
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def _clean(text: str) -> str:
    """Every control character but CR, LF (percent-encoded later) and TAB as a visible escape."""
    return _CONTROL.sub(_visible, text)


def escape_data(text: str) -> str:
    return _clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    from invariants.model.registry import RULES

    props = []
    if f.file:
        props.append(f"file={escape_property(f.file)}")
    if f.line is not None:
        props.append(f"line={f.line}")
    rule = RULES.get(f.rule)
    props.append(f"title={escape_property(f.rule + (' ' + rule.name if rule else ''))}")
    where = []
    if f.session:
        where.append(f"session {f.session}")
    if f.turn is not None:
        where.append(f"turn {f.turn}" + (f" step {f.step}" if f.step is not None else ""))
    if f.seq is not None:
        where.append(f"seq {f.seq}")
    message = after_location(f) + (f" ({', '.join(where)})" if where else "")
    return f"::{LEVELS.get(f.severity, 'warning')} {','.join(props)}::{escape_data(message)}"


def write_github(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    for f in view.findings():
        out(annotation(f) + "\n")
