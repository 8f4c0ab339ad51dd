"""The index appends any grown log, finds streamed text, and fails cleanly on a missing or empty root."""

from __future__ import annotations

from inspector.cli import main
from inspector.index import build_index, list_sessions
from tests.conftest import corpus_dir
from tests.support.index_db import assert_same, q
from tests.support.logs import Log


def _turns(log: Log, first: int, last: int) -> None:
    for t in range(first, last + 1):
        log.clean_turn(t, f"question {t}", header_reason="initial" if t == 1 else None)


# --------------------------------------------------------------------------- 14. appended, at any length


def test_a_short_log_that_grows_is_appended_not_reread(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    log = Log("short")
    _turns(log, 1, 2)
    path = log.write(root / "short.jsonl")
    db = tmp_path / "index.db"
    assert build_index([root], db, jobs=1).new == 1
    assert len(log.lines()) < 400
    steps_before = q(db, "SELECT id, idx FROM steps ORDER BY idx")
    _turns(log, 3, 4)
    with open(path, "ab") as fh:  # the same file, grown in place
        fh.write(b"".join(line + b"\n" for line in log.lines()[len(path.read_bytes().splitlines()) :]))
    stats = build_index([root], db, jobs=1)
    assert (stats.appended, stats.replaced, stats.new, stats.steps_added) == (1, 0, 0, 2)
    assert q(db, "SELECT index_mode FROM sessions") == [("append",)]
    assert q(db, "SELECT id, idx FROM steps WHERE idx < 2 ORDER BY idx") == steps_before  # kept, not rewritten
    fresh = tmp_path / "fresh.db"
    build_index([root], fresh, jobs=1)
    assert_same(db, fresh)


def test_cli_says_appended_for_a_short_log(tmp_path, capsys):
    root = tmp_path / "root"
    root.mkdir()
    log = Log("short")
    _turns(log, 1, 1)
    path = log.write(root / "short.jsonl")
    db = tmp_path / "index.db"
    assert main(["index", str(root), "--db", str(db)]) == 0
    n = len(log.lines())
    _turns(log, 2, 2)
    with open(path, "ab") as fh:
        fh.write(b"".join(line + b"\n" for line in log.lines()[n:]))
    capsys.readouterr()
    assert main(["index", str(root), "--db", str(db)]) == 0
    assert "(0 new, 1 appended, 0 re-read" in capsys.readouterr().out


def test_a_short_log_whose_era_changes_as_it_grows_is_reread(tmp_path):
    """The era sniff reads a log's head: lines appended to a short log can change the verdict."""
    root = tmp_path / "root"
    root.mkdir()
    log = Log("mixed")
    _turns(log, 1, 1)
    path = log.write(root / "mixed.jsonl")
    db = tmp_path / "index.db"
    build_index([root], db, jobs=1)
    assert q(db, "SELECT profile FROM sessions") == [("seed",)]
    log.add("request/context", {"provider": "p", "model": "m"})  # a HEAD-only event
    with open(path, "ab") as fh:
        fh.write(log.lines()[-1] + b"\n")
    stats = build_index([root], db, jobs=1)
    assert (stats.appended, stats.replaced) == (0, 1)
    fresh = tmp_path / "fresh.db"
    build_index([root], fresh, jobs=1)
    assert q(db, "SELECT profile FROM sessions") == q(fresh, "SELECT profile FROM sessions") == [("head",)]
    assert_same(db, fresh)


# --------------------------------------------------------------------------- 15. streamed text


def test_search_finds_text_the_model_streamed_though_no_message_holds_it(tmp_path):
    """A real late-era log whose only reply streamed, then failed (no assistant/message): the index finds it."""
    folder = corpus_dir("upstream-late-era/llm__llm-retry__transport-recovery/t04")
    db = tmp_path / "index.db"
    build_index([folder], db, jobs=1)
    assert q(db, "SELECT count(*) FROM messages WHERE text LIKE '%discarded clean eof%'") == [(0,)]
    assert [r["uid"] for r in list_sessions(db, search='"discarded clean eof"')] == ["wire-partial-eof"]
    assert q(db, "SELECT step_idx, attempt, seq, text FROM streams") == [(0, 1, 7, "discarded clean eof")]


def test_search_finds_a_phrase_split_across_chunks_of_a_cut_off_stream(tmp_path):
    root = tmp_path / "root"
    log = Log("torn", era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("what happened?")
    log.snapshot()
    for piece in ("The dep", "loyment fa", "iled at step ", "three"):
        log.chunk(1, 1, piece)
    log.write(root / "torn.jsonl")  # the process died mid-stream: no assistant/message, no step/end
    db = tmp_path / "index.db"
    build_index([root], db, jobs=1)
    assert [r["uid"] for r in list_sessions(db, search='"deployment failed at step three"')] == ["torn"]
    assert list_sessions(db, search='"failed at step four"') == []


def test_streams_held_by_a_message_are_not_stored_twice(tmp_path):
    root = tmp_path / "root"
    log = Log("fine", era="late")
    log.turn_start(1)
    log.simple_step(1, 1, "all good", prompt="hi", header_reason="initial", capture=True)
    log.turn_end(1)
    log.write(root / "fine.jsonl")
    db = tmp_path / "index.db"
    build_index([root], db, jobs=1)
    assert q(db, "SELECT count(*) FROM streams") == [(0,)]
    assert [r["uid"] for r in list_sessions(db, search='"all good"')] == ["fine"]


def test_a_cut_off_stream_that_completes_later_leaves_no_stale_stream_row(tmp_path):
    root = tmp_path / "root"
    log = Log("grows", era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("go")
    log.snapshot()
    c = log.chunk(1, 1, "half a rep")
    path = log.write(root / "grows.jsonl")
    db = tmp_path / "index.db"
    build_index([root], db, jobs=1)
    assert q(db, "SELECT text FROM streams") == [("half a rep",)]
    n = len(log.lines())
    log.chunk(1, 1, "ly")
    log.assistant(1, 1, [{"type": "text", "text": "half a reply"}], [c])
    log.step_end(1, 1)
    log.turn_end(1)
    with open(path, "ab") as fh:
        fh.write(b"".join(line + b"\n" for line in log.lines()[n:]))
    assert build_index([root], db, jobs=1).appended == 1
    assert q(db, "SELECT count(*) FROM streams") == [(0,)]
    fresh = tmp_path / "fresh.db"
    build_index([root], fresh, jobs=1)
    assert_same(db, fresh)


# --------------------------------------------------------------------------- 19. nothing to index, nothing created


def test_indexing_a_missing_root_creates_no_database(tmp_path, capsys):
    db = tmp_path / "x.db"
    assert main(["index", str(tmp_path / "missing"), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'missing'}: no such file or directory" in err and "was not created" in err
    assert list(tmp_path.iterdir()) == []


def test_indexing_an_empty_folder_creates_no_database(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    db = tmp_path / "x.db"
    assert main(["index", str(tmp_path / "empty"), "--db", str(db)]) == 0
    assert "no session logs to index" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_an_existing_index_of_a_root_that_emptied_is_still_pruned(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    log = Log("gone")
    _turns(log, 1, 1)
    path = log.write(root / "gone.jsonl")
    db = tmp_path / "index.db"
    build_index([root], db, jobs=1)
    path.unlink()
    stats = build_index([root], db, jobs=1)
    assert stats.written and stats.removed == 1 and q(db, "SELECT count(*) FROM sessions") == [(0,)]
