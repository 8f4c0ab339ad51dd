"""Typed decoding of chunk runs folds a log exactly as the general path does, damaged lines included."""

from __future__ import annotations

import orjson
import pytest

from invariants.read import chunk_typed, load
from invariants.read import lines as read_lines
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.logs import USAGE, streamed_steps


def _chunk_lines(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b'{"type":"assistant/chunk"')]


def _sub(old: bytes, new: bytes):
    def mutate(line: bytes) -> bytes:
        assert old in line
        return line.replace(old, new, 1)

    return mutate


MUTATIONS = {
    "plain": lambda line: line,
    "invalid utf-8": _sub(b'" w', b'"\xff w'),
    "non-ascii text": _sub(b'" w', "\u00e9\u2603 w".encode().join([b'"', b""])),
    "number orjson refuses": _sub(b'"index":0', b'"index":1e999'),
    "huge integer": _sub(b'"index":0', b'"index":1' + b"0" * 30),
    "extra envelope key": _sub(b'"data":', b'"ignorable":true,"data":'),
    "extra data key": _sub(b'"chunk":', b'"x":1,"chunk":'),
    "missing step": _sub(b'"step":1,', b""),
    "boolean seq": lambda line: line.replace(b'"seq":', b'"seq":true,"x":', 1),
    "float time": _sub(b',"data"', b'.0,"data"'),
    "duplicate seq": _sub(b'"time"', b'"seq":99,"time"'),
    "duplicate type": _sub(b',"seq"', b',"type":"user/message","seq"'),
    "duplicate type after seq": _sub(b',"time"', b',"type":"user/message","time"'),
    "two values on a line": lambda line: line + b" " + line,
    "other turn": _sub(b'"turn":1', b'"turn":2'),
    "other step": _sub(b'"step":1', b'"step":2'),
    "turn as string": _sub(b'"turn":1', b'"turn":"1"'),
    "chunk is an array": lambda line: _sub(b"}}}", b"}]}}")(_sub(b'"chunk":{', b'"chunk":[{')(line)),
    "syntax error": lambda line: line[:-2],
    "NaN": _sub(b'"index":0', b'"index":NaN'),
    "lone surrogate escape": _sub(b'" w', b'"\\ud800 w'),
    "control character": _sub(b'" w', b'"\x01 w'),
    "deep nesting": _sub(b'"index":0', b'"index":' + b"[" * 600 + b"]" * 600),
    "seq gap": lambda line: line.replace(b'"seq":', b'"seq":1', 1),
    "unsafe time": _sub(b'"time":', b'"time":9007199254740993000'),
    "usage not an object": _sub(b'"type":"text-delta","index":0,"text":" w', b'"type":"usage","usage":3,"text":" w'),
    "usage with a huge count": _sub(b'"inputTokens":10', b'"inputTokens":1' + b"0" * 30),
    "unknown chunk type": _sub(b'"text-delta"', b'"text-deltx"'),
    "chunk type null": _sub(b'"type":"text-delta"', b'"type":null'),
    "chunk type an object": _sub(b'"type":"text-delta"', b'"type":{"a":1}'),
    "no chunk type": _sub(b'"type":"text-delta",', b""),
    "bad block type": _sub(b'"block":{"type":"text"', b'"block":{"type":"txt"'),
    "block not an object": _sub(b'"block":{"type":"text","text":"w"}', b'"block":7'),
    "bad finish reason": _sub(b'"kind":"stop"', b'"kind":"halt"'),
    "empty finish reason": _sub(b'"kind":"stop"', b'"kind":""'),
    "finish reason kind a number": _sub(b'"kind":"stop"', b'"kind":7'),
    "finish reason not an object": _sub(b'"reason":{"kind":"stop"}', b'"reason":"stop"'),
    "finish without a reason": _sub(b',"reason":{"kind":"stop"}', b""),
    "bad block-start type": _sub(b'"blockType":"text"', b'"blockType":"txt"'),
    "block-start type a number": _sub(b'"blockType":"text"', b'"blockType":1'),
    "block-start without a type": _sub(b',"blockType":"text"', b""),
    "block without a type": _sub(b'"block":{"type":"text",', b'"block":{'),
    "block type an array": _sub(b'"block":{"type":"text"', b'"block":{"type":["text"]'),
    "block-end without a block": _sub(b',"block":{"type":"text","text":"w"}', b""),
    "usage refused by orjson": _sub(b'"inputTokens":10', b'"inputTokens":1e999'),
    # The same JSON written another way: the step's usage is read all the same.
    "usage type spaced": _sub(b'"chunk":{"type":"usage"', b'"chunk":{"type": "usage"'),
    "usage type escaped": _sub(b'"chunk":{"type":"usage"', b'"chunk":{"type":"\\u0075sage"'),
}


def _fold(tmp_path, lines: list[bytes], typed_after: int, monkeypatch) -> tuple:
    monkeypatch.setattr(load, "TYPED_AFTER", typed_after)
    path = tmp_path / f"s-{typed_after}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    model = replay(LogSource(path, tmp_path))
    steps = [
        (s.seq, s.chunks, s.usage, s.last_seq, s.last_line, s.first_chunk_seq, s.header_version, s.end_seq)
        for s in model.steps
    ]
    findings = [{**f.to_json(), "file": None} for f in model.findings]
    return findings, steps, model.events, model.chunks


# first chunk of a step, second, inside, its usage chunk, after it, the block start, the block end, the finish (last)
POSITIONS = [0, 1, 15, 30, 31, -3, -2, -1]


def _target(lines: list[bytes], position: int) -> int:
    chunk_at = _chunk_lines(lines)
    return chunk_at[: len(chunk_at) // 2][position]


def _applies(name: str, position: int) -> bool:
    lines = streamed_steps().lines()
    try:
        MUTATIONS[name](lines[_target(lines, position)])
    except AssertionError:  # the line has nothing this mutation changes
        return False
    return True


@pytest.mark.parametrize("name, position", [(n, p) for n in sorted(MUTATIONS) for p in POSITIONS if _applies(n, p)])
def test_typed_runs_fold_like_the_general_path(tmp_path, monkeypatch, name, position):
    lines = streamed_steps().lines()
    target = _target(lines, position)
    lines[target] = MUTATIONS[name](lines[target])
    typed = _fold(tmp_path, lines, 0, monkeypatch)
    general = _fold(tmp_path, lines, 10**9, monkeypatch)
    assert typed == general
    monkeypatch.setattr(read_lines, "CHUNK_PREFIX", b"\0")  # no runs: every line read alone
    monkeypatch.setattr(read_lines, "CHUNK_START", lambda line: None)
    assert _fold(tmp_path, lines, 0, monkeypatch) == general


def test_plain_runs_are_decoded_typed(tmp_path, monkeypatch):
    calls = []
    real = chunk_typed.decode_run
    monkeypatch.setattr(chunk_typed, "decode_run", lambda *a: calls.append(real(*a)) or calls[-1])
    findings, steps, events, chunks = _fold(tmp_path, streamed_steps().lines(), 0, monkeypatch)
    assert calls and all(c is not None for c in calls)
    assert [s[2] for s in steps] == [USAGE, USAGE]  # each step's usage chunk, found without parsing the run
    assert chunks == 78 and findings == []


def test_damaged_runs_are_left_to_the_general_path():
    lines = streamed_steps().lines()
    run = [lines[i] for i in _chunk_lines(lines)[:10]]
    seq = orjson.loads(run[0])["seq"]
    assert chunk_typed.decode_run(b"\n".join(run), seq, len(run)) is not None
    assert chunk_typed.decode_run(memoryview(b"\n".join(run)), seq, len(run)) is not None
    names = ("invalid utf-8", "extra envelope key", "syntax error", "other turn", "other step", "seq gap")
    for name in (*names, "duplicate type after seq", "two values on a line", "unknown chunk type"):
        damaged = [MUTATIONS[name](run[3]) if i == 3 else line for i, line in enumerate(run)]
        assert chunk_typed.decode_run(b"\n".join(damaged), seq, len(run)) is None, name
    for bad in (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"):  # stray, cut short, surrogate, > U+10FFFF
        damaged = [
            line.replace(b'" w', b'"\xc3\xa9' + bad + b" w", 1) if i == 3 else line for i, line in enumerate(run)
        ]
        assert chunk_typed.decode_run(b"\n".join(damaged), seq, len(run)) is None, bad
    text = [MUTATIONS["non-ascii text"](line) for line in run]  # UTF-8 text in every delta: still the plain case
    assert text != run and chunk_typed.decode_run(b"\n".join(text), seq, len(run)) is not None


def test_typed_runs_check_the_values_of_chunks_that_are_not_deltas(tmp_path, monkeypatch):
    lines = streamed_steps().lines()
    finish = _chunk_lines(lines)[len(_chunk_lines(lines)) // 2 - 1]
    lines[finish] = MUTATIONS["bad finish reason"](lines[finish])
    findings = _fold(tmp_path, lines, 0, monkeypatch)[0]
    assert [(f["rule"], f["seq"]) for f in findings] == [("EVT013", orjson.loads(lines[finish])["seq"])]


def test_chunks_that_are_not_deltas_are_parsed_only_when_their_typed_fields_fail(tmp_path, monkeypatch):
    parsed: list[int] = []
    real = load.ChunkRun.events
    monkeypatch.setattr(load.ChunkRun, "events", lambda run, at: parsed.extend(at) or real(run, at))
    assert _fold(tmp_path, streamed_steps().lines(), 0, monkeypatch)[0] == []
    assert parsed == []  # block start, block end, finish and usage cleared by their typed fields
    lines = streamed_steps().lines()
    start = [i for i in _chunk_lines(lines) if b'"block-start"' in lines[i]][0]
    lines[start] = MUTATIONS["bad block-start type"](lines[start])
    findings = _fold(tmp_path, lines, 0, monkeypatch)[0]
    assert [f["rule"] for f in findings] == ["EVT013"] and len(parsed) == 1


@pytest.mark.parametrize(
    "line_bytes, seen_before, typed",
    [(0, 0, True), (10**9, 0, False), (10**9, load.TYPED_AFTER, True)],
    ids=["large", "small-first", "small-after-others"],
)
def test_a_log_large_enough_or_read_after_enough_chunks_is_decoded_typed(
    tmp_path, monkeypatch, line_bytes, seen_before, typed
):
    """A small log is decoded typed once the process has read ``TYPED_AFTER`` chunk lines in runs
    (msgspec's import is paid by then): a root of many small sessions gets the typed decoder too."""
    monkeypatch.setattr(load, "TYPED_LINE_BYTES", line_bytes)  # the size that counts as large: 8192 lines this long
    monkeypatch.setattr(load._AllReaders, "run_lines", seen_before)
    calls = []
    real = chunk_typed.decode_run
    monkeypatch.setattr(chunk_typed, "decode_run", lambda *a: calls.append(real(*a)) or calls[-1])
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(streamed_steps().lines()) + b"\n")
    model = replay(LogSource(path, tmp_path))
    assert model.findings == [] and model.chunks == 78
    assert bool(calls) is typed


def test_the_typed_chunk_types_are_the_ones_the_value_checks_know():
    from typing import get_args

    from invariants.rules.values import CHUNK_TYPES

    assert set(get_args(chunk_typed.ChunkType)) == CHUNK_TYPES
