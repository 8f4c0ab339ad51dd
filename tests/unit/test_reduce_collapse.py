"""Chunk runs collapse into one chunk carrying the run's joined text; other chunks and blocks stay apart."""

from __future__ import annotations

from invariants.reduce.collapse import collapse, runs
from invariants.reduce.logfile import LogData
from invariants.reduce.subject import Subject


def _chunk(seq: int, chunk: dict, step: int = 1) -> dict:
    return {"type": "assistant/chunk", "seq": seq, "time": 0, "data": {"turn": 1, "step": step, "chunk": chunk}}


def _subject() -> Subject:
    events = [
        _chunk(0, {"type": "block-start", "index": 0, "blockType": "text"}),
        _chunk(1, {"type": "text-delta", "index": 0, "text": "Hel"}),
        _chunk(2, {"type": "text-delta", "index": 0, "text": "lo, "}),
        _chunk(3, {"type": "text-delta", "index": 0, "text": "world"}),
        _chunk(4, {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "f", "argumentsDelta": '{"a"'}),
        _chunk(5, {"type": "tool-call-delta", "index": 1, "id": "c1", "argumentsDelta": ":1}"}),
        _chunk(6, {"type": "text-delta", "index": 0, "text": "again"}, step=2),
    ]
    return Subject(LogData("s.jsonl", {"type": "session", "version": 0, "id": "s"}, events))


def test_runs_are_consecutive_deltas_of_one_block():
    assert runs(_subject(), list(range(7))) == [[1, 2, 3], [4, 5]]
    assert runs(_subject(), [1, 3, 4]) == [[1, 3]]  # consecutive among the kept events


def test_a_run_collapses_into_its_first_chunk_with_the_joined_text():
    subject = _subject()
    collapsed, dropped = collapse(subject, runs(subject, list(range(7))))
    assert dropped == {2, 3, 5}
    assert collapsed.log.events[1]["data"]["chunk"] == {"type": "text-delta", "index": 0, "text": "Hello, world"}
    assert collapsed.log.events[4]["data"]["chunk"]["argumentsDelta"] == '{"a":1}'
    assert collapsed.log.events[4]["data"]["chunk"]["name"] == "f"
    assert subject.log.events[1]["data"]["chunk"]["text"] == "Hel"  # the input is not changed
