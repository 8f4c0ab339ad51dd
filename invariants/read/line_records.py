"""The items line readers yield: physical lines, chunk-line runs, and the row
and frame problems reported in their place in the stream."""

from __future__ import annotations

from invariants.model.record import Record

DEFAULT_MAX_LINE = 64 * 1024 * 1024


class RawLine(Record):
    __slots__ = ("number", "offset", "data", "complete", "oversized")

    def __init__(self, number: int, offset: int, data: bytes, complete: bool, oversized: int = 0) -> None:
        self.number = number
        self.offset = offset
        self.data = data  # without the newline; empty when oversized
        self.complete = complete  # ended with a newline
        self.oversized = oversized  # byte length when the line exceeded max_line


class LineRun(Record):
    """Consecutive complete lines that look like plain assistant/chunk events.

    The common case of a log is long runs of streamed chunks; grouping them lets
    the loader parse and validate a run with a few C-level operations.  A run
    is only a hint: the loader falls back to line-by-line reading whenever the
    run does not validate as a whole.
    """

    __slots__ = ("number", "offset", "lines", "nbytes", "text")

    def __init__(
        self, number: int, offset: int, lines: list[bytes], nbytes: int = 0, text: memoryview | None = None
    ) -> None:
        self.number = number  # line number of the first line
        self.offset = offset  # byte offset of the first line
        self.lines = lines  # each without its newline
        self.nbytes = nbytes  # bytes the run spans, newlines included
        # The same lines as they lie in the block that was read (newline-separated, no final
        # newline), when that block is ASCII: decoded in place, with no join or copy.
        self.text = text

    def raw_lines(self) -> list[RawLine]:
        out, offset = [], self.offset
        for i, data in enumerate(self.lines):
            out.append(RawLine(self.number + i, offset, data, True))
            offset += len(data) + 1
        return out


CHUNK_PREFIX = b'{"type":"assistant/chunk","seq":'


class RowProblem(Record):
    """A stored row that cannot be turned into a line (SQLite backend): reported at its place."""

    __slots__ = ("number", "seq", "code", "message", "final")

    def __init__(self, number: int, seq: int | None, code: str, message: str, final: bool = False) -> None:
        self.number = number
        self.seq = seq
        self.code = code
        self.message = message
        self.final = final  # the store cannot be read past this point (corrupt, not a torn tail)


class FrameProblem(Record):
    __slots__ = ("kind", "message", "frame_index", "offset")

    def __init__(self, kind: str, message: str, frame_index: int, offset: int) -> None:
        self.kind = kind  # "corrupt" | "torn" | "no-header-frame"
        self.message = message
        self.frame_index = frame_index
        self.offset = offset
