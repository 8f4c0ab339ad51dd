"""Report formats for ``inspector check``.

* ``text``: the linter-style listing (:mod:`.text`);
* ``json``: report version 1 (:mod:`.json_report`);
* ``jsonl``: one finding per line (``Finding.to_json()``), nothing else;
* ``junit``: JUnit XML, one test case per session (failures at or above
  ``fail_on``), for CI test-report UIs;
* ``sarif``: SARIF 2.1.0 with the rule table as ``tool.driver.rules``, for
  code-scanning UIs;
* ``github``: GitHub Actions workflow commands (``::error file=…,line=…::…``);
* ``gitlab``: GitLab Code Quality JSON (one issue per finding), for merge requests;
* ``concise``: ``path:line:col: CODE message``, one line per finding, as ruff's.

SARIF and GitLab paths are relative to ``ReportContext.base_dir``, the
repository root (:func:`~invariants.gate.formats.context.project_root`).

Every writer streams: it reads a :class:`~invariants.gate.view.ReportView`
(the blocks of a streamed check, or a whole :class:`~invariants.gate.result.CheckResult`
made into one) and hands its text to ``out`` piece by piece, ending with a
newline when it wrote anything.  :func:`render` is the same writer into a
string.  Summaries for humans go to stderr in the CLI, never into a machine
format.
"""

from __future__ import annotations

import io
from typing import Any, Callable

from invariants.gate.formats.context import (
    FORMATS,
    MACHINE_FORMATS,
    ReportContext,
    project_root,
    statistics,
    statistics_text,
)
from invariants.gate.result import CheckResult
from invariants.gate.view import ReportView, view_of

__all__ = [
    "FORMATS",
    "MACHINE_FORMATS",
    "ReportContext",
    "project_root",
    "render",
    "statistics",
    "statistics_text",
    "write",
]


def write(result: CheckResult | ReportView, fmt: str, ctx: ReportContext | None, out: Callable[[str], Any]) -> None:
    """The report in ``fmt``, written to ``out`` as it is made (a newline at its end when not empty)."""
    ctx = ctx or ReportContext()
    view = view_of(result)
    if fmt == "text":
        from invariants.gate.formats.text import write_text as writer
    elif fmt == "json":
        from invariants.gate.formats.json_report import write_json as writer
    elif fmt == "jsonl":
        from invariants.gate.formats.json_report import write_jsonl as writer
    elif fmt == "junit":
        from invariants.gate.formats.junit import write_junit as writer
    elif fmt == "sarif":
        from invariants.gate.formats.sarif import write_sarif as writer
    elif fmt == "github":
        from invariants.gate.formats.github import write_github as writer
    elif fmt == "gitlab":
        from invariants.gate.formats.gitlab import write_gitlab as writer
    elif fmt == "concise":
        from invariants.gate.formats.concise import write_concise as writer
    else:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    writer(view, ctx, out)


def render(result: CheckResult | ReportView, fmt: str, ctx: ReportContext | None = None) -> str:
    """The whole report in ``fmt``, without a trailing newline."""
    buf = io.StringIO()
    write(result, fmt, ctx, buf.write)
    text = buf.getvalue()
    return text[:-1] if text.endswith("\n") else text
