"""Follow (the TUI's ``--follow``): a grown plain log is resumed, anything else is read in full.

Both paths agree with check().
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from invariants import CheckOptions, check
from invariants.gate.follow import Follow
from tests.support.logs import Log, story_steps, write_capture


def _grow(b: Log, log: Path) -> None:
    before = len(b.lines())
    b.user_turn("more")
    b.streamed_step("more reply")
    b.end_turn()
    with open(log, "ab") as fh:
        fh.write(b"\n".join(b.lines()[before:]) + b"\n")


def _same(result, path: Path) -> None:
    ref = check([path], keep_models=True)

    def key(r):
        return [(f.rule, f.severity, f.file, f.seq, f.line, f.turn, f.step, f.path, f.message) for f in r.findings]

    assert key(result) == key(ref)
    m, n = result.models[0], ref.models[0]
    assert (m.events, m.lines, m.bytes, m.turns, len(m.steps)) == (n.events, n.lines, n.bytes, n.turns, len(n.steps))
    assert [(s.seq, s.status, s.requests) for s in m.steps] == [(s.seq, s.status, s.requests) for s in n.steps]


def test_growth_resumes_and_replacement_or_shrinking_does_not(tmp_path):
    b = story_steps("follow-unit", 60)
    log = b.write(tmp_path / "f.jsonl")
    write_capture(
        log, tmp_path / "f.requests.jsonl", {2: lambda r: r["messages"].append({"role": "user", "content": "x"})}
    )
    fc = Follow(log, CheckOptions())
    _same(fc.check(), log)
    assert fc.last_mode == "full"
    _grow(b, log)
    _same(fc.check(), log)
    assert fc.last_mode == "resume"
    _grow(b, log)
    _same(fc.check(), log)
    assert fc.last_mode == "resume"  # a resumed model carries a checkpoint too
    # replaced by a new file (another inode): full
    tmp = tmp_path / "f.new"
    tmp.write_bytes(log.read_bytes() + b"\n".join(story_steps("follow-unit", 3).lines()[1:4]) + b"\n")
    os.replace(tmp, log)
    _same(fc.check(), log)
    assert fc.last_mode == "full"
    # shrunk: full
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")
    _same(fc.check(), log)
    assert fc.last_mode == "full"


def test_bytes_changed_before_the_old_end_mean_a_full_check(tmp_path):
    b = story_steps("follow-unit", 60)
    log = b.write(tmp_path / "g.jsonl")
    fc = Follow(log, CheckOptions())
    fc.check()
    data = bytearray(log.read_bytes())
    i = data.rindex(b"reply 58")
    data[i : i + 8] = b"REPLY 58"
    with open(log, "r+b") as fh:  # same inode, rewritten in place, then grown
        fh.write(bytes(data))
    _grow(b, log)
    _same(fc.check(), log)
    assert fc.last_mode == "full"


def test_a_short_log_resumes_too_and_equals_a_full_check(tmp_path):
    # resume() re-judges the era over the appended lines and refuses a checkpoint whose verdict changed,
    # so a log still inside the era sniff's window resumes like any other.
    b = story_steps("follow-unit", 2)
    log = b.write(tmp_path / "s.jsonl")
    fc = Follow(log, CheckOptions())
    fc.check()
    _grow(b, log)
    _same(fc.check(), log)
    assert fc.last_mode == "resume"


def test_a_database_session_goes_through_a_full_check(tmp_path):
    from invariants.read.sqlite_backend import write_database

    b = story_steps("follow-unit", 2)
    lines = [orjson.loads(x) for x in b.lines()]
    db = tmp_path / "s.db"
    write_database(db, [(lines[0], lines[1:])])
    fc = Follow(db, CheckOptions())
    result = fc.check()
    assert fc.last_mode == "full" and result.sessions[0].id == "follow-unit"


def test_a_round_parses_only_the_capture_lines_its_log_does_not_explain(tmp_path, monkeypatch):
    import invariants.read.capture as capture

    b = story_steps("follow-unit", 60)
    log = b.write(tmp_path / "c.jsonl")
    write_capture(
        log, tmp_path / "c.requests.jsonl", {4: lambda r: r["messages"].append({"role": "user", "content": "x"})}
    )
    parsed: list[bytes] = []
    real = capture.parse_json
    monkeypatch.setattr(capture, "parse_json", lambda data: parsed.append(data) or real(data))
    fc = Follow(log, CheckOptions())
    fc.check()
    assert len(parsed) == 1  # the one line that differs; the others are proved by their bytes
    _grow(b, log)
    parsed.clear()
    result = fc.check()
    assert fc.last_mode == "resume" and len(parsed) == 1  # read again, and again only that line parsed
    _same(result, log)
    (tmp_path / "preview").mkdir()
    write_capture(
        b.write(tmp_path / "preview" / "c.jsonl"), tmp_path / "c.requests.jsonl", {4: lambda r: r.pop("tools")}
    )
    _grow(b, log)
    parsed.clear()
    result = fc.check()
    assert fc.last_mode == "resume" and len(parsed) == 1  # a capture rewritten: its new differing line
    _same(result, log)
