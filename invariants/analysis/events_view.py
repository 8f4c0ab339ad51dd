"""Raw events read back on demand, for viewers.

A :class:`~invariants.replay.model.SessionModel` keeps no chunk payloads, so a
viewer that wants to show the events of one step reads them back from the
log.  This module does that without re-reading the whole file: a sparse
:class:`LineIndex` of byte offsets (plain files) lets :func:`read_events`
seek close to a physical line and parse only the lines of a seq window.
Compressed logs and database sessions have no random access; for them the
window is found by streaming their lines and stopping past it.

:func:`collapse_chunks` folds runs of ``assistant/chunk`` events into one
summary each, and :func:`search` finds events whose text contains a query.
Nothing here imports a UI toolkit; every function is pure over the file.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson

from invariants.model.jsonvalue import dumps
from invariants.read.chunk_rows import CHUNK_ROW_TYPES, ChunkRowError, expand_row
from invariants.read.envelope import parse_json
from invariants.read.line_records import FrameProblem, RawLine
from invariants.read.lines import iter_lines, open_readonly
from invariants.read.source import LogSource, UrlPath, log_path

_STRIDE = 64  # one checkpoint every this many physical lines


@dataclass(slots=True)
class RawEvent:
    """One event as logged (a packed chunk row's member comes back expanded)."""

    seq: int
    line: int
    type: str
    obj: dict


@dataclass(slots=True)
class ChunkRun:
    """Consecutive ``assistant/chunk`` events folded into one summary."""

    first_seq: int
    last_seq: int
    first_line: int
    last_line: int
    count: int = 0
    kinds: Counter = field(default_factory=Counter)  # chunk type -> how many
    text: str = ""  # text-delta pieces joined (bounded)
    reasoning: str = ""  # reasoning-delta pieces joined (bounded)
    tools: list[str] = field(default_factory=list)  # tool names seen in tool-call deltas
    events: list[RawEvent] = field(default_factory=list)  # the members, for an expanded view

    def contains(self, seq: int) -> bool:
        return self.first_seq <= seq <= self.last_seq


_PREVIEW = 2000


class LineIndex:
    """Byte offsets of every ``_STRIDE``-th physical line of a plain log.

    Built in one readline pass; :meth:`extend` continues from where the last
    pass stopped, so a log that is still being written is indexed
    incrementally.  Compressed logs and sessions inside a SQLite database are
    not indexed (``usable`` is False): they are read by streaming.
    """

    def __init__(self, path: str | os.PathLike | UrlPath | LogSource) -> None:
        member = path.member if isinstance(path, LogSource) else None
        self.path = (
            path.path
            if isinstance(path, LogSource)
            else log_path(os.fspath(path) if isinstance(path, os.PathLike) else path)
        )
        self.usable = member is None and not self.path.name.endswith((".zstd", ".zst"))
        self.checkpoints: list[int] = [0]  # offset of line 1 + k*_STRIDE
        self.lines = 0  # complete lines indexed
        self.end = 0  # byte offset just after the last indexed complete line
        if self.usable:
            self.extend()

    def extend(self) -> None:
        if not self.usable:
            return
        # Blocks, not lines: a 50 MB line costs no more memory than a short one.
        with open_readonly(self.path, -1) as fh:
            fh.seek(self.end)
            offset, lines, pos = self.end, self.lines, self.end
            while block := fh.read(1 << 20):
                nl = block.find(b"\n")
                while nl >= 0:
                    offset = pos + nl + 1
                    lines += 1
                    if lines % _STRIDE == 0:
                        self.checkpoints.append(offset)
                    nl = block.find(b"\n", nl + 1)
                pos += len(block)
            self.end, self.lines = offset, lines  # a last line without newline is still being written

    def offset_near(self, line: int) -> tuple[int, int]:
        """(byte offset, line number) of a checkpoint at or before 1-based ``line``."""
        k = max(0, min((line - 1) // _STRIDE, len(self.checkpoints) - 1))
        return self.checkpoints[k], k * _STRIDE + 1


def _expand(obj: Any, line: int) -> list[RawEvent]:
    if not isinstance(obj, dict):
        return []
    t = obj.get("type")
    if isinstance(t, str) and t in CHUNK_ROW_TYPES and "seq0" in obj:
        try:
            members = expand_row(obj)
        except ChunkRowError:
            return []
        return [RawEvent(m["seq"], line, m["type"], m) for m in members]
    seq = obj.get("seq")
    if isinstance(t, str) and type(seq) is int and t != "session":
        return [RawEvent(seq, line, t, obj)]
    return []


def _plain_from(index: LineIndex, start_line: int) -> Iterator[tuple[Any, int]]:
    offset, number = index.offset_near(start_line)
    # Bounded lines and the guarded parser: integrity problems (an oversized,
    # unparsable or absurdly deep line) are the checker's to report, not the viewer's.
    for raw in iter_lines(index.path, start=(offset, number - 1)):  # a plain file: lines only
        if isinstance(raw, RawLine) and raw.number >= start_line and not raw.oversized:
            obj, err = parse_json(raw.data)
            if err is None:
                yield obj, raw.number


def _as_source(source: LogSource | str | os.PathLike) -> LogSource:
    if isinstance(source, LogSource):
        return source
    p = log_path(os.fspath(source))
    return LogSource(p, p.parent)


def _streamed(source: LogSource, start_line: int) -> Iterator[tuple[Any, int]]:
    """Every parsable line of a compressed log or a database session, from ``start_line`` on."""
    from invariants.read.lines import iter_source_lines

    for raw in iter_source_lines(source):
        if isinstance(raw, FrameProblem):
            return  # a broken zstd frame: nothing after it is readable
        if not isinstance(raw, RawLine):
            continue  # a database row that does not decode
        if raw.number < start_line or raw.oversized:
            continue
        obj, err = parse_json(raw.data)  # guarded: an absurdly deep line is skipped, never parsed natively
        if err is None:
            yield obj, raw.number


def iter_events(source: LogSource | str | os.PathLike) -> Iterator[RawEvent]:
    """Every event of a log in order, streamed (a packed chunk row's members expanded); lines that do
    not parse are skipped: they are the checker's to report."""
    for obj, line in _streamed(_as_source(source), 1):
        yield from _expand(obj, line)


def read_events(
    source: LogSource | str | os.PathLike,
    first_seq: int,
    last_seq: int | None = None,
    *,
    start_line: int = 1,
    index: LineIndex | None = None,
    limit: int = 100_000,
) -> list[RawEvent]:
    """Events with ``first_seq <= seq <= last_seq`` (None: to the end), in log order.

    ``start_line`` is a physical line at or before the first wanted event
    (a step's ``line``); with a usable ``index`` reading starts near it.
    At most ``limit`` events are returned.
    """
    out: list[RawEvent] = []
    hi = last_seq if last_seq is not None else float("inf")
    if index is not None and index.usable:
        stream: Iterator[tuple[Any, int]] = _plain_from(index, max(1, start_line))
    else:
        src = _as_source(source)
        stream = _streamed(src, max(1, start_line))
    for obj, line in stream:
        for ev in _expand(obj, line):
            if ev.seq > hi:
                return out
            if ev.seq >= first_seq:
                out.append(ev)
                if len(out) >= limit:
                    return out
    return out


def collapse_chunks(events: list[RawEvent], min_run: int = 2) -> list[RawEvent | ChunkRun]:
    """Fold each run of at least ``min_run`` consecutive ``assistant/chunk`` events into a :class:`ChunkRun`."""
    out: list[RawEvent | ChunkRun] = []
    run: list[RawEvent] = []

    def flush() -> None:
        if len(run) >= min_run:
            out.append(_summarise(run))
        else:
            out.extend(run)
        run.clear()

    for ev in events:
        if ev.type == "assistant/chunk":
            run.append(ev)
        else:
            if run:
                flush()
            out.append(ev)
    if run:
        flush()
    return out


def _summarise(run: list[RawEvent]) -> ChunkRun:
    s = ChunkRun(run[0].seq, run[-1].seq, run[0].line, run[-1].line, len(run), events=list(run))
    text: list[str] = []
    reasoning: list[str] = []
    tlen = rlen = 0
    for ev in run:
        data = ev.obj.get("data")
        chunk = data.get("chunk") if isinstance(data, dict) else None
        if not isinstance(chunk, dict):
            s.kinds["?"] += 1
            continue
        kind = chunk.get("type") if isinstance(chunk.get("type"), str) else "?"
        s.kinds[kind] += 1
        piece = chunk.get("text")
        if kind == "text-delta" and isinstance(piece, str) and tlen < _PREVIEW:
            text.append(piece)
            tlen += len(piece)
        elif kind == "reasoning-delta" and isinstance(piece, str) and rlen < _PREVIEW:
            reasoning.append(piece)
            rlen += len(piece)
        elif kind == "tool-call-delta" and isinstance(chunk.get("name"), str) and chunk["name"] not in s.tools:
            s.tools.append(chunk["name"])
        elif (
            kind == "block-start"
            and chunk.get("blockType") == "tool-call"
            and isinstance(chunk.get("name"), str)
            and chunk["name"] not in s.tools
        ):
            s.tools.append(chunk["name"])
    s.text = "".join(text)[:_PREVIEW]
    s.reasoning = "".join(reasoning)[:_PREVIEW]
    return s


@dataclass(slots=True)
class Match:
    seq: int
    line: int
    type: str
    snippet: str  # JSON text around the first occurrence (raw: escape before display)


def search(source: LogSource | str | os.PathLike, query: str, limit: int = 1000) -> list[Match]:
    """Events whose JSON text contains ``query`` (case-insensitive), in log order.

    A line is only parsed when its raw bytes contain the query as JSON would
    escape it, so a search over a large log costs one read of the file.
    Text split across several chunks is not found (each event is matched alone).
    """
    if not query:
        return []
    src = _as_source(source)
    needle = query.casefold()
    raw_needle = orjson.dumps(query)[1:-1].lower()
    out: list[Match] = []
    from invariants.read.lines import iter_source_lines

    for raw in iter_source_lines(src):
        if isinstance(raw, FrameProblem):
            break  # a broken zstd frame: nothing after it is readable
        if not isinstance(raw, RawLine):
            continue  # a row that does not decode
        if raw.number == 1 or raw.oversized:
            continue
        data = raw.data
        if raw_needle not in data.lower() and needle not in data.decode("utf-8", "replace").casefold():
            continue
        obj, err = parse_json(data)
        if err is not None:
            continue
        for ev in _expand(obj, raw.number):
            text = dumps(ev.obj)
            at = text.casefold().find(needle)
            if at < 0:
                continue
            lo = max(0, at - 40)
            out.append(Match(ev.seq, ev.line, ev.type, ("…" if lo else "") + text[lo : at + len(query) + 60]))
            if len(out) >= limit:
                return out
    return out


def seq_window_index(starts: list[int], seq: int) -> int:
    """Index of the window (given by sorted start seqs) that holds ``seq``; 0 before the first."""
    return max(0, bisect.bisect_right(starts, seq) - 1)
