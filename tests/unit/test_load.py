"""Integrity of raw bytes: every defect is a finding naming file, line and seq."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import orjson
import pytest

from invariants import check
from invariants.read.load import LogReader
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.logs import Log


def _clean(turns: int = 3) -> Log:
    log = Log()
    log.clean_turn(1, header_reason="initial")
    for t in range(2, turns + 1):
        log.clean_turn(t)
    return log


def _write(tmp_path: Path, lines: list[bytes], name: str = "s1.jsonl", newline_at_end: bool = True) -> Path:
    p = tmp_path / name
    p.write_bytes(b"\n".join(lines) + (b"\n" if newline_at_end else b""))
    return p


def _codes(path: Path) -> list[tuple[str, str, int | None, int | None]]:
    result = check([path])
    return [(f.rule, f.severity, f.line, f.seq) for f in result.findings]


def test_clean_log_has_no_findings(tmp_path):
    assert _codes(_write(tmp_path, _clean().lines())) == []


def test_invalid_json_before_a_turn_end_is_corruption(tmp_path):
    lines = _clean().lines()
    lines[3] = b'{"type":"step/start","seq":2,'  # line 4, seq 2
    codes = _codes(_write(tmp_path, lines))
    assert ("LOG001", "error", 4, 2) in codes
    assert not [c for c in codes if c[0] == "LOG003"], "the gap left by the bad line is not reported twice"


def test_invalid_last_line_is_a_torn_tail_warning(tmp_path):
    lines = _clean().lines()
    lines.append(b'{"type":"turn/start","seq":')
    p = _write(tmp_path, lines, newline_at_end=False)
    codes = _codes(p)
    assert codes == [("LOG004", "warning", len(lines), len(lines) - 2)]  # the seq that was due


def test_torn_tail_with_open_turn_is_reported_and_rest_checked(tmp_path):
    log = _clean(2)
    log.turn_start(3)
    log.user("more")
    lines = log.lines() + [b'{"type":"step/sta']
    codes = _codes(_write(tmp_path, lines, newline_at_end=False))
    assert {c[0] for c in codes} == {"LOG004", "LOG006"}


def test_not_an_object_and_bad_envelope(tmp_path):
    lines = _clean().lines()
    lines[2] = b"[1, 2, 3]"
    lines[5] = orjson.dumps({"type": "assistant/chunk", "seq": "4", "time": 1, "data": {}})
    codes = _codes(_write(tmp_path, lines))
    assert ("LOG002", "error", 3, 1) in codes
    assert ("LOG002", "error", 6, 4) in codes  # a non-integer seq is reported as the seq that was due


def test_extra_envelope_key_is_refused(tmp_path):
    lines = _clean().lines()
    obj = orjson.loads(lines[1])
    obj["extra"] = 1
    lines[1] = orjson.dumps(obj)
    assert ("LOG002", "error", 2, 0) in _codes(_write(tmp_path, lines))


def test_seq_gap_and_repeat(tmp_path):
    log = _clean()
    events = [dict(e) for e in log.events]
    for e in events[6:]:
        e["seq"] += 2  # two events missing before seq 8
    lines = [orjson.dumps(log.header)] + [orjson.dumps(e) for e in events]
    codes = _codes(_write(tmp_path, lines))
    assert ("LOG003", "error", 8, 8) in codes
    dup = _clean().lines()
    dup.insert(3, dup[2])
    codes = _codes(_write(tmp_path, dup, name="dup.jsonl"))
    assert any(c[0] == "LOG003" and c[3] == 1 for c in codes)


def test_bad_session_header(tmp_path):
    lines = _clean().lines()
    lines[0] = orjson.dumps({"type": "session", "version": 1, "id": "x", "createdAt": 1})
    codes = _codes(_write(tmp_path, lines))
    assert codes[0][:3] == ("LOG005", "error", 1)
    assert _codes(_write(tmp_path, [], name="empty.jsonl", newline_at_end=False))[0][0] == "LOG005"


def test_missing_header_still_checks_events(tmp_path):
    lines = _clean().lines()[1:]
    codes = _codes(_write(tmp_path, lines))
    assert [c[0] for c in codes] == ["LOG005"]


def test_oversized_line_is_skipped_with_bounded_memory(tmp_path):
    lines = _clean().lines()
    big = orjson.dumps({"type": "todo/write", "seq": 99, "time": 1, "data": {"x": "a" * 5000}})
    lines.insert(4, big)
    p = _write(tmp_path, lines)
    model = replay(LogSource(p, p.parent), max_line=1000)
    found = [(f.rule, f.line) for f in model.findings]
    assert ("LOG008", 5) in found


def test_unknown_event_types_are_valid_in_the_seed_era(tmp_path):
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.add("plugin/custom-thing", {"anything": [1, 2]})
    log.simple_step(1, 1, header_reason="initial")
    log.turn_end(1)
    assert _codes(log.write(tmp_path / "u.jsonl")) == []


def test_placeholders_of_scrubbed_fixtures_are_opaque(tmp_path):
    log = Log()
    header = {
        "config": {"model": "m"},
        "system": "{{system}}",
        "tools": "{{tools}}",
        "messagePrefix": ["{{messagePrefix}}"],
    }
    log.clean_turn(1, header_reason="initial", header=header)
    log.turn_start(2)
    log.user("x")
    log.step_start(2, 1)
    log.delta({"system": {"keepStart": 9, "keepEnd": 3, "insert": ["{{system}}"]}})
    log.step_end(2, 1)
    log.turn_end(2)
    assert _codes(log.write(tmp_path / "p.jsonl")) == []


def test_logs_are_opened_read_only_and_never_changed(tmp_path):
    lines = _clean().lines() + [b'{"type":"turn/sta']
    p = _write(tmp_path, lines, newline_at_end=False)
    before = p.read_bytes()
    os.chmod(p, 0o444)
    stat = p.stat()
    check([tmp_path])
    assert p.read_bytes() == before
    assert p.stat().st_mtime_ns == stat.st_mtime_ns


def test_memory_does_not_keep_chunk_payloads(tmp_path):
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    seqs = [log.chunk(1, 1, "x" * 100) for _ in range(200)]
    log.assistant(1, 1, [{"type": "text", "text": "done"}], seqs)
    log.step_end(1, 1)
    log.turn_end(1)
    p = log.write(tmp_path / "c.jsonl")
    model = replay(LogSource(p, p.parent))
    assert model.chunks == 200
    assert set(model.surface.messages) == {1, 204}  # only surface events are kept


def test_reader_streams_events_with_lines(tmp_path):
    p = _clean(1).write(tmp_path / "s.jsonl")
    events = list(LogReader(p))
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.line for e in events] == [e.seq + 2 for e in events]


def test_zstd_log_reads_like_plain_and_reports_frames(tmp_path):
    from invariants.read.zstdio import write_frames

    lines = _clean().lines()
    plain = _write(tmp_path, lines, name="plain.jsonl")
    z = tmp_path / "z.jsonl.zstd"
    write_frames(z, [lines[0] + b"\n", b"\n".join(lines[1:10]) + b"\n", b"\n".join(lines[10:]) + b"\n"])
    assert _codes(z) == _codes(plain) == []
    data = z.read_bytes()
    torn = tmp_path / "torn.jsonl.zstd"
    torn.write_bytes(data[:-7])
    assert "LOG010" in [c[0] for c in _codes(torn)]
    bad = bytearray(data)
    bad[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "corrupt.jsonl.zstd"
    corrupt.write_bytes(bytes(bad))
    assert "LOG009" in [c[0] for c in _codes(corrupt)]


def test_malformed_chunk_row_is_reported(tmp_path):
    lines = _clean(1).lines()
    lines.insert(
        5,
        orjson.dumps(
            {
                "type": "text-chunks",
                "seq0": 4,
                "time0": 1,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": []},
            }
        ),
    )
    codes = _codes(_write(tmp_path, lines))
    assert ("LOG012", "error", 6, 4) in codes


def test_bad_capture_lines_are_findings(tmp_path):
    log = _clean(1)
    p = log.write(tmp_path / "s1.jsonl")
    (tmp_path / "requests.jsonl").write_bytes(b'[1,2]\nnot json\n{"request": {"messages": "x"}}\n')
    result = check([p])
    assert [(f.rule, f.line) for f in result.findings] == [("LOG013", 1), ("LOG013", 2), ("LOG013", 3)]


@pytest.mark.parametrize("garbage", [b"\x00\x01\x02", b"\xff\xfe{}", b"{" * 100_000, b"\n\n\n"])
def test_garbage_never_raises(tmp_path, garbage):
    p = tmp_path / "g.jsonl"
    p.write_bytes(garbage)
    result = check([p])
    assert result.findings and all(f.file == str(p) for f in result.findings)


def _resumed_and_full(tmp_path, rewrite: Callable[[bytes], bytes] = lambda checkpoint: checkpoint) -> tuple:
    """A 4-turn log checkpointed after its first 12 lines, then written whole: (resumed from the checkpoint
    as ``rewrite`` gives it, replayed from scratch)."""
    from invariants.replay.checkpoint import resume

    lines = _clean(4).lines()
    p = tmp_path / "grow.jsonl"
    p.write_bytes(b"\n".join(lines[:12]) + b"\n")
    src = LogSource(p, p.parent)
    first = replay(src, checkpoint=True)
    assert first.checkpoint is not None
    p.write_bytes(b"\n".join(lines) + b"\n")
    return resume(src, rewrite(first.checkpoint)), replay(src)


def test_resume_over_appended_bytes_equals_a_full_replay(tmp_path):
    resumed, full = _resumed_and_full(tmp_path)
    key = lambda m: [(s.turn, s.step, s.seq, s.header_version, s.chunks, s.surface, s.instance) for s in m.steps]  # noqa: E731
    assert key(resumed) == key(full)
    assert (resumed.turns, resumed.events, resumed.chunks, resumed.compactions) == (
        full.turns,
        full.events,
        full.chunks,
        full.compactions,
    )
    assert [f.rule for f in resumed.findings] == [f.rule for f in full.findings] == []


def test_a_checkpoint_of_another_format_is_replayed_not_resumed(tmp_path):
    """An index outlives the code: a fold state pickled before HeaderVersion.set_by must not resume."""
    import pickle
    import zlib

    from invariants.replay.checkpoint import _load_checkpoint, resume

    log = _clean(2)
    p = tmp_path / "grow.jsonl"
    p.write_bytes(b"\n".join(log.lines()) + b"\n")
    src = LogSource(p, p.parent)
    first = replay(src, checkpoint=True)
    assert first.checkpoint is not None and resume(src, first.checkpoint) is not None
    state = _load_checkpoint(first.checkpoint)
    del state.checkpoint_format
    assert resume(src, zlib.compress(pickle.dumps(state))) is None


@pytest.mark.parametrize("module", [b"pathlib", b"pathlib._local"])
def test_a_checkpoint_resumes_whichever_python_pickled_its_paths(tmp_path, module):
    """Python 3.13 pickles a PosixPath as ``pathlib._local``'s, 3.11 and 3.12 as ``pathlib``'s, and an
    index outlives an interpreter upgrade.  The new name was refused: on 3.13 no checkpoint resumed,
    so every grown log was replayed whole (``index``, ``--watch``, the TUI's follow)."""
    import pickletools
    import zlib

    def renamed(checkpoint: bytes) -> bytes:
        # The module's name swapped for the one another Python writes (a string opcode of its length),
        # then framed again (pickletools.optimize rewrites the frames whose lengths that changed).
        data = zlib.decompress(checkpoint)
        written = next(m for m in (b"\x8c\x07pathlib\x94", b"\x8c\x0epathlib._local\x94") if m in data)
        return zlib.compress(pickletools.optimize(data.replace(written, bytes([0x8C, len(module)]) + module + b"\x94")))

    resumed, full = _resumed_and_full(tmp_path, renamed)
    assert resumed is not None
    assert (resumed.events, resumed.turns) == (full.events, 4)


def test_resumed_header_versions_keep_their_setters(tmp_path):
    resumed, full = _resumed_and_full(tmp_path)
    assert [v.set_by for v in resumed.versions] == [v.set_by for v in full.versions]
    assert full.versions and "system" in full.versions[0].set_by


def test_no_checkpoint_after_a_torn_tail(tmp_path):
    p = _write(tmp_path, _clean().lines() + [b'{"type":"turn/st'], newline_at_end=False)
    assert replay(LogSource(p, p.parent), checkpoint=True).checkpoint is None


def test_no_checkpoint_after_a_skipped_event(tmp_path):
    """A run of events skipped for a seq that does not increase is one finding: a log that ended in one
    left a checkpoint, and resumed from it after another was appended told two (found by
    tests/functional/test_index_differential)."""
    from invariants.replay.checkpoint import resume

    lines = _clean().lines()
    p = _write(tmp_path, lines + [lines[3]])
    src = LogSource(p, p.parent)
    first = replay(src, checkpoint=True)
    assert [f.rule for f in first.findings] == ["LOG003"]
    with p.open("ab") as fh:
        fh.write(lines[4] + b"\n")
    full = replay(src)
    again = (resume(src, first.checkpoint) if first.checkpoint else None) or replay(src)  # as the index reads it
    assert [(f.rule, f.message) for f in again.findings] == [(f.rule, f.message) for f in full.findings]
    assert [f.detail for f in full.findings] == [
        {"skipped_events": 2, "last_skipped_seq": orjson.loads(lines[4])["seq"]}
    ]


@pytest.mark.parametrize(
    "name, line",
    [
        ("float seq", b'{"type":"turn/end","seq":5.0,"time":1,"data":{"turn":1}}'),
        ("boolean seq", b'{"type":"turn/end","seq":true,"time":1,"data":{"turn":1}}'),
        ("seq ahead", b'{"type":"turn/end","seq":6,"time":1,"data":{"turn":1}}'),
        ("unsafe time", b'{"type":"turn/end","seq":5,"time":9007199254740992,"data":{"turn":1}}'),
        ("not ignorable", b'{"type":"turn/end","seq":5,"time":1,"data":{"turn":1},"ignorable":false}'),
        ("extra key", b'{"type":"turn/end","seq":5,"time":1,"data":{"turn":1},"x":1}'),
        ("empty type", b'{"type":"","seq":5,"time":1,"data":{}}'),
        ("no data", b'{"type":"turn/end","seq":5,"time":1}'),
        ("number orjson refuses", b'{"type":"turn/end","seq":5,"time":1,"data":{"n":1e999}}'),
        ("deep", b'{"type":"turn/end","seq":5,"time":1,"data":{"n":' + b"[" * 600 + b"]" * 600 + b"}}"),
    ],
)
def test_a_line_off_the_plain_path_is_left_to_the_general_one_untouched(name, line):
    """The reader's hot path (one valid envelope, the seq due, nothing held) takes only the lines
    ``_line`` would accept as they are; any other goes to ``_line`` with the state unchanged."""
    from invariants.read.line_records import RawLine
    from invariants.read.load import _ReadState

    reader = LogReader(Path("s.jsonl"))
    st = _ReadState(0, 0, 5)
    assert reader._plain_event(RawLine(7, 0, line, True), st) is None, name
    assert (st.expected_seq, st.bad_since_good, st.defects, reader.events) == (5, 0, [], 0)
    plain = b'{"type":"turn/end","seq":5,"time":1,"data":{"turn":1}}'
    assert reader._plain_event(RawLine(7, 0, plain, False), st) is None  # a torn final fragment
    assert reader._plain_event(RawLine(7, 0, plain, True), st) == orjson.loads(plain)
    assert (st.expected_seq, reader.events) == (6, 1)
