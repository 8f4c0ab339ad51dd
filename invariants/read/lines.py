"""Physical lines of a log file, plain or zstd, read-only and bounded.

Yields each line with its number, byte offset (in the decompressed text) and
whether it ended in a newline.  A line longer than ``max_line`` is never held
in memory: it is skipped to its end and reported as oversized.  zstd frame
problems surface as :class:`FrameProblem` items in the stream, after the
lines that could still be recovered, so the caller reports them in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from invariants.model.userfile import open_regular
from invariants.read.line_records import CHUNK_PREFIX, CHUNK_START, DEFAULT_MAX_LINE, FrameProblem, LineRun, RawLine
from invariants.read.source import LogPath, LogSource

_BLOCK = 1 << 20
_FRAMES = 1 << 16  # decompressed bytes of consecutive zstd frames split into lines at once


def open_readonly(path: LogPath, buffering: int = 0) -> BinaryIO:
    """Open for reading only; the tool never writes to a log.  A URL streams through fsspec; a local
    file is read only if it is still a regular file (:func:`~invariants.model.userfile.open_regular`:
    the walk saw one, but a pipe may have been put in its place since)."""
    if not isinstance(path, Path):
        return path.open("rb", buffering=buffering)
    return open_regular(path, buffering)


def _chunks(path: LogPath) -> Iterator[bytes | FrameProblem]:
    with open_readonly(path) as fh:
        if path.name.endswith((".zstd", ".zst")):
            from invariants.read.zstdio import FrameError, iter_frames

            skipped: list[tuple[int, int]] = []
            held: list[bytes] = []  # frames joined into blocks of about _FRAMES: one append batch is a few lines
            size = 0
            try:
                for frame in iter_frames(fh, skipped):
                    held.append(frame)
                    size += len(frame)
                    if size >= _FRAMES:
                        yield _joined(held)
                        size = 0
            except FrameError as exc:
                if held:
                    yield _joined(held)
                yield FrameProblem(exc.kind, str(exc), exc.frame_index, exc.offset)
                return
            if held:
                yield _joined(held)
            if skipped:  # read past, as the reference zstd does; said once, after every line
                yield FrameProblem(
                    "skippable",
                    f"{len(skipped)} skippable frame(s), {sum(n for _, n in skipped)} bytes: read past as the "
                    "reference zstd does, but the harness's reader refuses the file (invalid frame magic)",
                    -1,
                    skipped[0][0],
                )
        else:
            while True:
                block = fh.read(_BLOCK)
                if not block:
                    break
                yield block


def _joined(frames: list[bytes]) -> bytes:
    """The frames as one block, the list emptied first (it is not held while the block is read)."""
    block = b"".join(frames)
    frames.clear()
    return block


def iter_source_lines(
    source: LogSource, max_line: int = DEFAULT_MAX_LINE, start: tuple[int, int] = (0, 0), runs: bool = False
) -> Iterator:
    """Lines of a :class:`~invariants.read.source.LogSource`: a file, or one session of a
    SQLite database (then :class:`RowProblem` items mark rows that do not decode)."""
    if source.member is not None:
        from invariants.read.sqlite_backend import iter_member_lines

        if start != (0, 0):
            raise ValueError("database sessions cannot be resumed mid-way")
        return iter_member_lines(source, max_line)
    return iter_lines(source.path, max_line, start, runs=True) if runs else iter_lines(source.path, max_line, start)


def iter_lines(
    path: LogPath, max_line: int = DEFAULT_MAX_LINE, start: tuple[int, int] = (0, 0), runs: bool = False
) -> Iterator[RawLine | LineRun | FrameProblem]:
    """Lines of ``path``; ``start`` = (byte offset, lines before it) resumes a plain file.

    With ``runs``, consecutive chunk lines of a plain file come as one :class:`LineRun`.
    """
    if not path.name.endswith((".zstd", ".zst")):
        yield from (_plain_runs(path, max_line, start) if runs else _plain_lines(path, max_line, start))
        return
    if start != (0, 0):
        raise ValueError("zstd logs cannot be resumed mid-file")
    yield from (_block_runs(path, max_line) if runs else _block_lines(path, max_line))


def _block_runs(path: LogPath, max_line: int) -> Iterator[RawLine | LineRun | FrameProblem]:
    """Like :func:`_block_lines`, splitting each decompressed frame at C speed and grouping
    its consecutive chunk lines into :class:`LineRun` items.

    A frame normally holds whole lines (one append batch); a line that spans
    frames is carried over, and one longer than ``max_line`` is reported as
    oversized without being kept, as in :func:`_block_lines`.
    """
    number = offset = 0
    carry = b""
    skipping = 0  # > 0 while discarding an oversized line that spans frames; bytes so far
    prefix = CHUNK_PREFIX
    for block in _chunks(path):
        if isinstance(block, FrameProblem):
            if skipping:
                yield RawLine(number + 1, offset, b"", False, oversized=skipping)
            elif carry:
                yield RawLine(number + 1, offset, carry, False)
            yield block
            return
        cut = block.rfind(b"\n")
        if cut < 0:
            if skipping:
                skipping += len(block)
            elif len(carry) + len(block) > max_line:
                skipping, carry = len(carry) + len(block), b""
            else:
                carry += block
            continue
        head, rest = block[:cut], block[cut + 1 :]
        lines = head.split(b"\n")
        if skipping:  # the oversized line ends in this frame
            skipping += len(lines[0])
            number += 1
            yield RawLine(number, offset, b"", True, oversized=skipping)
            offset += skipping + 1
            skipping = 0
            lines = lines[1:]
        elif carry:
            lines[0] = carry + lines[0]
        carry = b""
        if len(rest) > max_line:
            skipping = len(rest)
        else:
            carry = rest
        others, prefix = _not_chunks(lines, prefix)
        plain = set(others)
        i, n = 0, len(lines)
        while i < n:
            line = lines[i]
            if i not in plain and len(line) <= max_line:
                j = i + 1
                while j < n and j not in plain and len(lines[j]) <= max_line:
                    j += 1
                if j - i > 1:
                    run = lines[i:j]
                    nbytes = sum(map(len, run)) + len(run)
                    yield LineRun(number + 1, offset, run, nbytes)
                    number += len(run)
                    offset += nbytes
                    i = j
                    continue
            number += 1
            if len(line) > max_line:
                yield RawLine(number, offset, b"", True, oversized=len(line))
            else:
                yield RawLine(number, offset, line, True)
            offset += len(line) + 1
            i += 1
    if skipping:
        yield RawLine(number + 1, offset, b"", False, oversized=skipping)
    elif carry:
        yield RawLine(number + 1, offset, carry, False)


def _not_chunks(lines: list[bytes], prefix: bytes) -> tuple[list[int], bytes]:
    """The indexes of the ``lines`` that are not chunk lines (:data:`CHUNK_START`), and the prefix to
    compare first in the next block.

    A line that starts with ``prefix`` is one without asking: at first the harness's own
    :data:`CHUNK_PREFIX`.  A line that starts compact and type first with another type is not one,
    without asking either (the harness's other lines).  When most of a block's lines are chunk lines
    another writer wrote type first (spaced, say), every such line of that writer starts as the
    first did: that start is the next block's ``prefix``, one compare a line, not a regular expression."""
    n = len(prefix)
    others: list[int] = []
    first = None  # the first line's start that CHUNK_START took
    taken = 0
    for i in [i for i, line in enumerate(lines) if line[:n] != prefix]:
        line = lines[i]
        if line[:9] == b'{"type":"' and line[9:25] != b'assistant/chunk"':
            others.append(i)
        elif (start := CHUNK_START(line)) is None:
            others.append(i)
        else:
            taken += 1
            first = first or start
    if first is not None and 2 * taken > len(lines) and first.group().endswith(b":"):
        prefix = first.group()  # type first, up to the seq or time key: not seq first, whose value varies
    return others, prefix


def _plain_lines(path: LogPath, max_line: int, start: tuple[int, int] = (0, 0)) -> Iterator[RawLine]:
    """Plain JSONL via buffered readline (C speed), never holding more than max_line bytes."""
    offset, number = start
    with open_readonly(path, _BLOCK) as fh:
        if offset:
            fh.seek(offset)
        readline = fh.readline
        while True:
            line = readline(max_line + 1)
            if not line:
                return
            raw = _raw_line(readline, line, number + 1, offset, max_line)
            yield raw
            if not raw.complete:
                return
            number, offset = raw.number, offset + (raw.oversized or len(raw.data)) + 1


def _plain_runs(
    path: LogPath, max_line: int, start: tuple[int, int], block_size: int = _BLOCK
) -> Iterator[RawLine | LineRun]:
    """Like :func:`_plain_lines`, grouping runs of complete chunk lines.

    Reads 1 MiB blocks and splits them in C; only the lines that are *not*
    chunks are visited one by one, so a run of chunks costs a few C calls.
    """
    offset, number = start
    prefix = CHUNK_PREFIX
    carry = b""
    pieces: list[bytes] = []  # blocks of a long line that has not ended yet (joined once, at its end)
    pending = 0  # len(carry) + the pieces' lengths
    skipping = -1  # >= 0 while discarding an oversized line (its length so far)
    skip_offset = 0
    with open_readonly(path) as fh:
        if offset:
            fh.seek(offset)
        while True:
            block = fh.read(block_size)
            if not block:
                break
            if carry and skipping < 0 and b"\n" not in block:
                # A line longer than a block: gather, don't re-copy and re-split it per block.
                pieces.append(block)
                pending += len(block)
                if pending > max_line:
                    skipping, skip_offset, carry, pieces = pending, offset, b"", []
                continue
            if pieces:
                carry, pieces = b"".join([carry, *pieces]), []
            if skipping >= 0:
                nl = block.find(b"\n")
                if nl < 0:
                    skipping += len(block)
                    continue
                number += 1
                yield RawLine(number, skip_offset, b"", True, oversized=skipping + nl)
                offset = skip_offset + skipping + nl + 1
                skipping = -1
                block = block[nl + 1 :]
            lines = block.split(b"\n")
            shift = len(carry)  # the first line began in an earlier block
            if carry:
                lines[0] = carry + lines[0]
            carry = lines.pop()
            others, prefix = _not_chunks(lines, prefix)
            # A line can only be over max_line if the text is (a run never holds an oversized line).
            if shift + len(block) > max_line and lines and max(map(len, lines)) > max_line:
                others = sorted({*others, *(i for i, line in enumerate(lines) if len(line) > max_line)})
            # A run's text, sliced in place from the block (line ``prev`` starts at ``at - shift``
            # in it); a run that holds the carried-over first line is joined instead.
            view = memoryview(block) if block.isascii() else None
            prev, at = 0, 0
            for i in others:
                if i > prev:
                    run = lines[prev:i]
                    span = sum(map(len, run)) + len(run)
                    text = view[at - shift : at - shift + span - 1] if view is not None and at >= shift else None
                    yield LineRun(number + 1, offset, run, span, text)
                    number += len(run)
                    offset += span
                    at += span
                line = lines[i]
                number += 1
                if len(line) > max_line:
                    yield RawLine(number, offset, b"", True, oversized=len(line))
                else:
                    yield RawLine(number, offset, line, True)
                offset += len(line) + 1
                at += len(line) + 1
                prev = i + 1
            if prev < len(lines):
                run = lines[prev:]
                span = sum(map(len, run)) + len(run)
                text = view[at - shift : at - shift + span - 1] if view is not None and at >= shift else None
                yield LineRun(number + 1, offset, run, span, text)
                number += len(run)
                offset += span
            pending = len(carry)
            if pending > max_line:
                skipping, skip_offset, carry = pending, offset, b""
    if pieces:
        carry = b"".join([carry, *pieces])
    if skipping >= 0:
        yield RawLine(number + 1, skip_offset, b"", False, oversized=skipping)
    elif carry:
        if len(carry) > max_line:
            yield RawLine(number + 1, offset, b"", False, oversized=len(carry))
        else:
            yield RawLine(number + 1, offset, carry, False)


def _raw_line(readline: Callable[[int], bytes], line: bytes, number: int, offset: int, max_line: int) -> RawLine:
    """Finish one physical line whose first ``max_line + 1`` bytes were read."""
    if line[-1:] == b"\n":
        return RawLine(number, offset, line[:-1], True)
    if len(line) <= max_line:  # final fragment without newline
        return RawLine(number, offset, line, False)
    total = len(line)
    while True:  # skip the rest of an oversized line without keeping it
        more = readline(_BLOCK)
        if not more:
            return RawLine(number, offset, b"", False, oversized=total)
        total += len(more)
        if more[-1:] == b"\n":
            return RawLine(number, offset, b"", True, oversized=total - 1)


def _block_lines(path: LogPath, max_line: int) -> Iterator[RawLine | FrameProblem]:
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
