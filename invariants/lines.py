"""Physical lines of a log file, plain or zstd, read-only and bounded.

Yields each line with its number, byte offset (in the decompressed text) and
whether it ended in a newline.  A line longer than ``max_line`` is never held
in memory: it is skipped to its end and reported as oversized.  zstd frame
problems surface as :class:`FrameProblem` items in the stream, after the
lines that could still be recovered, so the caller reports them in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

DEFAULT_MAX_LINE = 64 * 1024 * 1024
_BLOCK = 1 << 20


@dataclass(slots=True)
class RawLine:
    number: int
    offset: int
    data: bytes  # without the newline; empty when oversized
    complete: bool  # ended with a newline
    oversized: int = 0  # byte length when the line exceeded max_line


@dataclass(slots=True)
class RowProblem:
    """A stored row that cannot be turned into a line (SQLite backend): reported at its place."""

    number: int
    seq: int | None
    code: str
    message: str


@dataclass(slots=True)
class FrameProblem:
    kind: str  # "corrupt" | "torn" | "no-header-frame"
    message: str
    frame_index: int
    offset: int


def open_readonly(path: Path) -> BinaryIO:
    """Open for reading only; the tool never writes to a log."""
    return open(path, "rb", buffering=0)


def _chunks(path: Path) -> Iterator[bytes | FrameProblem]:
    with open_readonly(path) as fh:
        if path.name.endswith((".zstd", ".zst")):
            from .zstdio import FrameError, iter_frames

            try:
                for block in iter_frames(fh):
                    yield block
            except FrameError as exc:
                yield FrameProblem(exc.kind, str(exc), exc.frame_index, exc.offset)
        else:
            while True:
                block = fh.read(_BLOCK)
                if not block:
                    break
                yield block


def iter_source_lines(source, max_line: int = DEFAULT_MAX_LINE, start: tuple[int, int] = (0, 0), runs: bool = False) -> Iterator:
    """Lines of a :class:`~invariants.discover.LogSource`: a file, or one session of a
    SQLite database (then :class:`RowProblem` items mark rows that do not decode)."""
    if getattr(source, "member", None) is not None:
        from .sqlite_backend import iter_member_lines

        if start != (0, 0):
            raise ValueError("database sessions cannot be resumed mid-way")
        return iter_member_lines(source, max_line)
    return iter_lines(source.path, max_line, start, runs=True) if runs else iter_lines(source.path, max_line, start)


def iter_lines(path: Path, max_line: int = DEFAULT_MAX_LINE, start: tuple[int, int] = (0, 0)) -> Iterator[RawLine | FrameProblem]:
    """Lines of ``path``; ``start`` = (byte offset, lines before it) resumes a plain file."""
    if not path.name.endswith((".zstd", ".zst")):
        yield from _plain_lines(path, max_line, start)
        return
    if start != (0, 0):
        raise ValueError("zstd logs cannot be resumed mid-file")
    yield from _block_lines(path, max_line)


def _plain_lines(path: Path, max_line: int, start: tuple[int, int] = (0, 0)) -> Iterator[RawLine]:
    """Plain JSONL via buffered readline (C speed), never holding more than max_line bytes."""
    offset, number = start
    with open(path, "rb", buffering=_BLOCK) as fh:
        if offset:
            fh.seek(offset)
        readline = fh.readline
        while True:
            line = readline(max_line + 1)
            if not line:
                return
            number += 1
            n = len(line)
            if line[-1:] == b"\n":
                yield RawLine(number, offset, line[:-1], True)
                offset += n
                continue
            if n <= max_line:  # final fragment without newline
                yield RawLine(number, offset, line, False)
                return
            total = n
            complete = False
            while True:  # skip the rest of an oversized line
                more = readline(_BLOCK)
                if not more:
                    break
                total += len(more)
                if more[-1:] == b"\n":
                    complete = True
                    total -= 1
                    break
            yield RawLine(number, offset, b"", complete, oversized=total)
            offset += total + (1 if complete else 0)
            if not complete:
                return


def _block_lines(path: Path, max_line: int) -> Iterator[RawLine | FrameProblem]:
    number = 0
    offset = 0
    pending: list[bytes] = []
    pending_len = 0
    skipping = 0  # >0 while discarding an oversized line; its length so far
    line_start = 0
    for block in _chunks(path):
        if isinstance(block, FrameProblem):
            if pending or skipping:
                number += 1
                yield _tail(number, line_start, pending, skipping)
                pending, pending_len, skipping = [], 0, 0
            yield block
            return
        pos = 0
        n = len(block)
        while pos < n:
            nl = block.find(b"\n", pos)
            end = n if nl < 0 else nl
            piece_len = end - pos
            if skipping:
                skipping += piece_len
            elif pending_len + piece_len > max_line:
                skipping = pending_len + piece_len
                pending, pending_len = [], 0
            else:
                pending.append(block[pos:end])
                pending_len += piece_len
            if nl < 0:
                break
            number += 1
            if skipping:
                yield RawLine(number, line_start, b"", True, oversized=skipping)
            else:
                yield RawLine(number, line_start, b"".join(pending) if len(pending) != 1 else pending[0], True)
            offset = line_start + (skipping or pending_len) + 1
            line_start = offset
            pending, pending_len, skipping = [], 0, 0
            pos = nl + 1
    if pending or skipping:
        number += 1
        yield _tail(number, line_start, pending, skipping)


def _tail(number: int, start: int, pending: list[bytes], skipping: int) -> RawLine:
    if skipping:
        return RawLine(number, start, b"", False, oversized=skipping)
    return RawLine(number, start, b"".join(pending), False)
