"""Plain data read from a log: the session header record and the event envelope."""

from __future__ import annotations

from typing import Any

from invariants.model.record import Record

ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})


class Event(Record):
    """One session event. ``line`` is the 1-based physical line it came from
    (several events share the line of a packed chunk row)."""

    __slots__ = (
        "type",
        "seq",
        "time",
        "data",
        "surface_op",
        "source_seqs",
        "ignorable",
        "line",
        "has_surface_op",
        "has_source_seqs",
        "offset",
    )

    def __init__(
        self,
        type: str,
        seq: int,
        time: Any,
        data: Any,
        surface_op: Any = None,
        source_seqs: Any = None,
        ignorable: bool = False,
        line: int = 0,
        has_surface_op: bool = False,
        has_source_seqs: bool = False,
        offset: int = -1,
    ) -> None:
        self.type = type
        self.seq = seq
        self.time = time
        self.data = data
        self.surface_op = surface_op
        self.source_seqs = source_seqs
        self.ignorable = ignorable
        self.line = line
        self.has_surface_op = has_surface_op
        self.has_source_seqs = has_source_seqs
        self.offset = offset  # byte offset of the line in the decompressed text, for viewers


class SessionHeader(Record):
    """The first line of a log (``type: "session"``)."""

    __slots__ = ("id", "version", "created_at", "cwd", "parent_session", "seed_length", "raw", "line", "form")

    def __init__(
        self,
        id: str,
        version: Any,
        created_at: Any = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        seed_length: int = 0,
        raw: dict | None = None,
        line: int = 1,
        form: str = "runtime",
    ) -> None:
        self.id = id
        self.version = version
        self.created_at = created_at
        self.cwd = cwd
        self.parent_session = parent_session
        self.seed_length = seed_length
        self.raw = {} if raw is None else raw
        self.line = line
        # The form of the body (invariants.read.projected): "runtime", or "projected-snapshot" once the
        # reader found a body line without its envelope (and rebuilt the envelopes)
        self.form = form
