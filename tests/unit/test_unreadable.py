"""No silent pass: a log whose body yields no event, or that is mostly unreadable, is one LOG019 error
naming the cause; a run of damaged lines is one finding with its span, bounded however long it is
(issues 29, 33 item 6, 34 item 6)."""

from __future__ import annotations

import random

import orjson

from invariants import check
from invariants.read.load import MAX_PENDING, LogReader
from tests.conftest import SAMPLES

CLEAN = SAMPLES / "clean-multi-turn.jsonl"
HEAD = {"type": "session", "version": 0, "id": "u1", "createdAt": 1, "cwd": "/w"}


def _errors(result) -> list[str]:
    return [f.rule for f in result.findings if f.severity == "error"]


def test_random_bytes_are_one_error_naming_binary_data(tmp_path):
    rnd = random.Random(29)
    lines = [bytes(rnd.choice([b for b in range(256) if b != 10]) for _ in range(120)) for _ in range(19)]
    path = tmp_path / "random.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = check(path)
    assert [(f.rule, f.severity) for f in result.findings] == [("LOG019", "error")]
    f = result.findings[0]
    assert "binary data" in f.message and "19 of 19 lines unreadable (lines 1..19)" in f.message
    assert f.detail["unreadable_lines"] == 19


def test_two_mb_of_junk_after_a_valid_log_is_one_finding(tmp_path):
    path = tmp_path / "junk.jsonl"
    path.write_bytes(CLEAN.read_bytes() + b"x\n" * 1_000_000)
    result = check(path)
    integrity = [f for f in result.findings if f.category == "log-integrity"]
    assert [f.rule for f in integrity] == ["LOG019"], integrity[:5]
    assert "1000000 of" in integrity[0].message and "lines that are not JSON events" in integrity[0].message


def test_a_short_junk_tail_is_one_torn_tail_finding_with_its_span(tmp_path):
    clean = CLEAN.read_bytes()
    path = tmp_path / "tail.jsonl"
    path.write_bytes(clean + b"x\n" * 5)
    reader = LogReader(path)
    list(reader)
    (torn,) = reader.findings
    n = clean.count(b"\n")
    assert torn.rule == "LOG004" and torn.line == n + 1
    assert f"5 damaged lines, lines {n + 1}..{n + 5}" in torn.message
    assert torn.detail == {"damaged_lines": 5, "last_line": n + 5}


def test_damage_spread_through_a_log_stays_bounded(tmp_path):
    good = [orjson.dumps(HEAD)]
    for i in range(2000):
        good.append(orjson.dumps({"type": "x/y", "seq": i, "time": i, "data": {}}))
        good.append(b"not json")
    path = tmp_path / "spread.jsonl"
    path.write_bytes(b"\n".join(good) + b"\n")
    reader = LogReader(path)
    list(reader)
    assert len(reader.findings) <= MAX_PENDING  # half its lines: not mostly unreadable, but bounded
    assert sum(f.detail.get("damaged_lines", 1) for f in reader.findings) == 2000


def test_a_body_without_events_fails_the_gate(tmp_path):
    path = tmp_path / "foreign.jsonl"
    rows = [HEAD, {"kind": "message", "text": "hi"}, {"kind": "message", "text": "there"}, [1, 2]]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    result = check(path)
    assert _errors(result) == ["LOG019"]
    f = result.findings[0]
    assert "no event read" in f.message and "foreign format" in f.message and "(lines 2..4)" in f.message


def test_a_foreign_version_with_an_unreadable_body_is_one_finding_naming_the_version(tmp_path):
    path = tmp_path / "v7.jsonl"
    path.write_bytes(orjson.dumps({**HEAD, "version": 7}) + b"\n" + b"\x00\x01garbage\n" * 0 + b"?? \n" * 3)
    result = check(path)
    assert [f.rule for f in result.findings] == ["LOG019"]
    assert "format version 7, which the harness never wrote" in result.findings[0].message


def test_a_foreign_version_with_readable_events_keeps_its_header_finding(tmp_path):
    lines = CLEAN.read_bytes().splitlines()
    head = orjson.loads(lines[0])
    path = tmp_path / "v3.jsonl"
    path.write_bytes(b"\n".join([orjson.dumps({**head, "version": 3}), *lines[1:]]) + b"\n")
    result = check(path)
    assert "LOG019" not in [f.rule for f in result.findings]
    assert any(f.rule == "LOG005" and "version 3" in f.message for f in result.findings)


def test_a_header_only_log_and_a_torn_first_event_are_not_unreadable(tmp_path):
    only = tmp_path / "only.jsonl"
    only.write_bytes(orjson.dumps(HEAD) + b"\n")
    assert "LOG019" not in [f.rule for f in check(only).findings]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(orjson.dumps(HEAD) + b'\n{"type":"turn/start","seq":0,"ti')
    rules = [f.rule for f in check(torn).findings]
    assert "LOG019" not in rules and "LOG004" in rules
