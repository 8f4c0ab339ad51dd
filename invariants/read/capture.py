"""Recorded requests (CAPTURE-FORMAT.md): finding, reading and routing them.

A capture says what was actually sent.  Lines are routed to sessions by
``sessionId`` (one file may cover a parent and its forked children) and
anchored to a step by ``logLength`` (else ``turn``/``step``).  Capture paths
are only ever looked up beside the log; a ``sessionFile`` hint is a bare name
and never resolves outside that folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from invariants.model.findings import Finding
from invariants.model.jsonvalue import is_safe_int, shorten
from invariants.model.registry import make_finding
from invariants.read.line_records import DEFAULT_MAX_LINE, FrameProblem
from invariants.read.lines import iter_lines
from invariants.read.load import parse_json
from invariants.read.source import LogPath, UrlPath, strip_log_suffix

CAPTURE_SUFFIXES = (".jsonl", ".jsonl.zstd", ".jsonl.zst")


@dataclass(slots=True)
class Recorded:
    file: str
    line: int
    request: dict
    session_id: str | None = None
    session_file: str | None = None
    log_length: int | None = None
    turn: Any = None
    step: Any = None
    loop_built: bool = True
    time: Any = None
    extra: dict = field(default_factory=dict)  # verdict, origin, test...: shown, never compared


def find_capture(log_path: LogPath) -> LogPath | None:
    """``requests.jsonl`` beside the log, else ``<log name>.requests.jsonl`` (plain or zstd)."""
    folder = log_path.parent
    names = [f"requests{s}" for s in CAPTURE_SUFFIXES] + [
        f"{strip_log_suffix(log_path.name)}.requests{s}" for s in CAPTURE_SUFFIXES
    ]
    if isinstance(folder, UrlPath):  # one listing, not a round trip per candidate name
        listing = folder.children()
        for name in names:
            entry = listing.get(name)
            if entry is not None and entry.get("type") == "file" and not entry.get("islink"):
                return folder / name
        return None
    for name in names:
        candidate = folder / name
        if candidate.is_file() and not candidate.is_symlink():
            return candidate
    return None


def read_capture(path: LogPath, max_line: int | None = None) -> tuple[list[Recorded], list[Finding]]:
    records: list[Recorded] = []
    findings: list[Finding] = []
    file = str(path)
    for raw in _lines(path, findings, max_line or DEFAULT_MAX_LINE):
        if raw.oversized:
            findings.append(
                make_finding(
                    "LOG013",
                    f"capture line {raw.number} is {raw.oversized} bytes, over the line limit; not read",
                    file=file,
                    line=raw.number,
                )
            )
            continue
        if not raw.data or raw.data.isspace():
            continue
        obj, err = parse_json(raw.data)
        problem = f"not JSON ({err})" if err else _line_problem(obj)
        if problem:
            findings.append(make_finding("LOG013", f"capture line {raw.number}: {problem}", file=file, line=raw.number))
            continue
        records.append(
            Recorded(
                file=file,
                line=raw.number,
                request=obj["request"],
                session_id=obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None,
                session_file=obj.get("sessionFile") if isinstance(obj.get("sessionFile"), str) else None,
                log_length=obj.get("logLength")
                if is_safe_int(obj.get("logLength")) and obj["logLength"] >= 0
                else None,
                turn=obj.get("turn"),
                step=obj.get("step"),
                loop_built=obj.get("loopBuilt", True) is not False,
                time=obj.get("time"),
                extra={
                    k: v for k, v in obj.items() if k in ("verdict", "shadowVerdict", "origin", "test", "dispatchError")
                },
            )
        )
    return records, findings


def _line_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__ if obj is not None else 'null'}, not an object"
    if not isinstance(obj.get("request"), dict):
        return "no `request` object"
    if not isinstance(obj["request"].get("messages"), list):
        return "request has no `messages` array"
    if "logLength" in obj and not (is_safe_int(obj["logLength"]) and obj["logLength"] >= 0):
        return f"logLength is not an integer >= 0: {shorten(obj['logLength'], 40)}"
    return None


def _lines(path: LogPath, findings: list[Finding], max_line: int = DEFAULT_MAX_LINE) -> Iterator:
    for raw in iter_lines(path, max_line):
        if isinstance(raw, FrameProblem):
            code = "LOG010" if raw.kind == "torn" else "LOG009"
            findings.append(
                make_finding(code, f"capture {raw.kind} zstd frame {raw.frame_index}: {raw.message}", file=str(path))
            )
            return
        yield raw
