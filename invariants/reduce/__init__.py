"""Reduce a log to the smallest one that keeps a finding, optionally redacted: a shareable reproduction.

:func:`reduce_log` finds the target finding, shrinks the log and its captures together (every candidate a
well-formed, renumbered log checked in-process by the one pipeline), and :func:`write_repro` writes the result
and its ``repro.json`` manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from invariants.gate.pipeline import check
from invariants.model.atomic import atomic_folder, check_target
from invariants.model.findings import Finding
from invariants.reduce.logfile import LogData, ReduceInputError, read_log
from invariants.reduce.redact import Redactor
from invariants.reduce.search import Search
from invariants.reduce.subject import (
    CaptureLine,
    Oracle,
    Subject,
    materialise,
    parent_name,
    signature,
    tie_captures,
)

__all__ = ["FindingNotFound", "ReduceInputError", "Reduction", "reduce_log", "write_repro"]


class FindingNotFound(LookupError):
    """The log has no finding with that rule at that place; ``findings`` are the ones it has."""

    def __init__(self, message: str, findings: list[Finding]) -> None:
        super().__init__(message)
        self.findings = findings


@dataclass
class Reduction:
    subject: Subject
    keep: list[int]
    keep_lines: list[int]
    target: Finding
    manifest: dict[str, Any] = field(default_factory=dict)


def _matches(f: Finding, rule: str, at: str | None) -> bool:
    if f.rule != rule.upper():
        return False
    if at is None:
        return True
    if "." in at:
        turn, _, step = at.partition(".")
        return str(f.turn) == turn and str(f.step) == step
    return str(f.seq) == at


def reduce_log(
    path: Path,
    rule: str,
    *,
    at: str | None = None,
    captures: Path | None = None,
    redact: bool = False,
    max_seconds: float | None = None,
    progress: bool | Callable[[int, int], None] = False,
) -> Reduction:
    """Reduce ``path`` to a minimal log that still shows the finding ``rule`` (at ``at``: TURN.STEP or SEQ)."""
    started = time.monotonic()
    log = read_log(path, captures)
    original = check(path, None if captures is None else _options(captures)).findings
    target = next((f for f in original if _matches(f, rule, at)), None)
    if target is None:
        raise FindingNotFound(f"no {rule.upper()} finding{'' if at is None else ' at ' + at} in {path}", original)
    subject = Subject(log, tie_captures(log, path))
    allowed = {f.rule for f in original}
    oracle = Oracle(subject, signature(target), allowed)
    keep, keep_lines = list(range(len(log.events))), list(range(len(subject.lines)))
    try:
        deadline = None if max_seconds is None else started + max_seconds
        search = Search(oracle, deadline, set(keep), set(keep_lines), progress=progress)
        where = (target.detail or {}).get("step_seq", target.seq)  # a request finding: the step that sent it
        search.run(next((i for i, ev in enumerate(log.events) if ev["seq"] == where), None))
        # A candidate that was taken shows the finding; only when none was must the whole log, rewritten, be
        # checked (on a long log that is the largest candidate of all, so it is not checked up front).
        untouched = (search.events, search.lines) == (set(keep), set(keep_lines)) and not search.shortened
        if untouched and not oracle.holds(keep, keep_lines):
            raise FindingNotFound(f"{rule.upper()} does not survive rewriting {path} (not reducible)", original)
        keep, keep_lines = sorted(search.events), sorted(search.lines)
        subject = oracle.subject  # with its long strings cut
        redacted, kept = False, {}
        if redact:
            shown = _redacted(subject, keep, keep_lines)
            if Oracle(shown[0], oracle.target, allowed).holds(keep, keep_lines):
                subject, redacted, kept = shown[0], True, shown[1]
        events_after = len(keep)
        lines_after = len(_written_lines(subject, keep, keep_lines))
    finally:
        oracle.close()
    manifest = {
        "rule": target.rule,
        "place": {"seq": target.seq, "turn": target.turn, "step": target.step, "region": signature(target)[1:]},
        "source": {"name": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
        "events": {"before": len(log.events), "after": events_after},
        "captures": {"before": len(log.captures), "after": lines_after},
        "candidates": oracle.candidates,
        "strings_shortened": search.shortened,
        "chunk_runs_collapsed": search.collapsed,
        "seconds": round(time.monotonic() - started, 3),
        "timed_out": search.timed_out,
        "redacted": redacted,
        "kept": [{"string": s, "reason": why} for s, why in sorted(kept.items())],
    }
    if log.parent is not None:
        bound = min(log.seed_length, len(log.parent.events))
        manifest["parent"] = {
            "name": parent_name(subject.log.parent or log.parent),
            "events": {"before": len(log.parent.events), "after": sum(1 for i in keep if i < bound)},
        }
    return Reduction(subject, keep, keep_lines, target, manifest)


def _options(captures: Path) -> Any:
    from invariants.gate.result import CheckOptions

    return CheckOptions(captures=[captures])


def _redacted(subject: Subject, keep: list[int], keep_lines: list[int]) -> tuple[Subject, dict[str, str]]:
    r = Redactor()
    log = subject.log
    header = r.value(log.header)
    kept = set(keep)
    events = [r.value(e) if i in kept else e for i, e in enumerate(log.events)]
    parent = None
    if log.parent is not None:
        p = log.parent
        parent = LogData(p.name, r.value(p.header), [r.value(e) for e in p.events])  # written whole: all redacted
    lines = []
    written = set(keep_lines)
    for k, cl in enumerate(subject.lines):
        if k not in written:
            lines.append(cl)  # not in the repro: left as it is
            continue
        line = {key: v for key, v in cl.line.items() if key != "sessionFile"}
        patch = None if cl.patch is None else {**r.value(cl.patch), "order": cl.patch["order"]}
        lines.append(CaptureLine(r.value(line), cl.step_index, patch))
    return Subject(LogData(log.name, header, events, [c.line for c in lines], parent), lines), r.kept


def _written_lines(subject: Subject, keep: list[int], keep_lines: list[int]) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="inspector-reduce-") as tmp:
        materialise(subject, keep, keep_lines, Path(tmp))
        cap = Path(tmp) / "requests.jsonl"
        return cap.read_text(encoding="utf-8").splitlines() if cap.exists() else []


TEST_TEMPLATE = '''"""Regression test written by `inspector reduce --as-test`: this log must show {rule}.

It judges the log by the default configuration, not the project's: an `ignore` or `severity` in the
surrounding inspector.toml / [tool.inspector] must not hide the finding this test exists for.
"""

from pathlib import Path

import pytest

from invariants import Config

pytestmark = pytest.mark.inspector

RULE = {rule!r}
LOG = Path(__file__).parent / {name!r}


def test_repro_shows_{lower}_{digest}(inspector_check):
    result = inspector_check(LOG, config=Config())
    assert any(f.rule == RULE for f in result.findings), [f.rule for f in result.findings]
'''


def repro_test_name(rule: str, files: list[Path]) -> str:
    """``test_repro_<rule>_<8 hex>.py``: the digest of the repro's log and capture, so two repros in one tree
    never share a module name (pytest refuses two ``test_repro.py`` without packages) and the same repro
    always gets the same name."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.name):
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return f"test_repro_{rule.lower()}_{digest.hexdigest()[:8]}.py"


def write_repro(reduction: Reduction, folder: Path, as_test: bool = False, into: bool = False) -> list[Path]:
    """Write the reduced log (under its original name), requests.jsonl when captures are involved, repro.json
    and, with ``as_test``, a test (:func:`repro_test_name`) into ``folder``; the files written.

    The folder is complete or absent: it is built beside ``folder`` under a temporary name and renamed into
    place.  An existing ``folder`` is replaced only when it is empty or an earlier repro (regular files only,
    ``repro.json`` among them); any other is :class:`FileExistsError`, left as it is, unless ``into``: then
    the repro's files are renamed into it one by one (each whole; files of other names are left alone)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists() and not folder.is_symlink() and not _replaceable(folder):
        if not into:
            raise FileExistsError(17, "exists and is not an earlier repro; choose another folder", str(folder))
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".repro"))
        written = write_repro(reduction, staging, as_test)
        try:
            for f in written:
                check_target(folder / f.name)  # never through a link planted at a name
                os.replace(f, folder / f.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return [folder / f.name for f in written]
    with atomic_folder(folder, replace=True) as tmp:
        materialise(reduction.subject, reduction.keep, reduction.keep_lines, tmp)
        data = sorted(tmp.iterdir())
        manifest = tmp / "repro.json"
        manifest.write_text(json.dumps(reduction.manifest, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
        if as_test:
            rule = reduction.target.rule
            test = tmp / repro_test_name(rule, data)
            digest = test.stem.rsplit("_", 1)[1]
            name = reduction.subject.log.name
            test.write_text(
                TEST_TEMPLATE.format(rule=rule, name=name, lower=rule.lower(), digest=digest), encoding="utf-8"
            )
        names = sorted(f.name for f in tmp.iterdir())
    return [folder / n for n in names]


def _replaceable(folder: Path) -> bool:
    """An empty folder, or one that holds only files, repro.json among them (what an earlier run wrote)."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    if not entries:
        return True
    return any(e.name == "repro.json" for e in entries) and all(e.is_file() and not e.is_symlink() for e in entries)
