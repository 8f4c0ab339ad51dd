"""Report formats for ``inspector check``.

``text`` and ``json`` (report version 1) live in :mod:`invariants.gate.report`;
this package adds the CI formats and dispatches between all of them:

* ``jsonl``: one finding per line (``Finding.to_json()``), nothing else;
* ``junit``: JUnit XML, one test case per session (failures at or above
  ``fail_on``), for CI test-report UIs;
* ``sarif``: SARIF 2.1.0 with the rule table as ``tool.driver.rules``, for
  code-scanning UIs;
* ``github``: GitHub Actions workflow commands (``::error file=…,line=…::…``).

Every renderer takes a :class:`~invariants.gate.pipeline.CheckResult` (its sessions
may be ``SessionModel`` objects or cached summaries) and a
:class:`ReportContext`, and returns the whole text.  Summaries for humans go
to stderr in the CLI, never into a machine format.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invariants.gate.pipeline import CheckResult
from invariants.model.registry import RULES

FORMATS = ("text", "json", "jsonl", "junit", "sarif", "github")
MACHINE_FORMATS = frozenset(FORMATS) - {"text"}


@dataclass
class ReportContext:
    fail_on: str = "error"
    verbose: bool = False
    statistics: bool = False
    baseline: Any = None  # invariants.gate.baseline.BaselineOutcome
    base_dir: Path | None = None  # SARIF: paths are made relative to this
    tool_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def statistics(result: CheckResult) -> list[dict[str, Any]]:
    """Findings per rule, most frequent first."""
    counts = Counter(f.rule for f in result.findings)
    severities: dict[str, Counter] = {}
    for f in result.findings:
        severities.setdefault(f.rule, Counter())[f.severity] += 1
    rows = []
    for rule, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        r = RULES.get(rule)
        sev = severities[rule].most_common(1)[0][0]
        rows.append({"rule": rule, "name": r.name if r else "", "category": r.category if r else "", "severity": sev, "count": n})
    return rows


def statistics_text(result: CheckResult) -> str:
    rows = statistics(result)
    if not rows:
        return "no findings"
    width = max(len(str(r["count"])) for r in rows)
    return "\n".join(f"{r['count']:>{width}}  {r['rule']:<7} {r['severity']:<7} {r['name']}" for r in rows)


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
        from invariants.gate.report import dumps_json
        from invariants.gate.formats.sarif import sarif_log

        return dumps_json(sarif_log(result, ctx), indent=True)
    if fmt == "github":
        from invariants.gate.formats.github import render_github

        return render_github(result, ctx)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
