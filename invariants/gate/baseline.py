"""Baselines: adopt the gate on a corpus that already has known findings.

``--write-baseline FILE`` records the current findings; ``--baseline FILE``
then reports only findings that are not in it, and lists the baseline
entries that no longer occur.

A finding is matched by ``(session, rule, fingerprint)``, never by its line
or seq: the fingerprint hashes the rule, the session, the turn and step, the
JSON path and the message with positional numbers (``line 12``, ``seq 40``,
``requests.jsonl:7``) blanked out.  So an edit that shifts lines or seqs
(an extra event in an earlier turn, a capture line inserted above) keeps
the baseline valid, while a finding that moves to another step, changes its
path or says something else is new.  Matching is by multiset: a baseline
entry absorbs one finding, so a second identical finding is reported.

File format (JSON, sorted, stable for code review)::

    {"version": 1, "tool": "inspector 0.1.0",
     "findings": [{"session", "rule", "fingerprint", "file", "line", "turn", "step", "message"}]}

Only ``session``, ``rule`` and ``fingerprint`` are used for matching; the
other fields are there for a human reading the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Iterable

from invariants.model.findings import Finding

BASELINE_VERSION = 1

# Positional numbers in messages: they move when unrelated content moves.
_POSITIONAL = re.compile(
    r"\b(line|lines|seq|seqs|seq0|logLength|byte|bytes|frame|offset|position)(\s+)(\d+)\b"
    r"|(\.jsonl(?:\.zstd|\.zst)?):(\d+)\b",
    re.IGNORECASE,
)


def normalize_message(message: str) -> str:
    def sub(m: re.Match) -> str:
        if m.group(1):
            return f"{m.group(1)}{m.group(2)}#"
        return f"{m.group(4)}:#"

    return _POSITIONAL.sub(sub, message)


def file_owner(file: str | None) -> str:
    """A session-less finding's owner: its file, relative to the working directory when under it."""
    if not file:
        return ""
    p = Path(file)
    if p.is_absolute():
        try:
            p = p.relative_to(Path.cwd())
        except ValueError:
            pass
    return PurePath(os.path.normpath(p)).as_posix()


def _owner(f: Finding) -> str:
    """What the finding belongs to: its session, else its file."""
    if f.session:
        return f.session
    return file_owner(f.file)


def fingerprint(f: Finding) -> str:
    """A line-independent identity of a finding's content and step (16 hex digits)."""
    payload = [f.rule, _owner(f), f.turn, f.step, f.path, normalize_message(f.message)]
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _key(session: str, rule: str, fp: str) -> tuple[str, str, str]:
    return (session, rule, fp)


def entry_of(f: Finding) -> dict[str, Any]:
    return {
        "session": _owner(f),
        "rule": f.rule,
        "fingerprint": fingerprint(f),
        "file": f.file,
        "line": f.line,
        "turn": f.turn,
        "step": f.step,
        "message": f.message,
    }


def _entry_sort_key(e: dict) -> tuple:
    return (
        e.get("session") or "",
        e.get("rule") or "",
        e.get("fingerprint") or "",
        e.get("file") or "",
        e.get("line") or 0,
    )


def baseline_document(findings: Iterable[Finding], tool_version: str) -> dict[str, Any]:
    entries = sorted((entry_of(f) for f in findings), key=_entry_sort_key)
    return {"version": BASELINE_VERSION, "tool": f"inspector {tool_version}", "findings": entries}


def write_baseline(path: str | os.PathLike, findings: Iterable[Finding], tool_version: str) -> int:
    doc = baseline_document(findings, tool_version)
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return len(doc["findings"])


class BaselineError(ValueError):
    """The baseline file is missing, not JSON or not a baseline."""


def read_baseline(path: str | os.PathLike) -> list[dict[str, Any]]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BaselineError(f"{path}: not a readable baseline ({exc})") from None
    if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION or not isinstance(doc.get("findings"), list):
        raise BaselineError(
            f'{path}: not an inspector baseline (expected {{"version": {BASELINE_VERSION}, "findings": [...]}})'
        )
    entries = []
    for i, e in enumerate(doc["findings"]):
        if not (
            isinstance(e, dict)
            and isinstance(e.get("rule"), str)
            and isinstance(e.get("fingerprint"), str)
            and isinstance(e.get("session", ""), str)
        ):
            raise BaselineError(f"{path}: entry {i} lacks session, rule or fingerprint")
        entries.append(e)
    return entries


@dataclass
class BaselineOutcome:
    """What applying a baseline did."""

    file: str
    new: list[Finding]  # findings not in the baseline: these are reported
    suppressed: int  # findings the baseline absorbed
    stale: list[dict[str, Any]] = field(default_factory=list)  # entries of checked sessions that no longer occur
    unchecked: int = 0  # entries whose session was not checked in this run

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "suppressed": self.suppressed,
            "new": len(self.new),
            "stale": self.stale,
            "unchecked": self.unchecked,
        }


def apply_baseline(
    findings: list[Finding], entries: list[dict[str, Any]], checked: Iterable[str], file: str = ""
) -> BaselineOutcome:
    """Split ``findings`` into new ones and ones the baseline knows.

    ``checked`` names the owners (session ids, or file names for findings
    without a session) this run looked at: a stale entry is one of a checked
    owner that no longer occurs; entries of owners not checked are ignored.
    """
    budget: Counter = Counter(_key(e.get("session") or "", e["rule"], e["fingerprint"]) for e in entries)
    new: list[Finding] = []
    suppressed = 0
    for f in findings:
        k = _key(_owner(f), f.rule, fingerprint(f))
        if budget[k] > 0:
            budget[k] -= 1
            suppressed += 1
        else:
            new.append(f)
    checked_set = set(checked)
    stale: list[dict[str, Any]] = []
    unchecked = 0
    left = Counter(budget)
    for e in sorted(entries, key=_entry_sort_key):
        k = _key(e.get("session") or "", e["rule"], e["fingerprint"])
        if left[k] <= 0:
            continue
        left[k] -= 1
        if (e.get("session") or "") in checked_set:
            stale.append(e)
        else:
            unchecked += 1
    return BaselineOutcome(file, new, suppressed, stale, unchecked)


def checked_owners(
    sessions: Iterable[Any], findings: Iterable[Finding], captures: Iterable[Any] | None = None
) -> set[str]:
    """Owners a run looked at: every checked session, the capture files beside
    them (or given explicitly), and the files of session-less findings."""
    from invariants.read.capture import find_capture

    out: set[str] = set()
    for m in sessions:
        out.add(m.id)
        cp = find_capture(m.source.path)
        if cp is not None:
            out.add(file_owner(str(cp)))
    for c in captures or []:
        out.add(file_owner(str(c)))
    out |= {_owner(f) for f in findings}
    out.discard("")
    return out
