"""Report formats for ``inspector check``.

``text`` and ``json`` (report version 1) live in :mod:`invariants.gate.report`;
this package adds the CI formats and dispatches between all of them:

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

Every renderer takes a :class:`~invariants.gate.pipeline.CheckResult` (its sessions
may be ``SessionModel`` objects or cached summaries) and a
:class:`ReportContext`, and returns the whole text.  Summaries for humans go
to stderr in the CLI, never into a machine format.
"""

from __future__ import annotations

from invariants.gate.formats.context import (
    FORMATS,
    MACHINE_FORMATS,
    ReportContext,
    project_root,
    statistics,
    statistics_text,
)
from invariants.gate.result import CheckResult

__all__ = ["FORMATS", "MACHINE_FORMATS", "ReportContext", "project_root", "render", "statistics", "statistics_text"]


def render(result: CheckResult, fmt: str, ctx: ReportContext | None = None) -> str:
    """The whole report in ``fmt``, without a trailing newline."""
    ctx = ctx or ReportContext()
    if fmt == "text":
        from invariants.gate.formats.text import render_text

        return render_text(result, ctx)
    if fmt == "json":
        from invariants.gate.report import dumps_json, report_json

        doc = report_json(result)
        if ctx.statistics:
            doc["statistics"] = statistics(result)
        if ctx.baseline is not None:
            doc["baseline"] = ctx.baseline.to_json()
        return dumps_json(doc, indent=True)
    if fmt == "jsonl":
        from invariants.gate.report import dumps_json

        return "\n".join(dumps_json(f.to_json()) for f in result.findings)
    if fmt == "junit":
        from invariants.gate.formats.junit import render_junit

        return render_junit(result, ctx)
    if fmt == "sarif":
        from invariants.gate.formats.sarif import sarif_log
        from invariants.gate.report import dumps_json

        return dumps_json(sarif_log(result, ctx), indent=True)
    if fmt == "github":
        from invariants.gate.formats.github import render_github

        return render_github(result, ctx)
    if fmt == "gitlab":
        from invariants.gate.formats.gitlab import gitlab_issues
        from invariants.gate.report import dumps_json

        return dumps_json(gitlab_issues(result, ctx), indent=True)
    if fmt == "concise":
        from invariants.gate.formats.concise import render_concise

        return render_concise(result, ctx)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
