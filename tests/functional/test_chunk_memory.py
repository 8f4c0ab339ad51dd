"""What a check holds does not grow with the number of chunks a step streams.

The era sniff reads a few hundred lines ahead before it folds them; a packed
chunk row is one line of many events, so what it held once grew with the
chunks per row (and everything read ahead stayed alive to the end of the run).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from invariants import check
from invariants.read.chunk_run import ChunkRun
from invariants.read.load import LogReader
from invariants.simulate.convert import convert_log
from tests.support.logs import Log

STEPS = 150
ANSWER = "".join(f" w{i % 10}" for i in range(800))  # the same answer however it is streamed


def _streamed(path: Path, chunks: int) -> Path:
    """``STEPS`` one-step turns, each answering ``ANSWER`` in ``chunks`` text deltas."""
    size = len(ANSWER) // chunks
    log = Log()
    for turn in range(1, STEPS + 1):
        log.turn_start(turn)
        log.user(f"question {turn}")
        log.step_start(turn, 1)
        if turn == 1:
            log.snapshot()
        for i in range(chunks):
            log.chunk(turn, 1, ANSWER[i * size : (i + 1) * size])
        # No sourceEventSeqs: a message naming every chunk grows with them, and what it names is kept.
        log.assistant(turn, 1, [{"type": "text", "text": ANSWER}])
        log.step_end(turn, 1)
        log.turn_end(turn)
    return log.write(path)


def _peak(log: Path) -> tuple[int, int]:
    """(peak traced bytes of check(), events the session has)."""
    tracemalloc.start()
    try:
        result = check([log])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [f.rule for f in result.findings if f.severity == "error"] == []
    (session,) = result.sessions
    return peak, session.events


def test_peak_memory_is_flat_in_chunks_per_packed_row(tmp_path):
    peaks = {}
    for chunks in (80, 800):
        plain = _streamed(tmp_path / f"plain-{chunks}" / "s.jsonl", chunks)
        late = convert_log(plain, tmp_path / f"late-{chunks}" / "s.jsonl.zstd")
        peaks[chunks], events = _peak(late)
        assert events == STEPS * (chunks + 6) + 1  # 6 events around each answer, and the snapshot
    assert peaks[800] < 1.2 * peaks[80], {k: v >> 10 for k, v in peaks.items()}


def test_compacted_runs_give_the_same_events(tmp_path):
    plain = _streamed(tmp_path / "plain" / "s.jsonl", 20)
    late = convert_log(plain, tmp_path / "late" / "s.jsonl.zstd")
    for path in (plain, late):
        runs = [item for item, _, _ in LogReader(path).iter_objects() if type(item) is ChunkRun]
        assert runs
        for run in runs:
            events, n = [dict(e) for e in run.objs], len(run)
            run.compact()
            assert run._objs is None and len(run) == n
            assert run.objs == events and [run.seq(i) for i in range(n)] == [e["seq"] for e in events]
