"""Issue 34, items 4 and 5: nothing passes the gate unseen.  A recorded request that routes to no log is
REQ004 whether its capture was found beside the log or named with --captures; a session store that cannot
be read is a problem (exit 2) whether it was named or found inside a folder."""

from __future__ import annotations

import shutil

from inspector.cli import main
from invariants import CheckOptions, check
from invariants.read.discover import discover
from invariants.read.sqlite_backend import write_database
from tests.conftest import SAMPLES
from tests.support.logs import Log, one_turn

LOG = SAMPLES / "clean-multi-turn.jsonl"
CAPTURE = SAMPLES / "clean-multi-turn.requests.jsonl"


def _foreign_capture(folder, name: str) -> None:
    """The sample's capture with every line naming a session that no log in the folder is."""
    text = CAPTURE.read_text().replace('"sessionId":"87fee3f4-4261-4824-93df-2febc44debec"', '"sessionId":"other"')
    (folder / name).write_text(text)


def _req004(result) -> int:
    return sum(1 for f in result.findings if f.rule == "REQ004")


def test_requests_that_no_log_explains_are_req004_wherever_the_capture_came_from(tmp_path):
    shutil.copy(LOG, tmp_path / "clean-multi-turn.jsonl")
    _foreign_capture(tmp_path, "clean-multi-turn.requests.jsonl")  # sessionFile still names the checked log
    n = sum(1 for _ in CAPTURE.open())
    explicit = check(
        [tmp_path / "clean-multi-turn.jsonl"], CheckOptions(captures=[tmp_path / "clean-multi-turn.requests.jsonl"])
    )
    beside = check([tmp_path])
    named = check([tmp_path / "clean-multi-turn.jsonl"])
    assert _req004(explicit) == _req004(beside) == _req004(named) == n
    assert all(r.status == "unexplained" for r in beside.requests) and len(beside.requests) == n


def test_requests_of_a_log_beside_that_this_run_does_not_check_are_left_to_it(tmp_path):
    shutil.copy(LOG, tmp_path / "clean-multi-turn.jsonl")
    shutil.copy(SAMPLES / "prefix-unstable.jsonl", tmp_path / "prefix-unstable.jsonl")
    shutil.copy(CAPTURE, tmp_path / "requests.jsonl")  # the clean log's requests
    result = check([tmp_path / "prefix-unstable.jsonl"])
    assert _req004(result) == 0 and result.requests == []


def _store(tmp_path):
    db = tmp_path / "store.sqlite"
    log = one_turn(Log("s", era="late"))
    write_database(db, [(log.header, log.events)])
    return db


def test_a_damaged_store_inside_a_folder_is_a_problem(tmp_path, capsys):
    folder = tmp_path / "root"
    folder.mkdir()
    shutil.copy(LOG, folder / "clean.jsonl")
    db = _store(folder)
    data = bytearray(db.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)  # every page garbled, the file header kept
    db.write_bytes(bytes(data))
    sources, problems = discover([folder])
    assert [s.path.name for s in sources] == ["clean.jsonl"]
    assert len(problems) == 1 and "store.sqlite" in problems[0]
    assert main(["check", str(folder), "--no-cache"]) == 2
    assert "store.sqlite" in capsys.readouterr().err


def test_a_foreign_file_named_like_a_store_is_skipped_with_a_note(tmp_path, capsys):
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 10)
    shutil.copy(LOG, tmp_path / "clean.jsonl")
    notes: list[str] = []
    sources, problems = discover([tmp_path], notes)
    assert problems == [] and len(sources) == 1
    assert len(notes) == 1 and "junk.db" in notes[0] and "skipped" in notes[0]
    assert main(["check", str(tmp_path), "--no-cache"]) == 0
    assert "inspector: note:" in capsys.readouterr().err
