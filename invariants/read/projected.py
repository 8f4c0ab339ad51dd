"""The projected snapshot form: committed session fixtures with the envelope left out.

Upstream (PR #2702) writes committed session snapshots as a *projection* of the
runtime log: the header line is unchanged, and every body line drops its
top-level ``seq`` and ``time`` (``seq0`` and ``time0`` on a packed chunk row).
The harness's replay parser (``parseSessionLog`` in
``packages/test-support/llm-replay``) rebuilds them while decoding: a line
without its seq gets the running count of events decoded so far (a packed row
advances it by the number of events it expands to), a line without its time
gets 0.  :class:`Projection` does the same to each line's bytes, so the rest
of the reader judges a rebuilt line as it judges a runtime one.

A file's form is decided by its first body line that is an object with a
string ``type``; a later line of the other form is one finding for the file
(see :class:`Mixed`), and is read as upstream's parser reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from invariants.model.jsonvalue import too_deep
from invariants.read.line_records import RawLine

RUNTIME = "runtime"
"""The runtime log form: every body line carries its envelope (the form the JSON report leaves unnamed)."""
PROJECTED = "projected-snapshot"
"""Upstream's committed-snapshot form: body lines without ``seq``/``time`` (``seq0``/``time0`` on rows)."""

ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})


def _keys(obj: dict) -> tuple[str, str]:
    """The envelope's seq and time keys for this record: a packed row's are ``seq0``/``time0``."""
    return ("seq0", "time0") if obj.get("type") in ROW_TYPES else ("seq", "time")


def line_form(obj: Any) -> str | None:
    """The form a parsed body line is in: PROJECTED when it carries neither its seq nor its time key,
    RUNTIME when it carries either, None when it is not an object with a string ``type`` (it says nothing)."""
    if type(obj) is not dict or type(obj.get("type")) is not str:
        return None
    seq_key, time_key = _keys(obj)
    return RUNTIME if seq_key in obj or time_key in obj else PROJECTED


@dataclass(slots=True)
class Mixed:
    """Body lines of the form other than the file's (``form``): the first and last such line, how many,
    and the one finding that says so (its message grows with the count)."""

    form: str
    first: int
    finding: Any = None
    last: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        self.last = self.first

    def add(self, line: int) -> None:
        self.last, self.count = line, self.count + 1

    def message(self) -> str:
        if self.form == PROJECTED:
            what = (
                f"line {self.first} has no seq or time though the log's other body lines carry them "
                "(a projected snapshot line in a runtime log): its envelope is rebuilt as upstream's "
                "parseSessionLog rebuilds it (the running event count, time 0)"
            )
        else:
            what = (
                f"line {self.first} carries its seq/time though the log is a projected snapshot (its body lines "
                "omit them): kept, as upstream's parseSessionLog keeps them"
            )
        if self.count > 1:
            what += f"; {self.count} such lines, lines {self.first}..{self.last}"
        return f"the log mixes the runtime and the projected snapshot forms: {what}"


class Projection:
    """Rebuilds the envelope of a projected file's body lines, as ``parseSessionLog`` does.

    ``next_seq`` is the running count of events decoded so far.  A line that does not
    parse, or does not decode to events, holds one place (the reader reports it).
    """

    __slots__ = ("next_seq", "last_form")

    def __init__(self, next_seq: int = 0) -> None:
        self.next_seq = next_seq
        self.last_form: str | None = None  # the form of the line rebuilt last (None: not an event object)

    def rebuild(self, raw: RawLine) -> RawLine:
        """``raw`` with its missing seq and time put back (a new RawLine), or ``raw`` unchanged."""
        self.last_form = None
        if raw.oversized:
            self.next_seq += 1
            return raw
        try:
            if too_deep(raw.data):  # before orjson: deep enough nesting crashes some releases of it
                raise ValueError
            obj = orjson.loads(raw.data)
        except ValueError:
            self.next_seq += 1
            return raw
        form = self.last_form = line_form(obj)
        if form is None:
            self.next_seq += 1
            return raw
        seq = self.next_seq
        self.next_seq += _decoded(obj)
        seq_key, time_key = _keys(obj)
        add = b""
        if seq_key not in obj:
            add += b'"%s":%d,' % (seq_key.encode(), seq)
        if time_key not in obj:
            add += b'"%s":0,' % time_key.encode()
        if not add:
            return raw
        data = b"{" + add + raw.data.lstrip()[1:]  # an object with a type: not empty, so a comma follows
        return RawLine(raw.number, raw.offset, data, raw.complete)


def rebuild_value(obj: dict, seq: int) -> dict:
    """A parsed projected line with its envelope put back (for a runtime file's stray projected line)."""
    seq_key, time_key = _keys(obj)
    out = {"type": obj["type"]}
    if seq_key not in obj:
        out[seq_key] = seq
    if time_key not in obj:
        out[time_key] = 0
    out.update(obj)
    return out


def _decoded(obj: dict) -> int:
    """How many events a body line decodes to: a packed row's members, else one."""
    if obj.get("type") not in ROW_TYPES:
        return 1
    from invariants.read.chunk_rows import ChunkRowError, expand_row
    from invariants.read.rows_fast import expand_row_fast

    probe = dict(obj)
    probe.setdefault("seq0", 0)
    probe.setdefault("time0", 0)
    expanded = expand_row_fast(probe)
    if expanded is None:
        try:
            expanded = expand_row(probe)
        except ChunkRowError:
            return 1  # a malformed row holds one place, as any line the reader cannot take
    return max(len(expanded), 1)
