"""Which log event produced each part of a rebuilt request.

A difference between a recorded request and its reconstruction is only half
an answer until it names the event that made the part that differs: the
``request/header`` or ``request/header-delta`` that last set a header field
or the session prefix, or the surface event a derived message came from.
The fold records a setter per part (:attr:`HeaderVersion.set_by`); this
module turns a part of a :class:`RebuiltRequest` into that event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invariants.replay.model import RebuiltRequest

# Request fields and the header part each comes from.
FIELD_PARTS = {
    "model": "config.model",
    "system": "system",
    "tools": "tools",
    "temperature": "config.temperature",
    "maxTokens": "config.maxTokens",
    "stop": "config.stop",
    "provider": "config.provider",
    "reasoningEffort": "config.reasoningEffort",
}
REGION_PARTS = {"prefix": "messagePrefix", "suffix": "messageSuffix"}


@dataclass(slots=True, frozen=True)
class Source:
    """The event a part of a rebuilt request came from.

    ``set`` is False when no header event set the part (it is absent from
    every header so far): the source is then the header version in force.
    """

    seq: int
    line: int | None = None
    event: str | None = None  # the event's type, when known
    set: bool = True

    def text(self) -> str:
        """``set by request/header-delta seq 4, line 6`` (or ``from event seq 7`` for a message of the log)."""
        if self.event is None:
            return f"from event seq {self.seq}"
        where = f"{self.event} seq {self.seq}" + (f", line {self.line}" if self.line is not None else "")
        return f"set by {where}" if self.set else f"not set by any header event; header in force from {where}"

    def detail(self) -> dict[str, Any]:
        """The finding detail that names it: ``source_seq`` (always), ``source_line`` and ``source_event``."""
        out: dict[str, Any] = {"source_seq": self.seq}
        if self.event is not None:
            out["source_line"] = self.line
            out["source_event"] = self.event
        return out


def header_source(expected: RebuiltRequest, part: str) -> Source | None:
    """The event that last set header ``part`` (``system``, ``messagePrefix``, ``config.temperature``...)."""
    v = expected.setter(part)
    if v is not None:
        return Source(v.seq, v.line, v.event)
    hv = expected.header_version
    return Source(hv.seq, hv.line, hv.event, set=False) if hv is not None else None


def field_source(expected: RebuiltRequest, name: str) -> Source | None:
    """The event behind request field ``name`` (``model``, ``tools``, ``temperature``...)."""
    part = FIELD_PARTS.get(name)
    return header_source(expected, part) if part is not None else None


def message_source(expected: RebuiltRequest, index: int) -> Source | None:
    """The event behind message ``index`` of the rebuilt request: the header event that set the prefix or
    suffix holding it, or the log event a derived message came from; None past the rebuilt messages."""
    region = expected.region(index)
    if region == "derived":
        k = index - expected.prefix_len
        return Source(expected.origins[k]) if k < len(expected.origins) else None
    part = REGION_PARTS.get(region)
    return header_source(expected, part) if part is not None else None
