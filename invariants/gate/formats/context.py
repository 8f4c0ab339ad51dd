"""What every renderer is given besides the result, and the per-rule statistics they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invariants.gate.result import CheckResult
from invariants.gate.view import ReportView, view_of

FORMATS = ("text", "json", "jsonl", "junit", "sarif", "github", "gitlab", "concise")
MACHINE_FORMATS = frozenset(FORMATS) - {"text"}


@dataclass(slots=True)
class ReportContext:
    fail_on: str = "error"
    verbose: bool = False
    statistics: bool = False
    baseline: Any = None  # invariants.gate.baseline.BaselineOutcome
    base_dir: Path | None = None  # SARIF, GitLab: paths are made relative to this (see project_root)
    tool_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def repository_root(start: Path) -> Path | None:
    """The nearest folder from ``start`` up that holds ``.git`` (a folder, or a worktree's ``.git`` file)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_root(explicit: Path | None, config_root: Path | None, start: Path) -> Path:
    """What report paths are relative to: ``--project-root``, else the git repository around ``start``,
    else the folder of the configuration file in force, else ``start`` (the working directory).

    Code-scanning and merge-request UIs match a report's paths against the repository's files,
    so a run from a subfolder must still name ``recordings/a.jsonl`` from the repository's top.
    """
    if explicit is not None:
        return explicit.resolve()
    return repository_root(start) or (config_root.resolve() if config_root is not None else start.resolve())


def statistics(result: CheckResult | ReportView) -> list[dict[str, Any]]:
    """Findings per rule, most frequent first."""
    return view_of(result).statistics()


def statistics_text(result: CheckResult | ReportView) -> str:
    rows = statistics(result)
    if not rows:
        return "no findings"
    width = max(len(str(r["count"])) for r in rows)
    return "\n".join(f"{r['count']:>{width}}  {r['rule']:<7} {r['severity']:<7} {r['name']}" for r in rows)
