"""The items line readers yield: physical lines, chunk-line runs, and the row
and frame problems reported in their place in the stream."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_MAX_LINE = 64 * 1024 * 1024


@dataclass(slots=True)
class RawLine:
    number: int
    offset: int
    data: bytes  # without the newline; empty when oversized
    complete: bool  # ended with a newline
    oversized: int = 0  # byte length when the line exceeded max_line


@dataclass(slots=True)
class LineRun:
    """Consecutive complete lines that look like plain assistant/chunk events.

    The common case of a log is long runs of streamed chunks; grouping them lets
    the loader parse and validate a run with a few C-level operations.  A run
    is only a hint: the loader falls back to line-by-line reading whenever the
    run does not validate as a whole.
    """

    number: int  # line number of the first line
    offset: int  # byte offset of the first line
    lines: list[bytes]  # each without its newline
    nbytes: int = 0  # bytes the run spans, newlines included
    # The same lines as they lie in the block that was read (newline-separated, no final
    # newline), when that block is ASCII: decoded in place, with no join or copy.
    text: memoryview | None = None

    def raw_lines(self) -> list[RawLine]:
        out, offset = [], self.offset
        for i, data in enumerate(self.lines):
            out.append(RawLine(self.number + i, offset, data, True))
            offset += len(data) + 1
        return out


CHUNK_START = re.compile(
    rb'\{\s*(?:"type"\s*:\s*"assistant/chunk"\s*,\s*"(?:seq|time)"\s*:'
    rb'|(?:"(?:seq|time)"\s*:\s*-?[0-9]+\s*,\s*){1,2}"type"\s*:\s*"assistant/chunk"\s*[,}])'
).match
"""Whether a line starts as a chunk event's envelope, whatever JSON writer wrote it (compact or
spaced, type first or after seq and time): the lines read a run at a time.  It asks for a seq or
a time key before the data, so a run is never a projected log's lines."""

CHUNK_PREFIX = b'{"type":"assistant/chunk","seq":'
"""How the harness starts a chunk line (``JSON.stringify``: compact, keys in the order written):
a line that starts so is one without asking :data:`CHUNK_START`."""


@dataclass(slots=True)
class RowProblem:
    """A stored row that cannot be turned into a line (SQLite backend): reported at its place."""

    number: int
    seq: int | None
    code: str
    message: str
    final: bool = False  # the store cannot be read past this point (corrupt, not a torn tail)


@dataclass(slots=True)
class FrameProblem:
    kind: str  # "corrupt" | "torn" | "no-header-frame"
    message: str
    frame_index: int
    offset: int
