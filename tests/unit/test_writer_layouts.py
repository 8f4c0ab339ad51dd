"""A log reads the same, and in runs of chunk lines, whatever JSON writer wrote it.

The harness writes compact JSON with its keys in the order it built them; a log
written by another tool (Python's ``json.dumps`` with its default spacing, or seq
and time before type) is the same log, and its chunk lines must still be read a
run at a time, not line by line at a third of the speed.
"""

from __future__ import annotations

import json

import pytest
import zstandard

from invariants.read.line_records import CHUNK_START, DEFAULT_MAX_LINE, LineRun, RawLine
from invariants.read.lines import _plain_runs, iter_lines
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.logs import streamed_steps


def _seq_first(obj: dict) -> dict:
    head = {k: obj[k] for k in ("seq", "time") if k in obj}
    return {**head, **{k: v for k, v in obj.items() if k not in head}}


def _time_second(obj: dict) -> dict:
    head = {k: obj[k] for k in ("type", "time", "seq") if k in obj}
    return {**head, **{k: v for k, v in obj.items() if k not in head}}


WRITERS = {
    "json.dumps": lambda obj: json.dumps(obj).encode(),
    "json.dumps, indented keys": lambda obj: json.dumps(obj, separators=(" ,  ", "\t:\t")).encode(),
    "seq and time first": lambda obj: json.dumps(_seq_first(obj), separators=(",", ":")).encode(),
    "seq and time first, spaced": lambda obj: json.dumps(_seq_first(obj)).encode(),
    "time before seq": lambda obj: json.dumps(_time_second(obj), separators=(",", ":")).encode(),
}


def _rewrite(lines: list[bytes], writer) -> list[bytes]:
    return [writer(json.loads(line)) for line in lines]


def _write(path, lines: list[bytes]) -> None:
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if path.name.endswith(".zst") else data)


def _folded(path) -> tuple:
    model = replay(LogSource(path, path.parent))
    steps = [(s.seq, s.chunks, s.usage, s.last_seq, s.first_chunk_seq, s.end_seq) for s in model.steps]
    return [(f.code, f.line, f.seq) for f in model.findings], steps, model.events, model.chunks


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.zst"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_another_writers_log_reads_in_runs_and_folds_the_same(tmp_path, writer, suffix):
    lines = streamed_steps().lines()
    harness, other = tmp_path / f"harness{suffix}", tmp_path / f"other{suffix}"
    _write(harness, lines)
    _write(other, _rewrite(lines, WRITERS[writer]))
    chunk_lines = sum(b'"assistant/chunk"' in line for line in lines)
    for path in (harness, other):
        in_runs = sum(len(item.lines) for item in iter_lines(path, runs=True) if isinstance(item, LineRun))
        assert in_runs == chunk_lines, path.name
    assert _folded(other) == _folded(harness)


@pytest.mark.parametrize("block_size", [64, 300, 2048, 1 << 20])
def test_runs_hold_every_chunk_line_when_the_writer_changes_and_wherever_blocks_end(tmp_path, block_size):
    """A block of lines another writer wrote makes the next block compare its start first; the
    harness's own lines after it (a log appended by both) are chunk lines all the same."""
    lines = streamed_steps().lines()
    half = len(lines) // 2
    spaced = _rewrite(lines, WRITERS["json.dumps"])
    chunk_lines = sum(b'"assistant/chunk"' in line for line in lines)
    for content in (spaced[:half] + lines[half:], lines[:half] + spaced[half:], spaced * 3):
        path = tmp_path / "mixed.jsonl"
        _write(path, content)
        items = list(_plain_runs(path, DEFAULT_MAX_LINE, (0, 0), block_size))
        read = [line for item in items for line in (item.lines if isinstance(item, LineRun) else [item.data])]
        assert read == content
        assert all(isinstance(item, RawLine) or all(CHUNK_START(line) for line in item.lines) for item in items)
        runs = sum(len(item.lines) for item in items if isinstance(item, LineRun))
        assert runs == chunk_lines * (3 if len(content) > len(lines) else 1)


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"text-delta","text":"x"}}}',
        b'{"type":"assistant/chunk","data":{"seq":1,"time":2}}',
        b'{"type":"user/message","seq":4,"time":5,"data":{"content":"\\"assistant/chunk\\""}}',
        b'{"seq":4,"time":5,"type":"assistant/message","data":{"type":"assistant/chunk"}}',
        b'{"seq":"4","type":"assistant/chunk","time":5,"data":{}}',
    ],
    ids=["projected", "seq only in data", "quoted in text", "another type", "seq a string"],
)
def test_a_line_that_does_not_start_as_a_chunk_envelope_starts_no_run(line):
    assert CHUNK_START(line) is None
