"""Plain data read from a log: the session header record and the event envelope."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})


@dataclass(slots=True)
class Event:
    """One session event. ``line`` is the 1-based physical line it came from
    (several events share the line of a packed chunk row)."""

    type: str
    seq: int
    time: Any
    data: Any
    surface_op: Any = None
    source_seqs: Any = None
    ignorable: bool = False
    line: int = 0
    has_surface_op: bool = False
    has_source_seqs: bool = False
    offset: int = -1  # byte offset of the line in the decompressed text, for viewers


@dataclass(slots=True)
class SessionHeader:
    """The first line of a log (``type: "session"``)."""

    id: str
    version: Any
    created_at: Any = None
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int = 0
    raw: dict = field(default_factory=dict)
    line: int = 1
    # The form of the body (invariants.read.projected): "runtime", or "projected-snapshot" once the
    # reader found a body line without its envelope (and rebuilt the envelopes)
    form: str = "runtime"
