"""GitLab Code Quality: a JSON array, one issue per finding, for the merge-request widget.

The fields GitLab reads (docs.gitlab.com, "Code Quality", implement a custom
tool): ``description``, ``check_name``, ``fingerprint``, ``severity`` (info,
minor, major, critical, blocker), ``location.path`` (relative to the
repository root, :func:`~invariants.gate.formats.context.project_root`) and
``location.lines.begin``; ``type`` and ``categories`` (``Bug Risk``: a
broken invariant is one) complete the Code Climate issue GitLab's format is
a subset of.  Severity: error -> major, warning -> minor, info
-> info; an unusable input is a ``blocker`` issue (``check_name``
``unusable-input``).  A finding with no line is placed at line 1.

The fingerprint must be unique in a report and stable across runs, so
GitLab can tell new issues from fixed ones: the baseline's line-independent
fingerprint of the finding, with its file, session and rule, and an
occurrence number for findings that are otherwise the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterator

from invariants.gate.formats.context import ReportContext
from invariants.gate.result import CheckResult
from invariants.gate.view import ReportView, view_of
from invariants.model.findings import Finding
from invariants.read.source import is_url

SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def repository_path(file: str, base: Path | None) -> str:
    """``file`` relative to ``base`` as a POSIX path; a URL or a file outside ``base`` as given."""
    if is_url(file) or base is None:
        return file
    p = Path(file)
    try:
        return (p if p.is_absolute() else Path.cwd() / p).resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        return p.as_posix()


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=True, default=str).encode()).hexdigest()[:32]


def _description(f: Finding) -> str:
    where = []
    if f.session:
        where.append(f"session {f.session}")
    if f.turn is not None:
        where.append(f"turn {f.turn}" + (f" step {f.step}" if f.step is not None else ""))
    if f.seq is not None:
        where.append(f"seq {f.seq}")
    return f"{f.rule} {f.message}" + (f" ({', '.join(where)})" if where else "")


def gitlab_issues(result: CheckResult | ReportView, ctx: ReportContext) -> list[dict[str, Any]]:
    return list(iter_gitlab_issues(view_of(result), ctx))


def write_gitlab(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    """The issue list, streamed (one issue encoded at a time)."""
    from invariants.gate.formats.streamjson import marker, write_document

    write_document(marker("issues"), [("issues", iter_gitlab_issues(view, ctx))], out, not view.plain_json())


def iter_gitlab_issues(view: ReportView, ctx: ReportContext) -> Iterator[dict[str, Any]]:
    from invariants.gate.baseline import fingerprint

    base = ctx.base_dir
    seen: dict[tuple, int] = {}
    for f in view.findings():
        path = repository_path(f.file, base) if f.file else ""
        key = (path, f.session or "", f.rule, fingerprint(f))
        n = seen[key] = seen.get(key, -1) + 1
        yield (
            {
                "type": "issue",
                "description": _description(f),
                "check_name": f.rule,
                "categories": ["Bug Risk"],
                "fingerprint": _digest(*key, n),
                "severity": SEVERITIES.get(f.severity, "minor"),
                "location": {"path": path, "lines": {"begin": f.line if f.line is not None and f.line >= 1 else 1}},
            }
        )
    for problem in view.problems:
        file = problem.split(": ", 1)[0]
        yield (
            {
                "type": "issue",
                "description": f"unusable input: {problem}",
                "check_name": "unusable-input",
                "categories": ["Bug Risk"],
                "fingerprint": _digest("unusable-input", problem),
                "severity": "blocker",
                "location": {"path": repository_path(file, base), "lines": {"begin": 1}},
            }
        )
