"""invariants.analysis.events_view: the raw-event reader behind the TUI's Events tab and search.

Pure functions over a file, so they are tested without Textual; one test
proves the library stays importable without it.
"""

from __future__ import annotations

import subprocess
import sys

import orjson

from invariants.analysis.events_view import ChunkRun, LineIndex, RawEvent, collapse_chunks, read_events, search
from invariants.read.chunk_rows import pack_events
from invariants.read.source import LogSource
from tests.support.logs import seq_of, story_header, story_session


def _log(tmp_path, turns: int = 30):
    b = story_session("reader")
    for t in range(turns):
        b.user_turn(f"question number {t}")
        b.streamed_step(
            f"answer number {t} with a few words", header_reason="initial" if t == 0 else None, header=story_header()
        )
        b.end_turn()
    return b, b.write(tmp_path / "reader.jsonl")


def test_reading_a_window_through_the_line_index_equals_reading_the_whole_log(tmp_path):
    b, log = _log(tmp_path)
    index = LineIndex(log)
    assert index.usable and index.lines == len(b.lines())
    for lo, hi in ((0, 5), (100, 180), (b.seq - 10, None)):
        start_line = max(1, lo - 3)  # any physical line at or before the window works
        fast = read_events(log, lo, hi, start_line=start_line, index=index)
        slow = read_events(log, lo, hi)
        assert [e.seq for e in fast] == [e.seq for e in slow]
        assert fast[0].seq == lo and (hi is None or fast[-1].seq == hi)
        assert fast[0].obj == orjson.loads(b.lines()[lo + 1])


def test_line_index_extends_over_appended_lines_and_ignores_a_partial_last_line(tmp_path):
    b, log = _log(tmp_path, turns=3)
    index = LineIndex(log)
    n = index.lines
    b.user_turn("later")
    with open(log, "ab") as fh:
        fh.write(b.lines()[-2] + b"\n" + b.lines()[-1][:10])  # one whole line, one being written
    index.extend()
    assert index.lines == n + 1


def test_chunk_runs_fold_into_one_summary_with_their_text(tmp_path):
    b, log = _log(tmp_path, turns=1)
    items = collapse_chunks(read_events(log, 0))
    runs = [i for i in items if isinstance(i, ChunkRun)]
    assert len(runs) == 1
    run = runs[0]
    assert run.text == "answer number 0 with a few words"
    assert run.kinds["text-delta"] == 7 and run.kinds["block-start"] == 1
    assert [e.seq for e in run.events] == list(range(run.first_seq, run.last_seq + 1))
    assert all(isinstance(i, RawEvent) and i.type != "assistant/chunk" for i in items if not isinstance(i, ChunkRun))


def test_packed_chunk_rows_come_back_as_events(tmp_path):
    b, _ = _log(tmp_path, turns=1)
    events = [orjson.loads(x) for x in b.lines()[1:]]
    packed = pack_events(events)
    assert len(packed) < len(events)
    log = tmp_path / "packed.jsonl"
    log.write_bytes(b"\n".join([b.lines()[0]] + [orjson.dumps(x) for x in packed]) + b"\n")
    got = read_events(log, 0, None, index=LineIndex(log))
    assert [e.obj for e in got] == events
    # the block-end chunk (inside a verbatim line) and the assistant message hold the whole reply
    assert [h.type for h in search(log, "ANSWER number 0 with")] == ["assistant/chunk", "assistant/message"]
    # the text-delta members of a packed row are found one by one
    few = seq_of(b, "assistant/chunk", text=" few")
    assert few in [h.seq for h in search(log, " few") if h.type == "assistant/chunk"]


def test_a_compressed_log_is_read_by_streaming(tmp_path):
    import zstandard

    b, plain = _log(tmp_path, turns=4)
    log = tmp_path / "reader.jsonl.zstd"
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    log.write_bytes(cctx.compress(b.lines()[0] + b"\n") + cctx.compress(b"\n".join(b.lines()[1:]) + b"\n"))
    index = LineIndex(LogSource(log, tmp_path))
    assert not index.usable
    got = read_events(LogSource(log, tmp_path), 20, 30, start_line=15, index=index)
    assert [e.obj for e in got] == [e.obj for e in read_events(plain, 20, 30)]
    assert [h.seq for h in search(log, "question number 2")] == [h.seq for h in search(plain, "question number 2")]


def test_search_is_case_insensitive_and_names_seq_and_type(tmp_path):
    b, log = _log(tmp_path, turns=5)
    hits = search(LogSource(log, tmp_path), "QUESTION NUMBER 3")
    assert [(h.type, "question number 3" in h.snippet) for h in hits] == [("user/message", True)]
    assert read_events(log, hits[0].seq, hits[0].seq)[0].obj["data"]["content"][0]["text"] == "question number 3"
    assert search(log, "no such text anywhere") == []


def test_the_library_never_imports_textual():
    code = (
        "import sys, invariants.analysis.events_view, invariants.gate.pipeline; "
        "sys.exit('textual' in sys.modules or 'rich' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
