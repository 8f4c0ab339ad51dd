"""Read and write ``.jsonl.zstd`` session logs (LOG-FORMAT §1.5/§1.6).

Such a file is a run of independent, checksummed zstd frames: frame 0 holds
the header line, each later frame one append batch. ``iter_frames`` walks
the frames the way the harness does: it finds each frame's end from the
frame and block headers, then decompresses the whole frame and checks its
checksum before handing the bytes over. Memory use is bounded by one frame:
a small one (the harness's append batches) is decompressed at once; a large
one (a log compressed whole by the ``zstd`` tool is one frame) is decompressed
twice from its compressed bytes, in pieces, once to check it and once to hand
it over, so what is held is the frame's compressed bytes, not the log.

Failures (``FrameError.kind``):

Skippable frames (magic ``0x184D2A5?``, any user data) are read past, as the
reference ``zstd`` does; they are not counted as frames of the log.  (The
harness's own reader refuses them: the log reader says so in one finding.)

* ``"no-header-frame"``: the file is empty, or ends before frame 0 is
  complete. Nothing is yielded (the harness recovers nothing here either).
* ``"torn"``: the file ends inside a later frame. The bytes that partial
  frame decodes to are yielded first (nothing if it decodes to nothing or
  its available blocks are bad; of a large one, the pieces that decode
  before a bad block), then the error is raised. A tail of 1-3
  bytes, too short to be checked as a frame magic, also counts as torn.
* ``"corrupt"``: bad magic, reserved header bits or block type, or a
  complete frame that fails to decompress or fails its checksum.
* ``"bomb"``: the frames would expand to more than ``MAX_EXPANSION`` times the
  compressed bytes read so far (plus ``EXPANSION_FLOOR``).  The bound comes
  from the block headers (a raw or RLE block regenerates its stated size, a
  compressed block at most 128 KiB), before anything is decompressed, so a
  64 KiB file that would expand to 2 GiB costs neither the time nor the memory.
"""

from __future__ import annotations

import io
import os
from typing import BinaryIO, Callable, Iterator

import zstandard

__all__ = ["FrameError", "is_zstd_path", "iter_frames", "write_frames"]

_MAGIC = b"\x28\xb5\x2f\xfd"  # 0xFD2FB528, little-endian
_SKIPPABLE = b"\x2a\x4d\x18"  # skippable frames: magic 0x184D2A50..0x184D2A5F, the last three bytes
_READ_SIZE = 1 << 20
_BLOCK_MAX = 128 * 1024  # Block_Maximum_Size: no block regenerates more
#: Decompressed bytes allowed per compressed byte read (harness logs compress 5-50x).
MAX_EXPANSION = 1000
#: ...on top of this allowance, so small files with one big batch are never refused.
EXPANSION_FLOOR = 64 * 1024 * 1024
#: A frame that may decompress to more than this is decompressed in pieces (see above).
WHOLE_FRAME = 4 * 1024 * 1024
_PIECE = 1024 * 1024  # the most a piece holds (decompressed)
_PIECE_INPUT = 64 * 1024  # compressed bytes the decoder is fed at a time while it makes pieces


class FrameError(Exception):
    """A zstd session log that does not decode cleanly; see the module docstring."""

    def __init__(self, kind: str, frame_index: int, offset: int, detail: str) -> None:
        self.kind = kind
        self.frame_index = frame_index
        self.offset = offset
        self.detail = detail
        super().__init__(f"{kind} zstd log: frame {frame_index} (starting at byte {offset}): {detail}")


class _Source:
    """Buffered exact-size reads over a binary file, tracking the byte offset."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._buf = b""
        self._at = 0
        self._eof = False
        self.offset = 0

    def _fill(self, n: int) -> None:
        while len(self._buf) - self._at < n and not self._eof:
            data = self._fh.read(max(_READ_SIZE, n))
            if not data:
                self._eof = True
            else:
                self._buf = self._buf[self._at :] + bytes(data)
                self._at = 0

    def take(self, n: int) -> bytes:
        """Up to ``n`` bytes; fewer only at end of file."""
        self._fill(n)
        out = self._buf[self._at : self._at + n]
        self._at += len(out)
        self.offset += len(out)
        return out

    def exhausted(self) -> bool:
        self._fill(1)
        return self._at >= len(self._buf)

    def take_frame(self) -> tuple[bytes, int] | None:
        """The next frame and the most it can regenerate, when the buffer holds all of it and it is a
        well-formed zstd frame; else None, with nothing taken (:func:`_read_frame` reads it then)."""
        found = _frame_in(self._buf, self._at)
        if found is None:
            return None
        end, bound = found
        frame = self._buf[self._at : end]
        self.offset += end - self._at
        self._at = end
        return frame, bound


class _Torn(Exception):
    pass


class _Skippable(Exception):
    """A skippable frame was read past (it holds no log bytes)."""


def _skip_frame(src: _Source, parts: list[bytes], need: Callable[[int], bytes]) -> None:
    """Read past a skippable frame's content (its 4-byte size, then that many bytes), holding none of it."""
    size = int.from_bytes(need(4), "little")
    while size > 0:
        got = len(src.take(min(size, _READ_SIZE)))
        if got == 0:
            raise _Torn
        size -= got
    parts.clear()


def _frame_in(buf: bytes, at: int) -> tuple[int, int] | None:
    """(end, the most its blocks regenerate) of the zstd frame at ``buf[at:]``, read from its frame
    and block headers as :func:`_read_frame` reads them, or None when the buffer ends first or
    anything is not a plain well-formed frame (a skippable one, a bad magic or reserved bit): then
    :func:`_read_frame` reads it and says what it is.  One pass over the buffer, no copies: a
    harness log is many small frames (an append batch each, written every 200 ms)."""
    end = len(buf)
    if at + 5 > end or buf[at : at + 4] != _MAGIC:
        return None
    descriptor = buf[at + 4]
    if descriptor & 0x18:
        return None
    size_flag, single_segment = descriptor >> 6, descriptor & 0x20
    size_bytes = (1 if single_segment else 0) if size_flag == 0 else 1 << size_flag
    p = at + 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03] + size_bytes
    bound = 0
    while True:
        if p + 3 > end:
            return None
        header = buf[p] | buf[p + 1] << 8 | buf[p + 2] << 16
        block_type = (header >> 1) & 0x03
        if block_type == 3:
            return None
        size = header >> 3
        bound += _BLOCK_MAX if block_type == 2 else size
        p += 3 + (1 if block_type == 1 else size)
        if header & 1:
            break
    if descriptor & 0x04:
        p += 4
    return (p, bound) if p <= end else None


def _read_frame(src: _Source, parts: list[bytes], bound: list[int] | None = None) -> None:
    """Append one frame's bytes to ``parts``; raise _Torn at EOF, ValueError on bad structure.

    ``bound[0]`` grows by the most each block can regenerate, as its header is read.
    """
    bound = [0] if bound is None else bound

    def need(n: int) -> bytes:
        chunk = src.take(n)
        parts.append(chunk)
        if len(chunk) < n:
            raise _Torn
        return chunk

    magic = need(4)
    if magic[1:] == _SKIPPABLE and magic[0] & 0xF0 == 0x50:
        _skip_frame(src, parts, need)
        raise _Skippable
    if magic != _MAGIC:
        raise ValueError("bad frame magic")
    descriptor = need(1)[0]
    if descriptor & 0x18:
        raise ValueError("reserved bit set in the frame header")
    size_flag, single_segment = descriptor >> 6, bool(descriptor & 0x20)
    dict_bytes = (0, 1, 2, 4)[descriptor & 0x03]
    size_bytes = (1 if single_segment else 0) if size_flag == 0 else 1 << size_flag
    need((0 if single_segment else 1) + dict_bytes + size_bytes)
    while True:
        header = int.from_bytes(need(3), "little")
        block_type = (header >> 1) & 0x03
        if block_type == 3:
            raise ValueError("reserved block type")
        bound[0] += _BLOCK_MAX if block_type == 2 else header >> 3
        need(1 if block_type == 1 else header >> 3)
        if header & 1:
            break
    if descriptor & 0x04:
        need(4)


def iter_frames(fh: BinaryIO, skipped: list[tuple[int, int]] | None = None) -> Iterator[bytes]:
    """Yield the decompressed bytes of each frame in order; see the module docstring.  The (offset, length)
    of each skippable frame read past is appended to ``skipped`` when given."""
    dctx = zstandard.ZstdDecompressor()
    src = _Source(fh)
    index = 0
    expanded = 0  # the most the frames so far can decompress to
    while index == 0 or not src.exhausted():
        start = src.offset
        parts: list[bytes] = []
        bound = [0]
        try:
            if (whole := src.take_frame()) is not None:
                parts.append(whole[0])
                bound[0] = whole[1]
            else:
                _read_frame(src, parts, bound)
        except _Skippable:  # as the reference zstd does: skipped, neither a frame of the log nor an error
            if skipped is not None:
                skipped.append((start, src.offset - start))
            continue
        except ValueError as exc:
            raise FrameError("corrupt", index, start, str(exc)) from None
        except _Torn:
            _check_expansion(expanded + bound[0], src.offset, index, start)
            if index == 0:
                what = "the file is empty" if start == src.offset else "the header frame is incomplete"
                raise FrameError("no-header-frame", 0, start, what) from None
            try:  # what its complete blocks hold (a torn frame has no checksum to check)
                if bound[0] <= WHOLE_FRAME:
                    partial = dctx.decompressobj().decompress(b"".join(parts))
                    if partial:
                        yield partial
                else:
                    yield from _pieces(dctx, b"".join(parts))
            except zstandard.ZstdError:
                pass
            raise FrameError("torn", index, start, "the file ends inside this frame") from None
        expanded += bound[0]
        _check_expansion(expanded, src.offset, index, start)
        data = b"".join(parts)
        parts.clear()
        if bound[0] > WHOLE_FRAME:
            try:  # checked first, its output let go piece by piece: nothing is handed over unchecked
                for _ in _pieces(dctx, data):
                    pass
            except zstandard.ZstdError as exc:
                raise FrameError("corrupt", index, start, f"decompression failed ({exc})") from None
            yield from _pieces(dctx, data)
            index += 1
            continue
        try:
            obj = dctx.decompressobj()
            plain = obj.decompress(data)
            complete = obj.eof and not obj.unused_data
        except zstandard.ZstdError as exc:
            raise FrameError("corrupt", index, start, f"decompression failed ({exc})") from None
        if not complete:
            raise FrameError("corrupt", index, start, "the decoder did not finish at the frame end")
        yield plain
        index += 1


def _pieces(dctx: zstandard.ZstdDecompressor, data: bytes) -> Iterator[bytes]:
    """The decompressed bytes of the frame (or the start of one) in ``data``, at most ``_PIECE`` at a
    time however well it compressed (the decoder stops at the frame's end, and checks its checksum)."""
    yield from dctx.read_to_iter(io.BytesIO(data), read_size=_PIECE_INPUT, write_size=_PIECE)


def _check_expansion(expanded: int, read: int, index: int, start: int) -> None:
    allowed = EXPANSION_FLOOR + MAX_EXPANSION * read
    if expanded > allowed:
        raise FrameError(
            "bomb",
            index,
            start,
            f"the frames up to this one may expand to {expanded} bytes, more than "
            f"{MAX_EXPANSION}x the {read} compressed bytes read (plus {EXPANSION_FLOOR}); not decompressed",
        )


def write_frames(path_or_fh: str | os.PathLike | BinaryIO, batches: list[bytes], level: int = 3) -> None:
    """Write each batch as its own checksummed frame (batch 0 = the header line)."""
    cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)
    if hasattr(path_or_fh, "write"):
        for batch in batches:
            path_or_fh.write(cctx.compress(batch))
        return
    with open(path_or_fh, "wb") as fh:
        for batch in batches:
            fh.write(cctx.compress(batch))


def is_zstd_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a zstd-compressed log (suffix ``.zstd`` or ``.zst``)."""
    return os.fsdecode(path).endswith((".zstd", ".zst"))
