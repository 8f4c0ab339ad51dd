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
delete it (or the ledger) to accept the rewritten log.  Entries of logs
not checked in a run are kept as they are.

Entries are keyed per file: the log's path relative to the root it was found
under (the folder named on the command line; for a log named alone, its
folder), then its session id.  Two files that carry one id (a copy, a fork
gone wrong) are two entries, never one that each run overwrites.

Ledger file (JSON)::

    {"version": 2, "logs": {"<path under its root>": {"<id>": {"events", "bytes", "sha256"}}}}

A version-1 ledger (keyed by session id alone, each entry naming its
absolute ``file``) is migrated when read: an entry whose file is one this run
checks is keyed by that file's path under its root, any other by the absolute
path it recorded; the run says so once (a note) and writes version 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from invariants.model.atomic import write_atomic, write_error
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.model.userfile import read_text
from invariants.replay.model import SessionModel

LEDGER_VERSION = 2
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
    """The ledger as ``{"version": 2, "logs": {...}}``; a version-1 document is returned as read (see
    :func:`_migrate`); :class:`LedgerError` for anything that is not a ledger."""
    p = Path(path)
    if not p.exists():
        return {"version": LEDGER_VERSION, "logs": {}}
    try:
        doc = json.loads(read_text(p))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LedgerError(f"{path}: not a readable ledger ({exc})") from None
    if isinstance(doc, dict) and doc.get("version") == 1 and isinstance(doc.get("sessions"), dict):
        return doc
    if (
        not isinstance(doc, dict)
        or doc.get("version") != LEDGER_VERSION
        or not isinstance(doc.get("logs"), dict)
        or not all(isinstance(v, dict) for v in doc["logs"].values())
    ):
        raise LedgerError(f"{path}: not an inspector log ledger")
    return doc


def ledger_key(source: Any) -> str:
    """A log's key in the ledger: its path relative to the root it was found under (``/`` separated)."""
    path, root = source.path, source.root
    if not isinstance(path, (str, os.PathLike)) or not isinstance(root, (str, os.PathLike)):
        return str(path)  # a URL: as written
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return rel.replace(os.sep, "/")


def _migrate(doc: dict[str, Any], sessions: list[Any]) -> dict[str, dict[str, Any]]:
    """Version-1 entries (by id, with an absolute ``file``) keyed by file: the path under its root when
    this run checks that file, else the absolute path recorded."""
    by_file = {os.path.abspath(str(m.source.path)): ledger_key(m.source) for m in sessions if m.source.member is None}
    logs: dict[str, dict[str, Any]] = {}
    for sid, entry in doc["sessions"].items():
        if not isinstance(entry, dict):
            continue
        file = str(entry.get("file", ""))
        key = by_file.get(file, file)
        logs.setdefault(key, {})[sid] = {k: v for k, v in entry.items() if k != "file"}
    return logs


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


class Ledger:
    """A ledger read once, each checked session verified and recorded as it comes (:meth:`see`, in the
    run's order), written back once at the end (:meth:`save`) when anything changed.  A version-1
    ledger is migrated as the run reaches each file it names (see :func:`_migrate`)."""

    def __init__(self, ledger_file: str | os.PathLike, update: bool = True, notes: list[str] | None = None) -> None:
        self.file = ledger_file
        self.update = update
        doc = read_ledger(ledger_file)
        self.changed = False
        self.v1: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # absolute file -> its version-1 entries
        if doc.get("version") == 1:
            self.logs: dict[str, dict[str, Any]] = {}
            for sid, entry in doc["sessions"].items():
                if isinstance(entry, dict):
                    self.v1.setdefault(str(entry.get("file", "")), []).append((sid, entry))
            self.changed = True
            if notes is not None:
                notes.append(
                    f"{ledger_file}: ledger migrated from version 1 (one entry per session id) to version 2 "
                    f"(one entry per file and session id){'; written back' if update else ''}"
                )
        else:
            self.logs = doc["logs"]

    def see(self, m: Any) -> list[Finding]:
        """RSM001 for ``m`` (a SessionModel or SessionSummary) when its log was rewritten; else it is recorded."""
        if m.source.member is not None:
            return []  # a session inside a SQLite database is not a byte stream of its own
        key = ledger_key(m.source)
        if self.v1:
            for sid, entry in self.v1.pop(os.path.abspath(str(m.source.path)), []):
                self.logs.setdefault(key, {})[sid] = {k: v for k, v in entry.items() if k != "file"}
        entries = self.logs.setdefault(key, {})
        old = entries.get(m.id)
        if isinstance(old, dict):
            f = _verify(m, old, str(self.file))
            if f is not None:
                return [f]  # keep the old record: the mismatch stays visible until someone accepts it
        if m.torn or not m.bytes:
            return []
        path = str(m.source.path)
        try:
            digest, have = prefix_digest(path, m.bytes)
        except OSError:
            return []
        new = {"events": m.events, "bytes": have, "sha256": digest}
        if entries.get(m.id) != new:
            entries[m.id] = new
            self.changed = True
        return []

    def save(self) -> None:
        """Write the ledger back (atomically) when the run changed it."""
        for file, old in self.v1.items():  # version-1 entries of files this run did not check
            for sid, entry in old:
                self.logs.setdefault(file, {})[sid] = {k: v for k, v in entry.items() if k != "file"}
        self.v1 = {}
        if not (self.update and self.changed):
            return
        kept = {k: dict(sorted(v.items())) for k, v in sorted(self.logs.items()) if v}
        try:
            write_atomic(self.file, json.dumps({"version": LEDGER_VERSION, "logs": kept}, indent=1) + "\n")
        except OSError as exc:
            raise LedgerError(write_error(self.file, "ledger", exc)) from None
        self.changed = False


def apply_ledger(
    ledger_file: str | os.PathLike, sessions: Iterable[Any], update: bool = True, notes: list[str] | None = None
) -> list[Finding]:
    """RSM001 findings for ``sessions`` (SessionModel or SessionSummary), then record them.  A sentence
    about a migrated ledger is appended to ``notes`` when given."""
    ledger = Ledger(ledger_file, update, notes)
    findings = [f for m in sessions for f in ledger.see(m)]
    ledger.save()
    return findings
