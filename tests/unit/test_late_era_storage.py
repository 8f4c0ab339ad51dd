"""Late-era storage end to end: zstd frames, packed rows, directory layouts."""

from __future__ import annotations

import hashlib
from unittest.mock import patch

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants import check
from invariants.read import lines as lines_module
from invariants.read.discover import discover
from invariants.read.line_records import LineRun, RawLine
from invariants.read.lines import iter_lines
from invariants.read.zstdio import iter_frames, write_frames
from invariants.simulate.convert import convert_log, project_key, session_path
from tests.support.logs import Log


def _session(turns: int = 3) -> Log:
    log = Log("zz", era="late", cwd="/home/dev/project")
    for t in range(1, turns + 1):
        log.turn_start(t)
        log.step_start(t, 1)
        log.user(f"prompt {t}")
        if t == 1:
            log.snapshot()
        log.request(t, 1)
        seqs = [log.chunk(t, 1, w) for w in ("one ", "two ", "three ", "four")]
        log.assistant(t, 1, [{"type": "text", "text": "one two three four"}], seqs)
        log.step_end(t, 1)
        log.turn_end(t)
    return log


def _write_zstd(tmp_path, log: Log):
    plain = log.write(tmp_path / "src" / "zz.jsonl")
    dst = session_path(tmp_path / "root", log.header)
    convert_log(plain, dst)
    log.write_requests(dst.parent / "requests.jsonl")
    return dst


def test_project_layout_session_with_frames_rows_and_capture(tmp_path):
    log = _session()
    dst = _write_zstd(tmp_path, log)
    assert dst.relative_to(tmp_path / "root").parts == ("--home-dev-project--", "zz", "session.jsonl.zstd")
    with open(dst, "rb") as fh:
        frames = list(iter_frames(fh))
    assert len(frames) == 4 and frames[0].count(b"\n") == 1  # header frame + one batch per turn
    assert b'"text-chunks"' in b"".join(frames)
    result = check([tmp_path / "root"], keep_models=True)
    (m,) = result.models
    assert m.chunk_rows == 3 and m.events == log.seq and result.findings == []
    assert [r.status for r in result.requests] == ["ok", "ok", "ok"]


def test_older_flat_layout_is_still_found(tmp_path):
    log = _session(1)
    log.write(tmp_path / "cwd-0123456789ab" / "zz.jsonl")
    sources, problems = discover([tmp_path])
    assert problems == [] and [s.path.name for s in sources] == ["zz.jsonl"]


def test_project_key_follows_the_harness():
    assert project_key("/home/dev/project") == "--home-dev-project--"
    assert project_key("C:\\Users\\me") == "--C-Users-me--"
    assert project_key("/") == "--root--"
    assert project_key("/a b") == "--a~0020b--"
    assert len(project_key("/" + "x" * 400)) == 255


def test_torn_last_frame_keeps_the_complete_frames(tmp_path):
    log = _session()
    dst = _write_zstd(tmp_path, log)
    data = dst.read_bytes()
    dst.write_bytes(data[:-7])
    result = check([dst])
    rules = sorted((f.rule, f.severity) for f in result.findings)
    # the last frame (turn 3) is lost; its request, captured live, now lies beyond the log
    assert rules == [("LOG010", "warning"), ("REQ005", "error")]
    (m,) = result.sessions
    assert 0 < m.events < log.seq and m.turns == 2
    assert [r.status for r in result.requests] == ["ok", "ok", "unexplained"]


def test_bad_checksum_in_a_middle_frame_is_corruption(tmp_path):
    log = _session()
    frames = [orjson.dumps(log.header) + b"\n"] + [orjson.dumps(e) + b"\n" for e in log.events]
    dst = tmp_path / "x.jsonl.zstd"
    write_frames(dst, [frames[0], b"".join(frames[1:10]), b"".join(frames[10:])])
    raw = bytearray(dst.read_bytes())
    # the checksum is the last 4 bytes of each frame; break frame 1's
    with open(dst, "rb") as fh:
        sizes = [len(f) for f in iter_frames(fh)]
    assert len(sizes) == 3
    import zstandard

    c = zstandard.ZstdCompressor(level=3, write_checksum=True)
    end1 = len(c.compress(frames[0])) + len(c.compress(b"".join(frames[1:10])))
    raw[end1 - 1] ^= 0xFF
    dst.write_bytes(bytes(raw))
    result = check([dst])
    assert "LOG009" in [f.rule for f in result.findings if f.severity == "error"]


def test_header_only_zstd_log_is_an_empty_session(tmp_path):
    dst = tmp_path / "h.jsonl.zstd"
    write_frames(dst, [orjson.dumps(Log(era="late").header) + b"\n"])
    result = check([dst])
    assert result.findings == [] and result.sessions[0].events == 0


def test_malformed_row_in_a_zstd_log(tmp_path):
    log = _session(1)
    dst = _write_zstd(tmp_path, log)
    with open(dst, "rb") as fh:
        text = b"".join(iter_frames(fh))
    lines = text.split(b"\n")[:-1]
    i = next(i for i, line in enumerate(lines) if b'"text-chunks"' in line)
    row = orjson.loads(lines[i])
    row["data"]["dt"] = row["data"]["dt"][:-1]
    lines[i] = orjson.dumps(row)
    write_frames(dst, [lines[0] + b"\n", b"\n".join(lines[1:]) + b"\n"])
    result = check([dst])
    assert "LOG012" in [f.rule for f in result.findings if f.severity == "error"]


def test_the_checker_never_writes_a_zstd_log(tmp_path):
    dst = _write_zstd(tmp_path, _session())
    before = hashlib.sha256(dst.read_bytes()).hexdigest()
    dst.write_bytes(dst.read_bytes()[:-5])  # torn: the harness would rewrite its tail on load
    torn = hashlib.sha256(dst.read_bytes()).hexdigest()
    check([dst])
    assert hashlib.sha256(dst.read_bytes()).hexdigest() == torn != before


@pytest.mark.parametrize("name", ["late/--home-dev-project--", "late/torn", "late/db"])
def test_late_samples_are_present(name):
    from tests.conftest import SAMPLES

    assert (SAMPLES / name).is_dir()


# -- the zstd line reader: grouped runs equal the line-by-line reader ------------------------

_CHUNK = b'{"type":"assistant/chunk","seq":1,"time":1,"data":{}}'


def _flat(items):
    out = []
    for x in items:
        if type(x) is LineRun:
            out += [(r.number, r.offset, r.data, r.complete, r.oversized) for r in x.raw_lines()]
        elif type(x) is RawLine:
            out.append((x.number, x.offset, x.data, x.complete, x.oversized))
        else:
            out.append(("frame", x.kind))
    return out


def _cut(text: bytes, cuts: list[int]) -> list[bytes]:
    """``text`` as frames of the ``cuts``' sizes, then the rest: split anywhere, even mid-line."""
    frames, pos = [], 0
    for c in cuts:
        if pos + c < len(text):
            frames.append(text[pos : pos + c])
            pos += c
    return [*frames, text[pos:]]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from([_CHUNK, b'{"type":"turn/end"}', b"x" * 90, b""]), min_size=1, max_size=25),
    st.lists(st.integers(min_value=1, max_value=200), max_size=6),
    st.sampled_from([40, 60, 1000]),
    st.integers(min_value=0, max_value=30),
    st.booleans(),
)
def test_grouped_zstd_lines_equal_line_by_line(tmp_path_factory, lines, cuts, max_line, tear, trailing):
    text = b"\n".join(lines) + (b"\n" if trailing else b"")
    frames = _cut(text, cuts)
    path = tmp_path_factory.mktemp("z") / "x.jsonl.zstd"
    write_frames(path, [b'{"type":"session"}\n'] + [f for f in frames if f])
    if tear:
        path.write_bytes(path.read_bytes()[:-tear])
    assert _flat(iter_lines(path, max_line, runs=True)) == _flat(iter_lines(path, max_line))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from([_CHUNK, b'{"type":"turn/end"}', b"x" * 90, b""]), min_size=1, max_size=40),
    st.lists(st.integers(min_value=1, max_value=120), max_size=12),
    st.sampled_from([40, 60, 1000]),
    st.sampled_from([1, 50, 1 << 16]),
)
def test_frames_joined_into_blocks_read_as_the_plain_file(tmp_path_factory, lines, cuts, max_line, joined):
    """Consecutive frames (append batches of a few lines) are split into lines as blocks of about
    ``_FRAMES`` bytes: wherever a block ends, the lines, their numbers and offsets are the plain file's."""
    text = b'{"type":"session"}\n' + b"\n".join(lines) + b"\n"
    frames = _cut(text, cuts)
    folder = tmp_path_factory.mktemp("z")
    write_frames(folder / "x.jsonl.zstd", frames)
    (folder / "x.jsonl").write_bytes(text)
    with patch.object(lines_module, "_FRAMES", joined):
        zstd = _flat(iter_lines(folder / "x.jsonl.zstd", max_line, runs=True))
    assert zstd == _flat(iter_lines(folder / "x.jsonl", max_line, runs=True))
