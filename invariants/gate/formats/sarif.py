"""SARIF 2.1.0: one run, the whole rule table as ``tool.driver.rules``.

Code-scanning UIs read rule metadata from the driver (name, short and full
description, help, default level, category tag), so every rule of the
registry is listed and each result points at its rule by ``ruleId`` and
``ruleIndex``.  Locations are the log (or capture) file with the finding's
physical line; the session, turn and step are a logical location.  Paths
under ``base_dir`` are relative URIs against ``%SRCROOT%``; others are
``file://`` URIs.  ``partialFingerprints`` carries the baseline fingerprint,
so a code-scanning backend tracks a finding across line shifts the same way
``--baseline`` does.

Validated in the tests against the official OASIS schema
(``tests/data/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from invariants.gate.formats.context import ReportContext
from invariants.gate.result import CheckResult
from invariants.gate.view import ReportView, view_of
from invariants.model.findings import Finding
from invariants.model.registry import RULES, Rule
from invariants.read.source import is_url

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
INFORMATION_URI = "https://github.com/toninfo/deepseek-harness"


def _rule(r: Rule) -> dict[str, Any]:
    help_text = f"{r.summary}\n\nWhy it matters: {r.rationale}" + (f"\n\nExample: {r.example}" if r.example else "")
    help_md = f"{r.summary}\n\n**Why it matters:** {r.rationale}" + (
        f"\n\n**Example:** `{r.example}`" if r.example else ""
    )
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.rationale},
        "help": {"text": help_text, "markdown": help_md},
        "defaultConfiguration": {"level": LEVELS.get(r.severity, "warning")},
        "properties": {"category": r.category, "tags": [r.category], "severity": r.severity},
    }


def artifact_location(file: str, base: Path | None) -> dict[str, Any]:
    if is_url(file):
        return {"uri": file}
    p = Path(file)
    absolute = p if p.is_absolute() else (Path.cwd() / p)
    absolute = Path(*absolute.parts)  # normalise separators
    if base is not None:
        try:
            rel = absolute.resolve().relative_to(base.resolve())
            return {"uri": quote(rel.as_posix()), "uriBaseId": "SRCROOT"}
        except (ValueError, OSError):
            pass
    try:
        return {"uri": absolute.resolve().as_uri()}
    except (ValueError, OSError):
        return {"uri": quote(absolute.as_posix())}


def _result(f: Finding, index: dict[str, int], base: Path | None) -> dict[str, Any]:
    from invariants.gate.baseline import fingerprint

    res: dict[str, Any] = {
        "ruleId": f.rule,
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": f.message},
    }
    if f.rule in index:
        res["ruleIndex"] = index[f.rule]
    loc: dict[str, Any] = {}
    if f.file:
        phys: dict[str, Any] = {"artifactLocation": artifact_location(f.file, base)}
        if f.line is not None and f.line >= 1:
            phys["region"] = {"startLine": f.line}
        loc["physicalLocation"] = phys
    logical = []
    if f.session:
        name = f.session
        if f.turn is not None:
            name += f"/turn {f.turn}" + (f"/step {f.step}" if f.step is not None else "")
        logical.append({"name": f.session, "fullyQualifiedName": name, "kind": "module"})
    if logical:
        loc["logicalLocations"] = logical
    if loc:
        res["locations"] = [loc]
    res["partialFingerprints"] = {"inspectorFingerprint/v1": fingerprint(f)}
    props: dict[str, Any] = {"category": f.category}
    for key in ("session", "seq", "turn", "step", "path"):
        value = getattr(f, key)
        if value is not None:
            props[key] = value
    if f.detail:
        props["detail"] = f.detail
    res["properties"] = props
    return res


def sarif_log(result: CheckResult | ReportView, ctx: ReportContext, results: Any = None) -> dict[str, Any]:
    """The SARIF document; ``results`` stands in for the list of results (a stream marker), else they
    are made here from the result's findings."""
    view = view_of(result)
    base = ctx.base_dir if ctx.base_dir is not None else Path.cwd()
    rules = [_rule(r) for r in RULES.values()]
    index = {r["id"]: i for i, r in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "inspector",
                "fullName": "dsh session-log invariant checker",
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {"SRCROOT": {"uri": base.resolve().as_uri().rstrip("/") + "/"}},
        "results": results if results is not None else [_result(f, index, base) for f in view.findings()],
        "invocations": [
            {
                "executionSuccessful": not view.problems,
                "toolExecutionNotifications": [{"level": "error", "message": {"text": p}} for p in view.problems],
            }
        ],
        "columnKind": "unicodeCodePoints",
        "properties": {"summary": view.summary()},
    }
    if ctx.tool_version:
        run["tool"]["driver"]["version"] = ctx.tool_version
        run["tool"]["driver"]["semanticVersion"] = ctx.tool_version
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_sarif(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    """The SARIF document with its results streamed from the view's findings."""
    from invariants.gate.formats.streamjson import marker, write_document

    base = ctx.base_dir if ctx.base_dir is not None else Path.cwd()
    index = {code: i for i, code in enumerate(RULES)}
    results = (_result(f, index, base) for f in view.findings())
    write_document(sarif_log(view, ctx, marker("results")), [("results", results)], out, not view.plain_json())
