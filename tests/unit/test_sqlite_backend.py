"""The harness's SQLite persistence backend as an input: both schemas, read-only, row rules."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import orjson
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from invariants import check
from invariants.read.discover import discover
from invariants.read.sqlite_backend import (
    APPLICATION_ID,
    HEAD_DDL,
    HEAD_SCHEMA,
    SEED_DDL,
    SEED_SCHEMA,
    RowError,
    decode_source_seqs,
    encode_source_seqs,
    write_database,
)
from tests.support.logs import Log, one_turn


def _seed_log() -> Log:
    log = Log("seed-1")
    log.turn_start(1)
    log.user("hi")
    log.simple_step(1, 1, header_reason="initial")
    log.turn_end(1)
    return log


def _late_log(session_id: str = "late-1", long: bool = False) -> Log:
    log = Log(session_id, era="late", cwd="/home/dev/p")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("x" * 6000 if long else "hi")
    log.snapshot()
    log.request(1, 1)
    seqs = [log.chunk(1, 1, t) for t in ("a", "b", "c", "d")]
    c = log.tool_call(1, 1, "c1")
    log.events.pop()  # keep the call out of the stream: the reply is plain text
    log.assistant(1, 1, [{"type": "text", "text": "abcd"}], seqs)
    log.step_end(1, 1)
    log.turn_end(1)
    del c
    return log


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_exact_upstream_ddl_is_what_we_build(tmp_path):
    path = tmp_path / "s.db"
    write_database(path, [(_late_log().header, _late_log().events)])
    con = sqlite3.connect(path)
    ddl = [r[0] for r in con.execute("SELECT sql FROM sqlite_master WHERE type='table' ORDER BY rowid")]
    assert " ".join(" ".join(ddl).split()) == " ".join(HEAD_DDL.replace(";", "").split())
    assert con.execute("PRAGMA user_version").fetchone()[0] == HEAD_SCHEMA
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_head_schema_reads_like_the_jsonl_log(tmp_path):
    log = _late_log(long=True)
    (tmp_path / "jsonl").mkdir()
    log.write(tmp_path / "jsonl" / "late-1.jsonl")
    log.write_requests(tmp_path / "jsonl" / "requests.jsonl")
    db = tmp_path / "db" / "sessions.sqlite"
    db.parent.mkdir()
    write_database(db, [(log.header, log.events)])
    log.write_requests(tmp_path / "db" / "requests.jsonl")
    con = sqlite3.connect(db)
    kinds = {(r[0], type(r[1]).__name__) for r in con.execute("SELECT ignorable, data FROM events")}
    assert (0, "str") in kinds  # a packed text-chunks row
    assert (None, "bytes") in kinds  # data >= 4 KiB, zstd-compressed
    assert (
        con.execute("SELECT typeof(source_event_seqs) FROM events WHERE type='assistant/message'").fetchone()[0]
        == "blob"
    )
    con.close()
    before = _digest(db)
    a, b = check([tmp_path / "jsonl"]), check([db], keep_models=True)
    assert b.sessions[0].file == f"{db}#late-1"
    assert b.models[0].profile.name == "head" and b.models[0].chunk_rows == 1
    assert b.sessions[0].events == a.sessions[0].events
    assert [(f.rule, f.seq) for f in a.findings] == [(f.rule, f.seq) for f in b.findings] == []
    assert [r.status for r in b.requests] == ["ok"]
    assert _digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["requests.jsonl", "sessions.sqlite"]  # no journal, no -wal


_CUT_OFF_APPEND = """
import os, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA journal_mode=DELETE")  # the harness's journalMode 'delete' (also 'truncate', 'persist')
con.execute("PRAGMA cache_size=1")  # the uncommitted pages reach the file before the end
con.execute("BEGIN")
con.execute("UPDATE events SET data = '{\\"turn\\": 99}' WHERE type = 'turn/start'")  # a rewrite, never committed
sid, last = con.execute("SELECT session_id, max(seq) FROM events").fetchone()
for k in range(1, 400):
    row = (sid, last + k, '{"turn": 99}' + " " * 400)
    con.execute("INSERT INTO events(session_id, seq, type, time, data) VALUES (?, ?, 'turn/start', 1, ?)", row)
os._exit(0)  # neither committed nor rolled back: the journal is left hot
"""


def test_a_write_cut_off_in_rollback_journal_mode_reads_as_its_committed_rows(tmp_path):
    """The harness rolls a hot journal back when it next opens the store; a read-only reader cannot, and
    the file read without its journal holds rows never committed.  They are read from a rolled-back
    copy; the database and its journal are left as they were."""
    import subprocess
    import sys

    log = _late_log()
    db = tmp_path / "db" / "sessions.sqlite"
    db.parent.mkdir()
    write_database(db, [(log.header, log.events)])
    committed = check([db])
    subprocess.run([sys.executable, "-c", _CUT_OFF_APPEND, str(db)], check=True)
    journal = db.with_name("sessions.sqlite-journal")
    assert journal.stat().st_size > 0
    held = {p.name: _digest(p) for p in (db, journal)}
    after = check([db])
    assert [(s.file, s.events) for s in after.sessions] == [(s.file, s.events) for s in committed.sessions]
    assert [(f.rule, f.seq) for f in after.findings] == [(f.rule, f.seq) for f in committed.findings] == []
    assert {p.name: _digest(p) for p in (db, journal)} == held
    assert sorted(p.name for p in db.parent.iterdir()) == ["sessions.sqlite", "sessions.sqlite-journal"]


def test_a_cut_off_write_whose_copy_cannot_be_made_is_a_problem_not_its_uncommitted_rows(tmp_path, monkeypatch, capsys):
    import subprocess
    import sys

    from inspector.cli import main
    from invariants.read import sqlite_rollback

    log = _late_log()
    db = tmp_path / "db" / "sessions.sqlite"
    db.parent.mkdir()
    write_database(db, [(log.header, log.events)])
    subprocess.run([sys.executable, "-c", _CUT_OFF_APPEND, str(db)], check=True)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_rollback.shutil, "copyfile", full)
    assert main(["check", str(db.parent), "--no-cache", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert "could not be rolled back" in err and "No space left on device" in err and "Traceback" not in err
    assert "EVT006" not in out


def test_seed_schema_reads_like_the_jsonl_log(tmp_path):
    log = _seed_log()
    path = log.write(tmp_path / "seed-1.jsonl")
    events = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    write_database(tmp_path / "other.db", [(log.header, events)], schema="seed")
    a, b = check([path]), check([tmp_path / "other.db"])
    assert b.sessions[0].era == "seed"
    con = sqlite3.connect(tmp_path / "other.db")
    assert con.execute("PRAGMA user_version").fetchone()[0] == SEED_SCHEMA
    ddl = " ".join(r[0] for r in con.execute("SELECT sql FROM sqlite_master WHERE type='table' ORDER BY rowid"))
    con.close()
    assert " ".join(ddl.split()) == " ".join(SEED_DDL.replace(";", "").split())
    assert [(f.rule, f.seq) for f in a.findings] == [(f.rule, f.seq) for f in b.findings]
    assert b.sessions[0].events == a.sessions[0].events


def test_every_session_of_a_database_is_checked(tmp_path):
    one, two = one_turn(Log("a", era="late")), one_turn(Log("b", era="late"))
    db = tmp_path / "sessions.sqlite"
    write_database(db, [(one.header, one.events), (two.header, two.events)])
    sources, problems = discover([tmp_path])
    assert problems == [] and [s.member for s in sources] == ["a", "b"]
    result = check([db])
    assert [m.id for m in result.sessions] == ["a", "b"] and result.findings == []


def test_a_foreign_database_given_explicitly_is_a_problem(tmp_path):
    db = tmp_path / "notes.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all, just bytes" * 10)
    sources, problems = discover([db])
    assert sources == [] and "no harness sessions/events tables" in problems[0]
    sources, problems = discover([tmp_path])  # inside a folder: skipped quietly
    assert sources == [] and problems == []


def _bad_row(tmp_path, where: str, after_turn_end: bool):
    log = one_turn(Log("s", era="late"))
    if after_turn_end:
        log.turn_start(2)
        log.simple_step(2, 1, prompt="again", capture=True)
    db = tmp_path / "s.sqlite"
    write_database(db, [(log.header, log.events)])
    con = sqlite3.connect(db)
    target = log.seq - 1 if after_turn_end else 2  # seq 2 is the user/message of turn 1
    if where == "varint":
        con.execute(
            "UPDATE events SET source_event_seqs = x'80' WHERE seq = (SELECT min(seq) FROM events WHERE type = "
            "'assistant/message')"
        )
    else:
        con.execute("UPDATE events SET data = x'28b52ffd0000' WHERE seq = ?", (target,))
    con.commit()
    con.close()
    return check([db])


@pytest.mark.parametrize("where", ["varint", "zstd"])
def test_log016_bad_row_before_a_committed_turn_end_is_fatal(tmp_path, where):
    result = _bad_row(tmp_path, where, after_turn_end=False)
    assert "LOG016" in [f.rule for f in result.findings if f.severity == "error"]


def test_log016_bad_row_in_the_open_tail_is_torn(tmp_path):
    result = _bad_row(tmp_path, "zstd", after_turn_end=True)
    rules = [(f.rule, f.severity) for f in result.findings]
    assert ("LOG004", "warning") in rules and not [r for r in rules if r[1] == "error"]


def test_packed_row_rules_of_the_sqlite_codec(tmp_path):
    log = _late_log()
    db = tmp_path / "s.sqlite"
    write_database(db, [(log.header, log.events)])
    con = sqlite3.connect(db)
    row = con.execute("SELECT seq, data FROM events WHERE ignorable = 0").fetchone()
    data = orjson.loads(row[1])
    data["texts"], data["dt"] = data["texts"][:2], data["dt"][:1]  # 2 members: under the codec's minimum of 3
    con.execute("UPDATE events SET data = ? WHERE seq = ?", (orjson.dumps(data).decode(), row[0]))
    con.commit()
    con.close()
    result = check([db])
    assert "LOG012" in [f.rule for f in result.findings if f.severity == "error"]


def test_packed_row_with_surface_columns_is_refused(tmp_path):
    log = _late_log()
    db = tmp_path / "s.sqlite"
    write_database(db, [(log.header, log.events)])
    con = sqlite3.connect(db)
    con.execute("UPDATE events SET surface_op = '\"append\"' WHERE ignorable = 0")
    con.commit()
    con.close()
    assert "LOG012" in [f.rule for f in check([db]).findings]


def test_long_runs_split_at_the_row_cap(tmp_path):
    log = Log("long", era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.user("hi")
    log.snapshot()
    seqs = [log.chunk(1, 1, "x") for _ in range(2500)]
    log.assistant(1, 1, [{"type": "text", "text": "x" * 2500}], seqs)
    log.step_end(1, 1)
    log.turn_end(1)
    db = tmp_path / "s.sqlite"
    write_database(db, [(log.header, log.events)])
    con = sqlite3.connect(db)
    sizes = [
        len(orjson.loads(zstandard.ZstdDecompressor().decompress(d) if isinstance(d, bytes) else d)["texts"])
        for (d,) in con.execute("SELECT data FROM events WHERE ignorable = 0 ORDER BY seq")
    ]
    con.close()
    assert sizes == [1024, 1024, 452]
    result = check([db], keep_models=True)
    assert result.findings == [] and result.models[0].chunks == 2500


@given(st.lists(st.integers(min_value=0, max_value=2**53 - 1), max_size=30))
def test_source_seqs_varint_roundtrip(values):
    assert decode_source_seqs(encode_source_seqs(values)) == values


@pytest.mark.parametrize("blob", [b"\x80", b"\x80\x00", b"\xff" * 9 + b"\x01"])
def test_source_seqs_varint_rejects_malformed(blob):
    with pytest.raises(RowError):
        decode_source_seqs(blob)


def test_the_sample_database_is_clean():
    from tests.conftest import SAMPLES

    db = SAMPLES / "late" / "db" / "sessions.sqlite"
    result = check([db])
    assert len(result.sessions) == 2 and result.findings == []
    assert [r.status for r in result.requests] == ["ok"] * 3
