"""The log ledger: is each log still the log a previous check saw, plus appends?

A resume seeds the new loop instance with the *whole* stored log and only
appends after it (LOG-FORMAT.md §8; a crash repair only cuts a torn tail
after the last complete line and appends closers, §1.6).  So the events
before a resume anchor must be exactly the previous instance's log.  From a
single log that promise cannot be checked: a consistently rewritten prefix
(an edited tool result, a dropped turn with renumbered seqs) leaves no trace
in the log itself; the contract rules (EVT*, LOG003) only catch inconsistent
edits, and DIV001 only catches rewritten surface events that a capture saw.

The ledger supplies the missing evidence: the previous observation.  For
every checked session whose log has no torn tail it records the number of
events and bytes and the SHA-256 of those bytes (decompressed for
``.jsonl.zstd``).  On the next check with the same ledger, a log that no
longer begins with the recorded bytes gets RSM001 (an error), naming the
resume anchors that now continue a history the previous instance did not
write.  Like ``known_hosts``, a mismatching entry is kept, not overwritten:
delete it (or the ledger) to accept the rewritten log.  Entries of sessions
not checked in a run are kept as they are.

Ledger file (JSON)::

    {"version": 1, "sessions": {"<id>": {"file", "events", "bytes", "sha256"}}}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from invariants.model.atomic import write_atomic, write_error
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.replay.model import SessionModel

LEDGER_VERSION = 1
_BLOCK = 1 << 20


class LedgerError(ValueError):
    """The ledger file exists but is not a ledger."""


def _stream(path: Path) -> Iterator[bytes]:
    """The log's bytes as the harness reads them: raw, or the decompressed frames."""
    name = path.name
    if name.endswith((".zstd", ".zst")):
        from invariants.read.zstdio import FrameError, iter_frames

        with open(path, "rb") as fh:
            try:
                yield from iter_frames(fh)
            except FrameError:
                return
        return
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_BLOCK)
            if not block:
                return
            yield block


def prefix_digest(path: str | os.PathLike, nbytes: int) -> tuple[str, int]:
    """SHA-256 of the first ``nbytes`` bytes of the log stream, and how many there were."""
    import hashlib  # deferred: only a run with --ledger hashes logs

    h = hashlib.sha256()
    left = nbytes
    for block in _stream(Path(path)):
        if left <= 0:
            break
        part = block[:left]
        h.update(part)
        left -= len(part)
    return h.hexdigest(), nbytes - left


def read_ledger(path: str | os.PathLike) -> dict[str, Any]:
    p = Path(path)
    if not p.exists():
        return {"version": LEDGER_VERSION, "sessions": {}}
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LedgerError(f"{path}: not a readable ledger ({exc})") from None
    if not isinstance(doc, dict) or doc.get("version") != LEDGER_VERSION or not isinstance(doc.get("sessions"), dict):
        raise LedgerError(f"{path}: not an inspector log ledger")
    return doc


def _resume_seqs(m: Any) -> list[int]:
    """Seqs of the session's resume anchors: a SessionSummary lists them, a SessionModel has its instances."""
    if isinstance(m, SessionModel):
        return [i.seq for i in m.instances if i.reason == "resume"]
    return list(m.resumes)


def _verify(m: Any, entry: dict, ledger_file: str) -> Finding | None:
    try:
        n = int(entry["bytes"])
        recorded = str(entry["sha256"])
        events = int(entry.get("events", 0))
    except (KeyError, TypeError, ValueError):
        return None
    path = str(m.source.path)
    try:
        digest, have = prefix_digest(path, n)
    except OSError:
        return None
    if have == n and digest == recorded:
        return None
    resumes = [s for s in _resume_seqs(m) if s >= events] if have == n else _resume_seqs(m)
    how = f"it is now {have} bytes, shorter than the {n} recorded" if have < n else f"its first {n} bytes changed"
    message = (
        f"this log no longer begins with the {events} events a previous check recorded in the ledger {ledger_file} "
        f"({how}): "
        "the log was rewritten, not appended to"
    )
    if resumes:
        message += f"; the resume at seq {resumes[0]} continues a history that is not the previous instance's log"
    return make_finding(
        "RSM001",
        message,
        file=m.file,
        session=m.id,
        line=1,
        detail={
            "ledger": ledger_file,
            "recorded_events": events,
            "recorded_bytes": n,
            "recorded_sha256": recorded,
            "bytes_now": have,
            "resume_seqs": resumes[:20],
        },
    )


def apply_ledger(ledger_file: str | os.PathLike, sessions: Iterable[Any], update: bool = True) -> list[Finding]:
    """RSM001 findings for ``sessions`` (SessionModel or SessionSummary), then record them."""
    doc = read_ledger(ledger_file)
    entries: dict[str, Any] = doc["sessions"]
    findings: list[Finding] = []
    changed = False
    for m in sessions:
        if m.source.member is not None:
            continue  # a session inside a SQLite database is not a byte stream of its own
        entry = entries.get(m.id)
        if isinstance(entry, dict):
            f = _verify(m, entry, str(ledger_file))
            if f is not None:
                findings.append(f)
                continue  # keep the old record: the mismatch stays visible until someone accepts it
        if m.torn or not m.bytes:
            continue
        path = str(m.source.path)
        try:
            digest, have = prefix_digest(path, m.bytes)
        except OSError:
            continue
        new = {"file": os.path.abspath(path), "events": m.events, "bytes": have, "sha256": digest}
        if entries.get(m.id) != new:
            entries[m.id] = new
            changed = True
    if update and changed:
        try:
            write_atomic(
                ledger_file,
                json.dumps({"version": LEDGER_VERSION, "sessions": dict(sorted(entries.items()))}, indent=1) + "\n",
            )
        except OSError as exc:
            raise LedgerError(write_error(ledger_file, "ledger", exc)) from None
    return findings
