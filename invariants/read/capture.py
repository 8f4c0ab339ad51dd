"""Recorded requests (CAPTURE-FORMAT.md): finding, reading and routing them.

A capture says what was actually sent.  Lines are routed to sessions by
``sessionId`` (one file may cover a parent and its forked children) and
anchored to a step by ``logLength`` (else ``turn``/``step``).  Capture paths
are only ever looked up beside the log; a ``sessionFile`` hint is a bare name
and never resolves outside that folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Container, Iterator

import orjson

from invariants.model.findings import Finding
from invariants.model.jsonvalue import is_safe_int, shorten
from invariants.model.registry import make_finding
from invariants.read.capture_splice import split_capture
from invariants.read.envelope import parse_json
from invariants.read.line_records import DEFAULT_MAX_LINE, FrameProblem
from invariants.read.lines import iter_lines
from invariants.read.source import LogPath, LogSource, UrlPath, capture_candidates, local_size, log_path

if TYPE_CHECKING:  # msgspec is imported only once a capture is long enough to read typed
    from invariants.read.capture_typed import Cleared


@dataclass(slots=True, eq=False)
class Recorded:
    """One recorded request.  ``request`` is parsed on first use when the line was read
    typed (``raw_fields`` then holds the request's fields as raw JSON, ``messages`` a list
    of raw messages, so a comparison can check bytes without parsing).  Two records are
    equal only if they are one (each is one line of one file)."""

    file: str
    line: int
    session_id: str | None = None
    session_file: str | None = None
    log_length: int | None = None
    turn: Any = None
    step: Any = None
    loop_built: bool = True
    time: Any = None
    extra: dict = field(default_factory=dict)  # verdict, origin, test...: shown, never compared
    raw_fields: dict[str, Any] | None = None
    text: bytes | None = None  # the capture line, kept until its request is parsed
    parsed: dict | None = None
    proof: Proof | None = None  # what vouched for ``parsed`` as the line was read, until a check takes it

    @property
    def request(self) -> dict:
        if self.parsed is None:
            self.parsed = parse_json(self.text or b"")[0]["request"]
            self.text = None
        return self.parsed


EXTRA_KEYS = ("verdict", "shadowVerdict", "origin", "test", "dispatchError")
TYPED_AFTER = 1 << 20
"""Capture bytes read before lines are split typed: importing msgspec costs about
what the split saves on that much."""


def find_capture(log_path: LogPath, listing: Container[str] | None = None) -> LogPath | None:
    """``requests.jsonl`` beside the log, else ``<log name>.requests.jsonl`` (plain or zstd).

    ``listing``: the names in the log's folder (:func:`folder_names`), when the caller looks for the
    captures of many logs of one folder: only names in it are asked about, so a log with no capture
    costs no ``stat`` call (six candidate names cost twelve)."""
    folder = log_path.parent
    names = capture_candidates(log_path.name)
    if isinstance(folder, UrlPath):  # one listing, not a round trip per candidate name
        children = folder.children()
        for name in names:
            entry = children.get(name)
            if entry is not None and entry.get("type") == "file" and not entry.get("islink"):
                return folder / name
        return None
    for name in names:
        if listing is not None and name not in listing:
            continue
        candidate = folder / name
        if candidate.is_file() and not candidate.is_symlink():
            return candidate
    return None


def folder_names(folder: LogPath) -> set[str] | None:
    """The names in a local folder, for :func:`find_capture`; None for a URL or a folder that cannot
    be listed (then each candidate name is asked about)."""
    if isinstance(folder, UrlPath):
        return None
    try:
        return set(os.listdir(folder))
    except OSError:
        return None


def capture_of(src: LogSource, names: Callable[[LogPath], Container[str] | None]) -> LogPath | None:
    """:func:`find_capture` of a log: in what the walk that found it saw beside it (``src.beside``), else
    in ``names(folder)`` (a :class:`FolderNames`), so a folder the walk listed is never listed again."""
    return find_capture(src.path, src.beside if src.beside is not None else names(src.path.parent))


class FolderNames:
    """:func:`folder_names` of each folder asked about, listed once however many of its logs ask."""

    def __init__(self) -> None:
        self.listed: dict[LogPath, set[str] | None] = {}

    def __call__(self, folder: LogPath) -> set[str] | None:
        if folder not in self.listed:
            self.listed[folder] = folder_names(folder)
        return self.listed[folder]


def capture_problem(path: LogPath) -> str | None:
    """Why ``path`` cannot be read as a capture file (``requests.jsonl: capture file not found``), or None.

    Asked of explicit captures (``--captures``) before a check: without them a check would look clean,
    so every face reports this sentence instead (the CLI as a usage error, the TUI before it opens)."""
    try:
        if not path.exists():
            return f"{path}: capture file not found"
    except OSError as exc:  # a URL whose protocol or backend is unknown
        return str(exc)
    if not path.is_file():
        return f"{path}: not a capture file (a folder or a special file)"
    try:
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        return f"{path}: cannot read capture file ({exc.strerror or exc})"
    return None


def capture_problems(paths: list[LogPath] | None) -> list[str]:
    """:func:`capture_problem` of each explicit capture, in order; empty when all can be read."""
    return [p for p in (capture_problem(log_path(c)) for c in paths or []) if p is not None]


@dataclass(slots=True, frozen=True)
class Proof:
    """A prover's word that a record's request is byte for byte ``request`` (the line's bytes were
    compared with its encoding, never parsed); ``found`` is what the prover located it by, for
    the check that takes the proof (opaque here)."""

    request: dict
    found: Any = None


Prover = Callable[[Recorded, int, int], "Proof | None"]
"""``prove(record, start, end)``: a :class:`Proof` when the request of a record read around it
(its line in ``record.text``, the request at ``text[start:end]``, not read) is byte for byte the
one its session rebuilds, else None.  It does not change the record: the reader does."""


def iter_capture(
    path: LogPath, findings: list[Finding], max_line: int | None = None, prove: Prover | None = None
) -> Iterator[Recorded]:
    """The records of a capture file as its lines are read (so a check need not hold them all),
    each finding about a line appended to ``findings`` when the line is reached.

    With ``prove``, a line in the plain layout is first split around its request
    (:func:`~invariants.read.capture_splice.split_capture`) and its request read only if ``prove``
    does not vouch for it: a request the log explains is compared as bytes, never parsed.  A line
    another writer spaced is split without its whitespace (:func:`_split`), and a request whose
    strings it escaped otherwise is proved by its value's encoding (:func:`_reencoded`).
    """
    file = str(path)
    seen = TYPED_AFTER + 1 if local_size(path) > TYPED_AFTER else 0  # a file that will get there starts typed
    cleared: Cleared | None = None  # depth verdicts carried from line to line once lines are read typed
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
        seen += len(raw.data)
        if prove is not None:
            split, text = _split(raw.data)
            if split is not None and _log_length_problem(split[0]) is None:
                values, start, end = split
                rec = _recorded(file, raw.number, values, text=text)
                proof = prove(rec, start, end)
                if proof is None and text.find(b"\\", start, end) >= 0 and (again := _reencoded(text[start:end])):
                    # Its strings may be escaped another way than the rebuilt request's (Python's json.dumps
                    # writes \u00e9 for an e with an acute): proved by the encoding of its value, in C.
                    rec.text = text[:start] + again + text[end:]
                    proof = prove(rec, start, start + len(again))
                if proof is not None:
                    rec.parsed, rec.text, rec.proof = proof.request, None, proof
                    yield rec
                    continue
        if seen > TYPED_AFTER:
            from invariants.read.capture_typed import Cleared, decode_capture

            cleared = cleared or Cleared()
            typed = decode_capture(raw.data, cleared)
            if typed is not None and _log_length_problem(typed[0]) is None:
                values, fields = typed
                yield _recorded(file, raw.number, values, raw_fields=fields, text=raw.data)
                continue
        obj, err = parse_json(raw.data)
        problem = f"not JSON ({err})" if err else _line_problem(obj)
        if problem:
            findings.append(make_finding("LOG013", f"capture line {raw.number}: {problem}", file=file, line=raw.number))
            continue
        yield _recorded(file, raw.number, obj, parsed=obj["request"])


@dataclass(slots=True)
class CaptureKeys:
    """What the lines of a capture may be routed by, read before its folder is cut into units."""

    ids: set[str] = field(default_factory=set)  # every string sessionId a line names
    files: set[str] = field(default_factory=set)  # every string sessionFile hint


def capture_keys(path: LogPath) -> CaptureKeys | None:
    """The session ids and file hints of a capture's lines: a superset of what :func:`iter_capture`
    routes by, since a line it refuses (not an object with a request) counts here too.  Lines are
    split as :func:`iter_capture` splits them, so the request, most of a line, is not parsed.  None
    when the file cannot be read, or a line is over the default line limit (a run with a larger
    ``--max-line`` reads it: what it names is not known here)."""
    keys = CaptureKeys()
    try:
        for raw in _lines(path, [], DEFAULT_MAX_LINE):  # to a damaged zstd frame, as the reader reads
            if raw.oversized:
                return None
            if not raw.data or raw.data.isspace():
                continue
            split, _ = _split(raw.data)
            values = split[0] if split is not None else _any_values(raw.data)
            if not isinstance(values, dict):
                continue
            sid, hint = values.get("sessionId"), values.get("sessionFile")
            if isinstance(sid, str):  # (a line naming none goes to the log the capture is named after)
                keys.ids.add(sid)
            if isinstance(hint, str):
                keys.files.add(hint)
    except OSError:
        return None
    return keys


def _split(data: bytes) -> tuple[tuple[dict[str, Any], int, int] | None, bytes]:
    """:func:`~invariants.read.capture_splice.split_capture` of a line, and the bytes it split: the
    line, or, when its writer put whitespace between tokens (Python's ``json.dumps``, say; its first
    pair says so) or after the object (a CRLF line end), the same JSON without it, so a request
    written so is proved by its bytes too.  Only a proof uses those bytes: a line it does not prove
    is read as written."""
    split = split_capture(data)
    if split is not None or data[:1] != b"{":
        return split, data
    if _COMPACT_HEAD.match(data):  # compact, but for whitespace after the object (a line ended by CRLF)
        text = data.rstrip(b" \t\r")
        return (split_capture(text), text) if len(text) < len(data) else (None, data)
    import msgspec

    try:
        compact = msgspec.json.format(data, indent=-1)  # every token as written, in order: no value is read
    except (msgspec.DecodeError, RecursionError):
        return None, data
    return split_capture(compact), compact


def _reencoded(request: bytes) -> bytes | None:
    """A recorded request's value as orjson encodes it, as the rebuilt request is, or None when
    orjson does not read it (the typed or general reader then reports what it is)."""
    try:
        return orjson.dumps(orjson.loads(request))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None


_COMPACT_HEAD = re.compile(rb'\{"[^"\\]*":[^ \t\r\n]')
"""A line whose first pair is written without whitespace, as the harness writes every line."""


def _any_values(data: bytes) -> Any:
    """A line's top-level values as the general reader parses them, else as the typed one does."""
    obj, err = parse_json(data)
    if err is None:
        return obj
    from invariants.read.capture_typed import decode_capture

    typed = decode_capture(data)
    return typed[0] if typed is not None else None


def _recorded(file: str, line: int, obj: dict, **request: Any) -> Recorded:
    """A record from a line's top-level values (``request`` aside, given as ``parsed`` or raw)."""
    return Recorded(
        file=file,
        line=line,
        session_id=obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None,
        session_file=obj.get("sessionFile") if isinstance(obj.get("sessionFile"), str) else None,
        log_length=obj.get("logLength") if is_safe_int(obj.get("logLength")) and obj["logLength"] >= 0 else None,
        turn=obj.get("turn"),
        step=obj.get("step"),
        loop_built=obj.get("loopBuilt", True) is not False,
        time=obj.get("time"),
        extra={k: v for k, v in obj.items() if k in EXTRA_KEYS},
        **request,
    )


def _line_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__ if obj is not None else 'null'}, not an object"
    if not isinstance(obj.get("request"), dict):
        return "no `request` object"
    if not isinstance(obj["request"].get("messages"), list):
        return "request has no `messages` array"
    return _log_length_problem(obj)


def _log_length_problem(obj: dict) -> str | None:
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
