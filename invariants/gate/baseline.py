"""Baselines: adopt the gate on a corpus that already has known findings.

``--write-baseline FILE`` records the current findings; ``--baseline FILE``
then reports only findings that are not in it, and lists the baseline
entries that no longer occur.

A finding is matched by ``(file, session, rule, fingerprint)``, never by its
line or seq.  ``file`` is the log's path relative to the baseline file's
folder (the baseline's root), so the match does not depend on the working
directory, and real logs that reuse a session id in several files (every
``t<NN>`` folder of the corpus does) keep separate entries.  The fingerprint
hashes the rule, the turn and step, the JSON path and the message with
positional numbers (``line 12``, ``seq 40``, ``requests.jsonl:7``) blanked
out.  So an edit that shifts lines or seqs (an extra event in an earlier
turn, a capture line inserted above) keeps the baseline valid, while a
finding that moves to another step, changes its path or says something else
is new.  Matching is by multiset: a baseline entry absorbs one finding, so a
second identical finding is reported.  An entry is *stale* (no longer occurs)
only when its file was checked in this run; entries of other files are
counted as unchecked.

File format (JSON, sorted, stable for code review)::

    {"version": 2, "tool": "inspector 0.1.0",
     "findings": [{"file", "session", "rule", "fingerprint", "line", "turn", "step", "message"}]}

Only ``file``, ``session``, ``rule`` and ``fingerprint`` are used for
matching; the other fields are there for a human reading the file.
Version 1 files (matched by session id alone, so one file's entries hid
another's findings) are rejected with a message that says how to rewrite
them: their entries cannot be tied to a file reliably, and a gate must not
guess.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Iterable

from invariants.model.atomic import write_atomic
from invariants.model.findings import Finding
from invariants.model.userfile import read_text
from invariants.read.source import UrlPath, is_url

BASELINE_VERSION = 2

# Positional numbers in messages: they move when unrelated content moves.  Compiled on first use
# (``re`` keeps it): a run without a baseline fingerprints nothing.
_POSITIONAL = (
    r"\b(line|lines|seq|seqs|seq0|logLength|byte|bytes|frame|offset|position)(\s+)(\d+)\b"
    r"|(\.jsonl(?:\.zstd|\.zst)?):(\d+)\b"
)


def normalize_message(message: str) -> str:
    def sub(m: re.Match) -> str:
        if m.group(1):
            return f"{m.group(1)}{m.group(2)}#"
        return f"{m.group(4)}:#"

    return re.sub(_POSITIONAL, sub, message, flags=re.IGNORECASE)


def _absolute(file: str | os.PathLike | UrlPath) -> str:
    """A file as an absolute, normalised path (symlinks kept, so both sides of a match agree); a URL as written."""
    if isinstance(file, UrlPath) or is_url(file):
        return str(file)
    return os.path.abspath(os.fspath(file))


def _root_of(baseline: str | os.PathLike) -> str:
    """The baseline's root: the folder of the baseline file (the working directory for none)."""
    return os.path.dirname(_absolute(baseline)) if baseline else os.getcwd()


def relative_file(file: str | None, root: str) -> str:
    """A finding's file relative to the baseline's root, in ``/`` form (``""`` for none)."""
    if not file:
        return ""
    if is_url(file):
        return file
    return PurePath(os.path.relpath(_absolute(file), root)).as_posix()


def fingerprint(f: Finding) -> str:
    """A line-independent identity of a finding's content and step (16 hex digits)."""
    payload = [f.rule, f.turn, f.step, f.path, normalize_message(f.message)]
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), default=str)
    import hashlib  # deferred: a run without a baseline computes no fingerprint

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _key(file: str, session: str, rule: str, fp: str) -> tuple[str, str, str, str]:
    return (file, session, rule, fp)


def _entry_key(e: dict[str, Any]) -> tuple[str, str, str, str]:
    return _key(e.get("file") or "", e.get("session") or "", e["rule"], e["fingerprint"])


def _finding_key(f: Finding, root: str) -> tuple[str, str, str, str]:
    return _key(relative_file(f.file, root), f.session or "", f.rule, fingerprint(f))


def entry_of(f: Finding, root: str) -> dict[str, Any]:
    return {
        "file": relative_file(f.file, root),
        "session": f.session or "",
        "rule": f.rule,
        "fingerprint": fingerprint(f),
        "line": f.line,
        "turn": f.turn,
        "step": f.step,
        "message": f.message,
    }


def _entry_sort_key(e: dict) -> tuple:
    return (
        e.get("file") or "",
        e.get("session") or "",
        e.get("rule") or "",
        e.get("fingerprint") or "",
        e.get("line") or 0,
    )


def baseline_document(findings: Iterable[Finding], tool_version: str, root: str) -> dict[str, Any]:
    entries = sorted((entry_of(f, root) for f in findings), key=_entry_sort_key)
    return {"version": BASELINE_VERSION, "tool": f"inspector {tool_version}", "findings": entries}


def write_baseline(path: str | os.PathLike, findings: Iterable[Finding], tool_version: str) -> int:
    """Write the baseline of ``findings`` to ``path`` (files relative to its folder); the entry count."""
    doc = baseline_document(findings, tool_version, _root_of(path))
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a file name's undecodable byte, a JSON "\ud800"): escaped
            text = json.dumps(doc, indent=2, ensure_ascii=True, default=str) + "\n"
    write_atomic(path, text)
    return len(doc["findings"])


class BaselineError(ValueError):
    """The baseline file is missing, not JSON or not a baseline."""


def read_baseline(path: str | os.PathLike) -> list[dict[str, Any]]:
    try:
        doc = json.loads(read_text(path))
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BaselineError(f"{path}: not a readable baseline ({exc})") from None
    if isinstance(doc, dict) and doc.get("version") == 1 and isinstance(doc.get("findings"), list):
        raise BaselineError(
            f"{path}: a version 1 baseline matches findings by session id alone, so it hides findings of other "
            "logs that reuse the id; write it again with `inspector check PATH... --write-baseline "
            f"{path}` (version {BASELINE_VERSION} keys each entry by its log file)"
        )
    if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION or not isinstance(doc.get("findings"), list):
        raise BaselineError(
            f'{path}: not an inspector baseline (expected {{"version": {BASELINE_VERSION}, "findings": [...]}})'
        )
    entries = []
    for i, e in enumerate(doc["findings"]):
        if not (
            isinstance(e, dict)
            and isinstance(e.get("file"), str)
            and isinstance(e.get("rule"), str)
            and isinstance(e.get("fingerprint"), str)
            and isinstance(e.get("session", ""), str)
        ):
            raise BaselineError(f"{path}: entry {i} lacks file, session, rule or fingerprint")
        entries.append(e)
    return entries


@dataclass(slots=True)
class BaselineOutcome:
    """What applying a baseline did."""

    file: str
    new: list[Finding]  # findings not in the baseline: these are reported
    suppressed: int  # findings the baseline absorbed
    stale: list[dict[str, Any]] = field(default_factory=list)  # entries of checked files that no longer occur
    unchecked: int = 0  # entries whose file was not checked in this run
    count: int | None = None  # how many new findings, when a streamed run did not keep ``new``

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "suppressed": self.suppressed,
            "new": len(self.new) if self.count is None else self.count,
            "stale": self.stale,
            "unchecked": self.unchecked,
        }


def apply_baseline(
    findings: list[Finding], entries: list[dict[str, Any]], checked: Iterable[str], file: str = ""
) -> BaselineOutcome:
    """Split ``findings`` into new ones and ones the baseline at ``file`` knows.

    ``file`` is the baseline's path: entry files are relative to its folder.
    ``checked`` names the files (logs, capture files, files of findings) this
    run looked at, as :func:`checked_owners` gives them: a stale entry is one
    of a checked file that no longer occurs; entries of other files are only
    counted.
    """
    matcher = BaselineMatcher(entries, file)
    new = [f for f in findings if not matcher.take(f)]
    for c in checked:
        matcher.saw(c)
    return matcher.outcome(new)


class BaselineMatcher:
    """:func:`apply_baseline` one finding at a time (in report order), for a run that streams its report:
    :meth:`take` each finding, :meth:`saw` (or :meth:`saw_session`) each file the run looked at."""

    def __init__(self, entries: list[dict[str, Any]], file: str = "") -> None:
        self.entries = entries
        self.file = file
        self.root = _root_of(file)
        self.budget: Counter = Counter(_entry_key(e) for e in entries)
        self.entry_files = {k[0] for k in self.budget}
        self.checked_files: set[str] = set()  # only the files some entry names: a stale entry is one of them
        self.suppressed = 0

    def take(self, f: Finding) -> bool:
        """Whether the baseline absorbs ``f`` (one entry absorbs one finding)."""
        k = _finding_key(f, self.root)
        if self.budget[k] > 0:
            self.budget[k] -= 1
            self.suppressed += 1
            return True
        return False

    def saw(self, owner: Any) -> None:
        """The run looked at ``owner`` (a log, ``db#session``, a capture file)."""
        rel = relative_file(_absolute(owner), self.root)
        if rel in self.entry_files:
            self.checked_files.add(rel)

    def saw_session(self, m: Any) -> None:
        """A checked session: its file and the capture beside it (:func:`checked_owners`)."""
        from invariants.read.capture import find_capture

        self.saw(m.file)
        cp = find_capture(m.source.path)
        if cp is not None:
            self.saw(cp)

    def outcome(self, new: list[Finding] | None, count: int | None = None) -> BaselineOutcome:
        """What the baseline did; ``new`` the findings it did not absorb (None: a streamed run kept only
        their ``count``)."""
        stale: list[dict[str, Any]] = []
        unchecked = 0
        left = Counter(self.budget)
        for e in sorted(self.entries, key=_entry_sort_key):
            k = _entry_key(e)
            if left[k] <= 0:
                continue
            left[k] -= 1
            if k[0] in self.checked_files:
                stale.append(e)
            else:
                unchecked += 1
        if new is not None:
            return BaselineOutcome(self.file, new, self.suppressed, stale, unchecked)
        return BaselineOutcome(self.file, [], self.suppressed, stale, unchecked, count)


def checked_owners(
    sessions: Iterable[Any], findings: Iterable[Finding], captures: Iterable[Any] | None = None
) -> set[str]:
    """Files a run looked at, as absolute paths: every checked log (``db#session`` for a session of
    a database), the capture files beside them (or given explicitly), and the files of findings."""
    from invariants.read.capture import find_capture

    out: set[str] = set()
    for m in sessions:
        out.add(_absolute(m.file))
        cp = find_capture(m.source.path)
        if cp is not None:
            out.add(_absolute(cp))
    for c in captures or []:
        out.add(_absolute(c))
    out |= {_absolute(f.file) for f in findings if f.file}
    return out
