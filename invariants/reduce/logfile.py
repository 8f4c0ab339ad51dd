"""A log as plain data for the reducer: the header record, the events (chunk rows expanded) and the capture lines,
and how to write a subset of them back as a well-formed log (renumbered seqs, provenance, surface ranges, turn and
step numbers, the captures' ``logLength``)."""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from invariants.analysis.forks import find_parent_log
from invariants.model.jsonvalue import MAX_DEPTH, too_deep
from invariants.read.chunk_rows import ChunkRowError, decode_record
from invariants.read.source import LogSource, local_file, strip_log_suffix
from invariants.read.zstdio import FrameError, is_zstd_path, iter_frames, write_frames


class ReduceInputError(ValueError):
    """An input the reducer cannot take apart (the message names the file and line)."""


@dataclass
class LogData:
    name: str  # the file name, kept for the output
    header: dict
    events: list[dict]
    captures: list[dict] = field(default_factory=list)  # capture lines routed to this session
    parent: LogData | None = None  # a fork child's parent, read beside it as check finds it

    @property
    def zstd(self) -> bool:
        return is_zstd_path(self.name)

    @property
    def seed_length(self) -> int:
        n = self.header.get("seedLength")
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def _text_lines(path: Path, drop_torn: bool = False) -> list[bytes]:
    """The non-blank lines; with ``drop_torn``, a last line without its newline that is not JSON is left
    out, as the harness drops a torn tail on load (check reports it; the repro is the log without it)."""
    if is_zstd_path(path):
        with open(path, "rb") as fh:
            data = b"".join(iter_frames(fh))
    else:
        data = path.read_bytes()
    lines = data.split(b"\n")
    if drop_torn and lines and lines[-1].strip() and not too_deep(lines[-1]):
        try:
            json.loads(lines[-1])
        except ValueError:
            lines.pop()
    return [ln for ln in lines if ln.strip()]


def _read_records(path: Path) -> tuple[dict, list[dict]]:
    try:
        lines = _text_lines(path, drop_torn=True)
    except (OSError, FrameError) as e:
        raise ReduceInputError(f"{path}: cannot read: {e}") from None
    if not lines:
        raise ReduceInputError(f"{path}: empty log")
    records: list[Any] = []
    for number, raw in enumerate(lines, 1):
        if too_deep(raw):
            raise ReduceInputError(f"{path}:{number}: nesting deeper than {MAX_DEPTH} levels")
        try:
            value = json.loads(raw)
            records.extend(decode_record(value) if number > 1 else [value])
        except (ValueError, ChunkRowError) as e:
            raise ReduceInputError(f"{path}:{number}: not a log line: {e}") from None
    header, events = records[0], records[1:]
    if not isinstance(header, dict) or header.get("type") != "session":
        raise ReduceInputError(f"{path}:1: the first line is not a session header")
    if not all(isinstance(e, dict) and isinstance(e.get("seq"), int) for e in events):
        raise ReduceInputError(f"{path}: an event without an integer seq")
    return header, events


def read_log(path: Path, captures: Path | None) -> LogData:
    """Read ``path`` (and its capture file: ``captures``, or the one beside it as check finds it; and a fork
    child's parent log, found as check finds it)."""
    header, events = _read_records(path)
    found = captures or capture_beside(path)
    lines_out: list[dict] = []
    if found is not None:
        try:
            cap_lines = _text_lines(found)
        except (OSError, FrameError) as e:
            raise ReduceInputError(f"{found}: cannot read: {e}") from None
        for number, raw in enumerate(cap_lines, 1):
            if too_deep(raw):
                raise ReduceInputError(f"{found}:{number}: nesting deeper than {MAX_DEPTH} levels")
            try:
                line = json.loads(raw)
            except ValueError as e:
                raise ReduceInputError(f"{found}:{number}: not JSON: {e}") from None
            if isinstance(line, dict) and line.get("sessionId") in (None, header.get("id")):
                lines_out.append(line)
    log = LogData(path.name, header, events, lines_out)
    parent_id = header.get("parentSession")
    if isinstance(parent_id, str) and log.seed_length:
        source = find_parent_log(LogSource(path, path.parent), parent_id, header.get("createdAt"))
        if source is not None:
            parent_header, parent_events = _read_records(local_file(source.path))
            log.parent = LogData(source.path.name, parent_header, parent_events)
    return log


def capture_beside(path: Path) -> Path | None:
    """The capture file ``check`` would read for ``path``."""
    stem = strip_log_suffix(path.name)
    for name in ("requests.jsonl", "requests.jsonl.zstd", "requests.jsonl.zst", f"{stem}.requests.jsonl"):
        if (path.parent / name).is_file():
            return path.parent / name
    return None


def renumber(log: LogData, keep: list[int]) -> list[dict] | None:
    """The events at indices ``keep`` (sorted) renumbered into a contiguous log, or None when a kept replace's
    range has no node left on the surface.  The surface is followed as the kept events build it: a range whose
    start is gone starts at the surface's first node, so a compaction whose predecessor was dropped replaces from
    the new beginning (see :func:`_range`)."""
    new_seq = {log.events[i]["seq"]: n for n, i in enumerate(keep)}
    surface: list[int] = []  # the original seqs of the surface's nodes, in surface order
    turns: dict[Any, int] = {}
    steps: dict[tuple, int] = {}
    for i in keep:
        ev = log.events[i]
        raw = ev.get("data")
        data: dict = raw if isinstance(raw, dict) else {}
        key = (data.get("turn"), data.get("step"))
        if not _hashable(key):
            continue  # a malformed number stays as it is (the contract rules report it)
        if ev.get("type") == "turn/start":
            turns[key[0]] = len(turns) + 1
        elif ev.get("type") == "step/start":
            steps[key] = 1 + sum(1 for k in steps if k[0] == key[0])
    out = []
    for i in keep:
        ev = dict(log.events[i])
        ev["seq"] = new_seq[ev["seq"]]
        if isinstance(ev.get("sourceEventSeqs"), list):
            seqs = _kept_seqs(ev["sourceEventSeqs"], new_seq)
            if seqs or ev.get("type") != "assistant/message":
                ev["sourceEventSeqs"] = seqs
            else:
                del ev["sourceEventSeqs"]  # the harness leaves it out when no chunks were streamed
        op = ev.get("surfaceOp")
        if isinstance(op, dict):
            span = _range(op, new_seq, surface, log.events[i]["seq"])
            if span is None:
                return None
            ev["surfaceOp"] = {**op, "start": span["start"], "end": span["end"]}
            if span["old_start"] in surface and span["old_end"] in surface:
                first, last = surface.index(span["old_start"]), surface.index(span["old_end"])
                shadowed = [new_seq[n] for n in surface[first : max(first, last) + 1]]
                listed = ev.get("sourceEventSeqs")
                if isinstance(listed, list):  # a moved start shadows more nodes: provenance names them all
                    named = set(listed)
                    ev["sourceEventSeqs"] = listed + [n for n in shadowed if n not in named]
                surface[first : max(first, last) + 1] = [log.events[i]["seq"]]
        elif "surfaceOp" in ev:
            surface.append(log.events[i]["seq"])
        payload = ev.get("data")
        if isinstance(payload, dict) and _SEQ_FIELDS.keys() & payload.keys():
            payload = _renumber_seq_fields(payload, new_seq, surface, log.events[i]["seq"])
            if payload is None:
                return None
            ev["data"] = payload
        if isinstance(payload, dict) and "turn" in payload:
            turn = payload["turn"]
            payload = dict(payload)
            if "step" in payload and _hashable((turn, payload["step"])) and (turn, payload["step"]) in steps:
                payload["step"] = steps[(turn, payload["step"])]
            if _hashable(turn) and turn in turns:
                payload["turn"] = turns[turn]
            ev["data"] = payload
        out.append(ev)
    return out


# Fields of event data that name seqs: compaction shadow ranges and shadowed seqs, title message seqs.
_SEQ_FIELDS = {"shadowedRange": "range", "shadowedSeqs": "list", "messageSeqs": "list"}


def _renumber_seq_fields(data: dict, new_seq: dict[int, int], surface: list[int], own: int) -> dict | None:
    """``data`` with its seq-naming fields renumbered, or None when a range end is gone."""
    out = dict(data)
    for key, shape in _SEQ_FIELDS.items():
        value = data.get(key)
        if shape == "range" and isinstance(value, dict):
            span = _range(value, new_seq, surface, own)
            if span is None:
                return None
            out[key] = {**value, "start": span["start"], "end": span["end"]}
        elif shape == "list" and isinstance(value, list):
            out[key] = _kept_seqs(value, new_seq)
    return out


def _kept_seqs(seqs: list, new_seq: dict[int, int]) -> list:
    return [new_seq[s] for s in seqs if isinstance(s, int) and s in new_seq]


def _range(span: dict, new_seq: dict[int, int], surface: list[int], own: int) -> dict | None:
    """``span``'s start and end renumbered (with the original seqs they now stand for, ``old_start`` and
    ``old_end``), on ``surface`` (the original seqs of its nodes in surface order when the event ``own`` is
    written).  A start that is gone becomes the surface's first node, an end that is gone the last surface node
    before it in seq order; None when that leaves no range.  The checker and the capture patch judge
    whether the surface this gives is the one the finding needs."""
    start, end = span.get("start"), span.get("end")
    if not (isinstance(start, int) and isinstance(end, int)):
        return None
    if start not in new_seq:  # its node was dropped (with the compaction it summarised): from the first node on
        if not surface:
            return None
        start = surface[0]
    if end not in new_seq:
        earlier = [s for s in surface if s <= end]
        if not earlier:
            return None
        end = earlier[-1]
    if start in surface and end in surface and surface.index(start) > surface.index(end) or end >= own:
        return None
    return {"start": new_seq[start], "end": new_seq[end], "old_start": start, "old_end": end}


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def kept_seqs(log: LogData, keep: list[int]) -> list[int]:
    """The original seqs of the kept events, in order (increasing in a well-formed log)."""
    return [log.events[i]["seq"] for i in keep]


def new_log_length(seqs: list[int], length: int) -> int:
    """How many kept events (``seqs``: :func:`kept_seqs`) existed when ``length`` events of the original did."""
    return bisect.bisect_left(seqs, length)


def dumps(value: Any) -> str:
    """One compact JSON line in key order (orjson when it can encode the value, as fast as reading it)."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):  # e.g. an integer beyond 64 bits, or a lone surrogate
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape read from the log: written back as an escape
            return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        return text


def write_log(path: Path, header: dict, events: list[dict]) -> None:
    lines = [dumps(header) + "\n"] + [dumps(e) + "\n" for e in events]
    if is_zstd_path(path):
        write_frames(path, [lines[0].encode()] + ([("".join(lines[1:])).encode()] if len(lines) > 1 else []))
    else:
        path.write_text("".join(lines), encoding="utf-8")


def write_captures(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(dumps(c) + "\n" for c in lines), encoding="utf-8")
