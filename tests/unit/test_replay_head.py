"""replay(head_bytes=...): the model of a log's first bytes (the TUI's first screen of a huge log)."""

from __future__ import annotations

from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.logs import Log, seq_of, story_header


def test_a_head_replay_folds_only_the_events_that_start_in_the_first_bytes(tmp_path):
    log = Log(cwd="/w")
    for t in range(3):
        log.user_turn(f"question {t}")
        log.streamed_step(f"answer {t}", header_reason="initial" if t == 0 else None, header=story_header())
        log.end_turn()
    path = log.write(tmp_path / "s.jsonl")
    whole = replay(LogSource(path, tmp_path))
    lines = path.read_bytes().splitlines(keepends=True)
    second = seq_of(log, "turn/start", turn=2)
    cut = sum(len(line) for line in lines[: second + 1])  # the session line and the events before turn 2
    head = replay(LogSource(path, tmp_path), head_bytes=cut)
    assert [(s.turn, s.step) for s in head.steps] == [(1, 1)]
    assert head.events == second and whole.events == len(log.events)
    assert [(s.turn, s.step, s.seq) for s in whole.steps][:1] == [(s.turn, s.step, s.seq) for s in head.steps]
    one_more = replay(LogSource(path, tmp_path), head_bytes=cut + 1)  # the turn/start of turn 2 starts inside
    assert one_more.events == second + 1
