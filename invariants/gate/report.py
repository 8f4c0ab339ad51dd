"""Render a check result: linter-style text, or the stable JSON report.

JSON report, version 1 (documented in README and docs/REPORT.md)::

    {"version": 1,
     "summary": {"sessions", "events", "requests_checked", "errors", "warnings", "infos"},
     "sessions": [{"session", "file", "era", "profile", "events", "steps", ..., ["form"]}],
     "findings": [Finding.to_json(), ...]}
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

import orjson

from invariants.gate.result import CheckResult, with_form
from invariants.model.findings import Finding
from invariants.model.inert import inert
from invariants.read.projected import PROJECTED, RUNTIME
from invariants.replay.model import SessionModel


def session_row(m: Any) -> dict[str, Any]:
    """The report's row for a session: a SessionModel, or a SessionSummary (which carries ``row()``)."""
    if not isinstance(m, SessionModel):
        return m.row()
    row = {
        "session": m.id,
        "file": m.file,
        "era": m.profile.era,
        "profile": m.profile.name,
        "events": m.events,
        "turns": m.turns,
        "steps": len(m.steps),
        "instances": len(m.instances),
        "requests": len(m.requests),
    }
    return with_form(row, m.header.form if m.header else RUNTIME)


def report_json(result: CheckResult) -> dict[str, Any]:
    return {
        "version": 1,
        "summary": result.summary(),
        "sessions": [session_row(m) for m in result.sessions],
        "findings": [f.to_json() for f in result.findings],
    }


_C1 = re.compile("[\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def dumps_json(value: Any, indent: bool = False) -> str:
    """JSON text; control characters are always escaped, so it is inert in a terminal.

    JSON encoders escape only U+0000-U+001F; DEL, the C1 controls (U+009B is
    an 8-bit CSI) and the Unicode line separators are escaped here too.  They
    can only occur inside strings, where ``\\uXXXX`` means the same value.
    """
    try:
        opt = orjson.OPT_INDENT_2 if indent else 0
        text = orjson.dumps(value, option=opt).decode()
    except (TypeError, orjson.JSONEncodeError):  # lone surrogates, huge ints
        return json.dumps(value, indent=2 if indent else None, ensure_ascii=True)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _C1.search(text) else text


def location(f: Finding) -> str:
    """Where a finding is: ``line N, seq N, turn T step S`` (the parts it has)."""
    parts = []
    if f.line is not None:
        parts.append(f"line {f.line}")
    if f.seq is not None:
        parts.append(f"seq {f.seq}")
    if f.turn is not None:
        parts.append(f"turn {f.turn}" + (f" step {f.step}" if f.step is not None else ""))
    return ", ".join(parts)


def after_location(f: Finding) -> str:
    """``f.message`` as shown after a location that names its line (text, concise, JUnit, GitHub): the
    reader's findings begin ``line N:`` for the JSON report, and said twice it read ``line 10, seq 8:
    line 10: unparsable line``."""
    prefix = f"line {f.line}: "
    return f.message[len(prefix) :] if f.line is not None and f.message.startswith(prefix) else f.message


def report_text(result: Any, verbose: bool = False) -> str:
    """The text report: the listing with the next steps (how to open each error, how to read a rule), the summary."""
    return "\n".join([*finding_lines(result, verbose, next_steps=True), *rule_hint(result), summary_line(result)])


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def open_command(f: Finding, model: Any) -> str | None:
    """The command that opens the TUI on a finding: its step (``--at TURN.STEP``) or its event (``--at SEQ``)."""
    source = getattr(model, "source", None)
    if source is None:
        return None
    import shlex  # deferred: a clean check opens nothing

    parts = ["inspector", shlex.quote(str(source.path))]
    if source.member is not None:
        parts += ["--session", shlex.quote(str(source.member))]
    if isinstance(f.turn, int) and isinstance(f.step, int) and f.turn >= 0 and f.step >= 0:
        parts += ["--at", f"{f.turn}.{f.step}"]
    elif isinstance(f.seq, int) and f.seq >= 0:
        parts += ["--at", str(f.seq)]
    return inert(" ".join(parts))


def rule_hint(result: Any) -> list[str]:
    """One line naming how to read a rule: the worst rule first, then every rule the report raised."""
    view = _view(result)
    if not view.finding_count:
        return []
    worst = {
        rule: min(_SEVERITY_ORDER.get(sev, 3) for sev, n in sevs.items() if n)
        for rule, sevs in view.rule_severities.items()
    }
    rules = sorted(worst, key=lambda r: (worst[r], r))
    return [f"read a rule: inspector rules {rules[0]}" + (f"  (here: {', '.join(rules)})" if len(rules) > 1 else "")]


def finding_lines(result: Any, verbose: bool = False, next_steps: bool = False) -> list[str]:
    """The text report's listing (see :func:`iter_finding_lines`)."""
    return list(iter_finding_lines(_view(result), verbose, next_steps))


def iter_finding_lines(view: Any, verbose: bool = False, next_steps: bool = False) -> Iterator[str]:
    """The text report's listing: each file's findings under a line naming the file and its session;
    ``next_steps``: under each error, the command that opens the TUI there."""
    for b in view.blocks:
        if not b.findings:
            continue
        m = b.session
        head = inert(b.file or "(no file)")
        if m is not None:
            row = session_row(m)
            form = f", {row['form']}" if "form" in row else ""
            head += (
                f"  (session {inert(row['session'])}, {row['profile']}{form}, {row['events']} events, "
                f"{row['steps']} steps)"
            )
        yield head
        for f in b.findings:
            loc = location(f)
            path = f" {inert(f.path)}:" if f.path and f.path not in f.message else ""
            yield f"  {f.severity:<7} {f.rule}  {loc + ':' if loc else ''}{path} {inert(after_location(f))}"
            if verbose and f.detail:
                yield f"          {inert(dumps_json(f.detail))}"
            command = open_command(f, m) if next_steps and f.severity == "error" else None
            if command is not None:
                yield f"          open it: {command}"


def _view(result: Any) -> Any:
    from invariants.gate.view import view_of  # deferred: the view imports this module's neighbours

    return view_of(result)


def summary_line(result: Any) -> str:
    """The text report's last line: sessions, events, requests checked, findings per severity."""
    s = result.summary()
    tail = f"{s['sessions']} session(s), {s['events']} events, {requests_phrase(result)}"
    projected = getattr(result, "projected", None)  # a ReportView counted them as they were written
    if projected is None:
        projected = sum(1 for m in result.sessions if session_row(m).get("form") == PROJECTED)
    if projected:
        tail = tail.replace(" events, ", f" events ({projected} projected snapshot(s): envelopes rebuilt), ", 1)
    tail += f": {s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info(s)"
    return tail


def requests_phrase(result: Any) -> str:
    """``14 request(s) checked``, or, when not every recorded request was compared, the breakdown:
    ``9 recorded request(s): 7 compared, 2 one-shot (shown, not checked)``; and how many of them the
    capture's own verdict judges otherwise."""
    c = result.request_counts()
    if c["compared"] == c["recorded"]:
        text = f"{c['compared']} request(s) checked"
    else:
        text = f"{c['recorded']} recorded request(s): {c['compared']} compared"
        if c["one_shot"]:
            text += f", {c['one_shot']} one-shot (shown, not checked)"
        if c["unexplained"]:
            text += f", {c['unexplained']} unexplained"
    if c["disagreements"]:
        text += f"; the capture's own verdict differs on {c['disagreements']}"
    return text
