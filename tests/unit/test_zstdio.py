"""Multi-frame zstd reading: round trip, torn tails, corruption, hostile input."""

from __future__ import annotations

import io
import random

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.read.zstdio import FrameError, is_zstd_path, iter_frames, write_frames

HEADER = b'{"type":"session","version":0,"id":"s1","createdAt":1,"delegationDepth":0}\n'
BATCHES = [
    HEADER,
    b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n',
    b"".join(b'{"type":"x","seq":%d,"time":2,"data":{}}\n' % i for i in range(1, 200)),
    b'{"type":"turn/end","seq":200,"time":3,"data":{"turn":1}}\n',
]


def encode(batches, **kw):
    buf = io.BytesIO()
    write_frames(buf, batches, **kw)
    return buf.getvalue()


def frame_starts(batches):
    starts, at = [], 0
    for batch in batches:
        starts.append(at)
        at += len(encode([batch]))
    return starts


def read_all(data):
    """Frames yielded before the end, and the FrameError raised (or None)."""
    out = []
    try:
        for frame in iter_frames(io.BytesIO(data)):
            out.append(frame)
    except FrameError as exc:
        return out, exc
    return out, None


class Trickle(io.RawIOBase):
    """A file that hands out at most ``step`` bytes per read and counts what it gave."""

    def __init__(self, data, step):
        self._data, self._step, self.given = data, step, 0

    def readable(self):
        return True

    def read(self, n=-1):
        n = self._step if n < 0 else min(n, self._step)
        chunk = self._data[self.given : self.given + n]
        self.given += len(chunk)
        return chunk


def test_multi_frame_round_trip(tmp_path):
    path = tmp_path / "session.jsonl.zstd"
    write_frames(path, BATCHES)
    data = path.read_bytes()
    assert data.startswith(b"\x28\xb5\x2f\xfd")
    with open(path, "rb") as fh:
        assert list(iter_frames(fh)) == BATCHES
    # each frame is independent and checksummed, as the harness writes them
    for batch, start in zip(BATCHES, frame_starts(BATCHES)):
        params = zstandard.get_frame_parameters(data[start:])
        assert params.has_checksum
        assert (
            zstandard.ZstdDecompressor().decompressobj().decompress(data[start : start + len(encode([batch]))]) == batch
        )
    # a plain one-shot decode stops after the first frame; iter_frames does not
    assert b"".join(iter_frames(io.BytesIO(data))) == b"".join(BATCHES)


def test_short_reads_and_empty_batches():
    batches = [HEADER, b"", b"a\n", b""]
    data = encode(batches)
    assert list(iter_frames(Trickle(data, 1))) == batches
    assert list(iter_frames(Trickle(data, 7))) == batches


def test_streams_instead_of_reading_everything():
    rng = random.Random(1)
    batches = [HEADER] + [rng.randbytes(300_000) for _ in range(12)]
    data = encode(batches)
    src = Trickle(data, 1 << 30)
    frames = iter_frames(src)
    assert next(frames) == HEADER
    assert next(frames) == batches[1]
    assert src.given < len(data) // 2
    assert list(frames) == batches[2:]
    assert src.given == len(data)


def test_rle_block_is_one_payload_byte():
    # hand-made frame: single segment, 1-byte content size 10, one last RLE block of b"x"
    rle = b"\x28\xb5\x2f\xfd" + bytes([0x20, 10]) + ((10 << 3) | (1 << 1) | 1).to_bytes(3, "little") + b"x"
    data = encode([HEADER]) + rle + encode([b"z\n"])
    assert read_all(data) == ([HEADER, b"x" * 10, b"z\n"], None)


def test_header_only_file():
    assert read_all(encode([HEADER])) == ([HEADER], None)


def test_empty_file():
    out, exc = read_all(b"")
    assert out == [] and exc.kind == "no-header-frame"
    assert (exc.frame_index, exc.offset) == (0, 0)
    assert "empty" in str(exc)


@pytest.mark.parametrize("cut", [1, 3, 4, 5, 8, -5, -4, -1])
def test_torn_header_frame_is_no_header_frame(cut):
    data = encode([HEADER, b"x\n"])
    first = len(encode([HEADER]))
    out, exc = read_all(data[: cut % first])
    assert out == []
    assert (exc.kind, exc.frame_index, exc.offset) == ("no-header-frame", 0, 0)


def test_torn_last_frame_at_every_offset():
    data = encode(BATCHES)
    last = frame_starts(BATCHES)[-1]
    for end in range(last + 1, len(data)):
        out, exc = read_all(data[:end])
        assert exc is not None and exc.kind == "torn", end
        assert (exc.frame_index, exc.offset) == (len(BATCHES) - 1, last)
        assert out[: len(BATCHES) - 1] == BATCHES[:-1]
        partial = out[len(BATCHES) - 1 :]
        assert len(partial) <= 1
        if partial:
            assert partial[0] and BATCHES[-1].startswith(partial[0])
    # cutting exactly at a frame boundary is not torn
    assert read_all(data[:last]) == (BATCHES[:-1], None)


def test_torn_multi_block_frame_yields_its_complete_blocks():
    rng = random.Random(2)
    big = rng.randbytes(400_000)  # incompressible: raw blocks of 128 KiB
    data = encode([HEADER, big])
    start = len(encode([HEADER]))
    for end in (start + 200_000, start + 300_000, len(data) - 4, len(data) - 1):
        out, exc = read_all(data[:end])
        assert exc.kind == "torn" and exc.offset == start and exc.frame_index == 1
        assert out[0] == HEADER
        assert len(out) == 2 and len(out[1]) >= 128 * 1024 and big.startswith(out[1])
    # every block is in, only the checksum is missing: all content comes back
    assert read_all(data[:-4])[0][1] == big


def test_flipped_checksum_byte_is_corrupt():
    data = bytearray(encode(BATCHES))
    ends = frame_starts(BATCHES)[1:] + [len(data)]
    for index, end in enumerate(ends):
        bad = bytearray(data)
        bad[end - 1] ^= 0x01
        out, exc = read_all(bytes(bad))
        assert out == BATCHES[:index]
        assert (exc.kind, exc.frame_index, exc.offset) == ("corrupt", index, frame_starts(BATCHES)[index])
        assert "checksum" in str(exc)


def test_flipped_content_byte_in_raw_block_is_caught_by_checksum():
    rng = random.Random(3)
    payload = rng.randbytes(5_000)
    data = bytearray(encode([HEADER, payload]))
    start = len(encode([HEADER]))
    data[start + 3_000] ^= 0x40  # inside the raw block: only the checksum can notice
    out, exc = read_all(bytes(data))
    assert out == [HEADER]
    assert (exc.kind, exc.frame_index, exc.offset) == ("corrupt", 1, start)


def test_frame_without_checksum_flag_is_accepted():
    plain = zstandard.ZstdCompressor(write_checksum=False).compress(b"y\n")
    assert read_all(encode([HEADER]) + plain) == ([HEADER, b"y\n"], None)


@pytest.mark.parametrize("garbage", [b"not a zstd file at all\n", b"\x00\x00\x00\x00", b'{"type":"session"}\n'])
def test_garbage_file_is_corrupt(garbage):
    out, exc = read_all(garbage)
    assert out == [] and (exc.kind, exc.frame_index, exc.offset) == ("corrupt", 0, 0)
    assert "magic" in str(exc)


def test_garbage_after_good_frames_is_corrupt():
    good = encode(BATCHES[:2])
    out, exc = read_all(good + b"\x00garbage")
    assert out == BATCHES[:2]
    assert (exc.kind, exc.frame_index, exc.offset) == ("corrupt", 2, len(good))


@pytest.mark.parametrize("tail", [b"\x00", b"ab", b"\x28\xb5\x2f"])
def test_tail_shorter_than_a_magic_is_torn(tail):
    good = encode(BATCHES[:2])
    assert read_all(good + tail)[0] == BATCHES[:2]
    assert read_all(good + tail)[1].kind == "torn"
    assert read_all(tail)[1].kind == "no-header-frame"


def test_skippable_frame_is_read_past_as_the_reference_zstd_does():
    """Issue 34: the reference zstd skips them; the log reader adds one LOG009 (the harness refuses them)."""
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"abcd"
    out, exc = read_all(encode([HEADER]) + skippable)
    assert out == [HEADER] and exc is None


def test_reserved_header_bit_and_block_type_are_corrupt():
    frame = bytearray(encode([HEADER]))
    bad = bytearray(frame)
    bad[4] |= 0x08
    assert read_all(bytes(bad))[1].kind == "corrupt"
    descriptor = frame[4]
    single_segment, size_flag = descriptor & 0x20, descriptor >> 6
    size_bytes = (1 if single_segment else 0) if size_flag == 0 else 1 << size_flag
    header_len = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3] + size_bytes
    assert int.from_bytes(frame[header_len : header_len + 3], "little") & 1  # the one (last) block
    bad = bytearray(frame)
    bad[header_len] |= 0x06  # block type 3
    out, exc = read_all(bytes(bad))
    assert out == [] and exc.kind == "corrupt" and "block type" in str(exc)


def test_reserved_bit_in_a_torn_last_frame_is_still_corrupt():
    # the harness checks frame structure before it looks for a torn tail
    good = encode(BATCHES[:2])
    last = bytearray(encode([BATCHES[2]]))
    last[4] |= 0x10
    out, exc = read_all(good + bytes(last[:-10]))
    assert out == BATCHES[:2] and (exc.kind, exc.frame_index) == ("corrupt", 2)
    assert "reserved" in str(exc)


def test_frame_error_message_and_attributes():
    exc = FrameError("torn", 3, 120, "the file ends inside this frame")
    assert (exc.kind, exc.frame_index, exc.offset) == ("torn", 3, 120)
    assert "frame 3" in str(exc) and "byte 120" in str(exc)


def test_is_zstd_path():
    assert is_zstd_path("a/session.jsonl.zstd")
    assert is_zstd_path(b"x.jsonl.zst")
    from pathlib import Path

    assert is_zstd_path(Path("s.jsonl.zstd"))
    assert not is_zstd_path("session.jsonl")
    assert not is_zstd_path("session.zstd.jsonl")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.tuples(st.integers(0, 10_000), st.integers(0, 255), st.integers(0, 10_000)),
    )
)
def test_hostile_input_raises_only_frame_error(case):
    if isinstance(case, bytes):
        data = b"\x28\xb5\x2f\xfd" + case if case[:1] == b"\x00" else case
    else:
        flip_at, mask, cut = case
        data = bytearray(encode(BATCHES))
        data[flip_at % len(data)] ^= mask
        data = bytes(data[: len(data) - cut % 40])
    out, exc = read_all(data)
    assert exc is None or exc.kind in ("corrupt", "torn", "no-header-frame")
    assert all(isinstance(frame, bytes) for frame in out)
    if exc is not None and exc.kind == "no-header-frame":
        assert out == []


def _outcome(src):
    """Everything iter_frames says of a file: its frames, then the error's kind, frame, offset and words."""
    out = []
    try:
        out.extend(iter_frames(src))
    except FrameError as exc:
        return out, (exc.kind, exc.frame_index, exc.offset, str(exc))
    return out, None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=12),
    st.tuples(st.integers(0, 10_000), st.integers(0, 255), st.integers(0, 40)),
    st.sampled_from([b"", b"\x50\x2a\x4d\x18\x03\x00\x00\x00abc", b"\x28\xb5"]),
)
def test_frames_read_whole_from_the_buffer_as_header_by_header(batches, damage, extra):
    """A frame the read buffer holds whole is walked in one pass over it; one that crosses the buffer's
    end is read header by header.  Both say the same of any file: here one read of it all, against
    reads of a byte (every frame header by header)."""
    flip_at, mask, cut = damage
    data = bytearray(encode([HEADER, *batches]) + extra)
    data[flip_at % len(data)] ^= mask
    data = bytes(data[: len(data) - cut])
    assert _outcome(io.BytesIO(data)) == _outcome(Trickle(data, 1))


def _one_big_frame(size: int, seed: int = 3) -> tuple[bytes, bytes]:
    """A log compressed whole, as the ``zstd`` tool does it: the header and ``size`` bytes of compressible
    lines in one checksummed frame."""
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"epsilon"]
    lines, n = [HEADER], 0
    while n < size:
        line = b'{"type":"x","seq":%d,"time":2,"data":{"t":"%s"}}\n' % (len(lines), b" ".join(rng.choices(words, k=40)))
        lines.append(line)
        n += len(line)
    content = b"".join(lines)
    return content, zstandard.ZstdCompressor(level=3, write_checksum=True).compress(content)


@pytest.mark.parametrize("repeated", [False, True])
def test_a_large_frame_comes_in_pieces_and_whole(repeated: bool):
    """A frame that may decompress to more than WHOLE_FRAME (a log compressed whole by ``zstd``) is
    handed over in pieces of at most 1 MiB, never the whole log at once, and all of it; also when it
    compressed a thousandfold (a capture repeats its system prompt and tools in every line)."""
    from invariants.read.zstdio import WHOLE_FRAME

    if repeated:
        content = HEADER + b'{"type":"x","seq":1,"time":2,"data":{"t":"%s"}}\n' % (b"a" * 9000) * 2000
        data = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(content)
        assert len(content) > 500 * len(data)
    else:
        content, data = _one_big_frame(3 * WHOLE_FRAME)
    out, exc = read_all(data)
    assert exc is None and b"".join(out) == content
    assert len(out) > 10 and max(map(len, out)) <= 1 << 20


def test_a_large_frame_that_fails_its_checksum_hands_over_nothing():
    """Pieces of a large frame are handed over only once the whole frame has been checked."""
    from invariants.read.zstdio import WHOLE_FRAME

    _, data = _one_big_frame(2 * WHOLE_FRAME)
    bad = data[:-1] + bytes([data[-1] ^ 0xFF])  # the content checksum is the frame's last 4 bytes
    out, exc = read_all(bad)
    assert out == [] and exc is not None and exc.kind == "corrupt" and exc.frame_index == 0


def test_a_torn_large_frame_yields_what_its_complete_blocks_hold():
    from invariants.read.zstdio import WHOLE_FRAME

    content, data = _one_big_frame(4 * WHOLE_FRAME)  # its first half alone may decompress to more than WHOLE_FRAME
    small = encode([HEADER])
    torn = small + data[: len(data) // 2]  # a header frame, then a large frame cut in its middle
    out, exc = read_all(torn)
    assert exc is not None and exc.kind == "torn" and exc.frame_index == 1
    assert out[0] == HEADER and len(out) > 2
    got = b"".join(out[1:])
    assert len(got) > WHOLE_FRAME // 2 and content.startswith(got)
