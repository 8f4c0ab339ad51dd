"""One test per failure mode the fuzzer found (see SECURITY.md), each on the
smallest input that showed it.  Cases that once killed the interpreter run in
a subprocess, so a regression fails the test instead of the test run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzz_inputs import ROOT, deep_json
from tests.support.logs import Log


def _cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "inspector.cli", *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def _log_with(tmp_path, line: bytes, name: str = "s.jsonl"):
    log = Log()
    log.clean_turn(1, header_reason="initial")
    lines = log.lines()
    lines.insert(3, line)
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("kind", ["object", "array"])
def test_100k_deep_line_is_a_finding_not_a_segfault(tmp_path, kind):
    """orjson 3.8 recursed while building 100,000 nested objects and overflowed the C stack (SIGSEGV)."""
    path = _log_with(tmp_path, deep_json(100_000, kind))
    proc = _cli("check", str(path), "--format", "json", "--no-cache")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    deep = [f for f in json.loads(proc.stdout)["findings"] if "nesting deeper" in f["message"]]
    assert deep and deep[0]["rule"] == "LOG001" and deep[0]["line"] == 4 and deep[0]["file"] == str(path)


def test_deep_value_inside_a_field_and_in_a_capture(tmp_path):
    deep = deep_json(100_000, "object").decode()
    log = Log()
    log.clean_turn(1, header_reason="initial")
    path = log.write(tmp_path / "s.jsonl")
    (tmp_path / "requests.jsonl").write_text('{"sessionId":"s1","logLength":3,"request":' + deep + "}\n")
    with path.open("ab") as fh:
        fh.write(
            (
                '{"type":"user/message","seq":%d,"time":1,"data":{"content":%s},"surfaceOp":"append"}\n'
                % (log.seq, deep)
            ).encode()
        )
    proc = _cli("check", str(path), "--format", "json", "--no-cache")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    msgs = [(f["rule"], f["line"]) for f in json.loads(proc.stdout)["findings"] if "nesting deeper" in f["message"]]
    assert ("LOG004", log.seq + 2) in msgs  # the last line: a crash-truncated tail
    assert ("LOG013", 1) in msgs


def test_nesting_depth_ignores_brackets_in_strings():
    from invariants.model.jsonvalue import MAX_DEPTH, nesting_depth, too_deep

    assert nesting_depth(b'{"a":"]]]]\\\\","b":[[["\\"]]]"]]]}') == 4
    assert nesting_depth(b'["' + b"[" * 10_000 + b'"]') == 1
    assert nesting_depth(b'["unterminated [[[[') == 1
    assert too_deep(deep_json(MAX_DEPTH + 1)) and not too_deep(deep_json(MAX_DEPTH))
    assert not too_deep(b"[" + b'"{",' * 10_000 + b"1]")


@pytest.mark.parametrize("value", [[], {}, ["text-chunks"], {"a": 1}])
def test_unhashable_event_type_is_an_envelope_finding(tmp_path, capsys, value):
    """era.sniff tested ``type in frozenset`` on whatever the line held: TypeError on a list or object."""
    from inspector.cli import main

    line = json.dumps({"type": value, "seq": 3, "time": 1, "data": {}, "seq0": 0}).encode()
    path = _log_with(tmp_path, line)
    assert main(["check", str(path), "--format", "json", "--no-cache"]) == 1
    f = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"] == "LOG002"]
    assert f and f[0]["line"] == 4 and "no string `type`" in f[0]["message"]


def test_event_viewer_reads_hostile_lines_without_crashing(tmp_path):
    """The TUI's raw-event reader parsed with bare orjson (deep lines: SIGSEGV), hashed the type
    (a list: TypeError), re-encoded with orjson (ints over 64 bits: TypeError) and read whole lines."""
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from pathlib import Path\n"
        "from invariants.analysis.events_view import LineIndex, read_events, search\n"
        "p = Path(%r); idx = LineIndex(p)\n"
        "evs = read_events(p, 0, None, index=idx); print(len(evs), idx.lines)\n"
        "print(len(read_events(p, 0, None)), len(search(p, 'needle')))\n"
    )
    log = Log()
    log.clean_turn(1, header_reason="initial")
    lines = log.lines()
    n = len(log.events)
    extra = [
        deep_json(100_000, "object"),
        json.dumps({"type": ["x"], "seq": n, "time": 1, "data": {}, "seq0": 0}).encode(),
        b'{"type":"user/message","seq":%d,"time":1,"data":{"big":%d,"t":"needle"},"surfaceOp":"append"}' % (n, 10**30),
        b'{"type":"x/y","seq":%d,"time":1,"data":"' % (n + 1) + b"a" * (3 << 20) + b'"}',
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines + extra) + b"\n")
    proc = subprocess.run(
        [sys.executable, "-c", code % (str(ROOT), str(path))], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.split("\n")[:2]
    assert first == f"{n + 2} {len(lines) + len(extra)}"
    assert second.split()[1] == "1"  # the big-int event is found by search


@pytest.mark.parametrize("fmt", ["json", "jsonl", "sarif", "junit", "github", "text"])
def test_c1_controls_are_escaped_in_every_format(tmp_path, capsys, fmt):
    """U+009B (an 8-bit CSI) went out raw in JSON (encoders escape only U+0000-U+001F) and in JUnit XML."""
    from inspector.cli import main

    log = Log()
    log.clean_turn(1, header_reason="initial")
    log.add("x\x9b2J\x85/\u2028y\u202e\u2066", {})
    path = log.write(tmp_path / "s.jsonl")
    assert main(["check", str(path), "--format", fmt, "--no-cache", "--fail-on", "info"]) == 1
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x7f\x85\x9b\u2028\u202e\u2066"), out  # C1 controls and bidi overrides
    assert "x\\u009b2J" in out or "x\\x9b2J" in out


@pytest.mark.parametrize("call_id", [[], {"a": 1}, True, 1])
def test_call_id_of_any_json_type_pairs_like_a_js_map(tmp_path, capsys, call_id):
    """The contract tracer keyed pending calls by the raw callId: a list or object raised TypeError."""
    from inspector.cli import main

    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    log.chunk(1, 1)
    log.tool_call(1, 1, call_id)
    log.tool_result(1, 1, call_id if call_id != 1 else True)  # 1 and true are different Map keys
    log.step_end(1, 1)
    log.turn_end(1)
    path = log.write(tmp_path / "s.jsonl")
    main(["check", str(path), "--format", "json", "--no-cache"])
    unpaired = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"] == "EVT009"]
    # objects pair by identity (never), scalars by value and type
    assert len(unpaired) == (0 if call_id is True else 1)


def _flat(items):
    from invariants.read.line_records import LineRun

    out = []
    for it in items:
        for raw in it.raw_lines() if isinstance(it, LineRun) else [it]:
            out.append((raw.number, raw.offset, raw.data, raw.complete, raw.oversized))
    return out


def test_long_lines_cost_linear_time_in_the_block_reader(tmp_path):
    """The chunk-run reader re-copied and re-split a pending line at every 1 MiB block:
    a 60 MB line took 1.4 s (quadratic), 20x the readline path."""
    import time

    from invariants.read.lines import _plain_lines, _plain_runs

    path = tmp_path / "l.jsonl"
    path.write_bytes(b'{"a":1}\n' + b"x" * 40_000_000 + b'\n{"b":2}\n')
    t0 = time.perf_counter()
    runs = _flat(_plain_runs(path, 64 << 20, (0, 0)))
    t_runs = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain = _flat(_plain_lines(path, 64 << 20))
    t_plain = time.perf_counter() - t0
    assert runs == plain
    assert t_runs < 10 * t_plain + 0.5  # a generous bound; quadratic was ~20x


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from(
            [b"", b"a", b"xxxxxxxxxxxx", b'{"type":"assistant/chunk","seq":1}', b"\n", b"\n\n", b"y" * 40, b"\xc3\xa9"]
            + [b'{"type":"assistant/chunk","seq":2}\n'] * 3  # whole chunk lines, so that runs form
        ),
        max_size=30,
    ),
    st.integers(1, 200),  # blocks of a few bytes split every line; longer ones hold whole runs
    st.integers(1, 80),
)
def test_block_reader_matches_the_readline_reader(tmp_path_factory, parts, block, max_line):
    from invariants.read.line_records import LineRun
    from invariants.read.lines import _plain_lines, _plain_runs

    path = tmp_path_factory.mktemp("lines") / "l.jsonl"
    path.write_bytes(b"".join(parts))
    items = list(_plain_runs(path, max_line, (0, 0), block_size=block))
    assert _flat(items) == _flat(_plain_lines(path, max_line))
    for it in items:  # a run's in-place text, when it has one, is its lines
        if isinstance(it, LineRun) and it.text is not None:
            assert bytes(it.text) == b"\n".join(it.lines) and bytes(it.text).isascii()


def test_finding_locations_are_integers_whatever_the_log_wrote(tmp_path, capsys):
    """A step/start whose turn was a string with a bell went raw into the text report's location
    ("turn \\x07\\x07bell step 2") and as a string into the JSON report's integer ``turn``."""
    from inspector.cli import main

    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.add("step/start", {"turn": "\x07\x07bell[bold]", "step": [2]})
    log.chunk(1, 1)
    path = log.write(tmp_path / "s.jsonl")
    assert main(["check", str(path), "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "\x07" not in out
    main(["check", str(path), "--no-cache", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    for f in findings:
        assert all(f[k] is None or type(f[k]) is int for k in ("line", "seq", "turn", "step")), f
    assert any(f["detail"].get("logged_turn") == '"\\u0007\\u0007bell[bold]"' for f in findings)


@pytest.mark.parametrize(
    "system, tools", [(["not", "a", "string"], None), ("S", [{"name": ["x"]}, {"name": {"a": 1}}])]
)
def test_snapshot_with_a_list_system_or_unhashable_tool_names(tmp_path, capsys, system, tools):
    """diff_header split a list system prompt (AttributeError) and keyed tools by unhashable names (TypeError)."""
    from inspector.cli import main
    from tests.support.logs import SEED_HEADER

    bad = {**SEED_HEADER, "system": system} if tools is None else {**SEED_HEADER, "tools": tools}
    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.simple_step(1, 1, header_reason="initial")
    log.simple_step(1, 2, header_reason="fallback", header=bad)
    log.simple_step(1, 3, header_reason="fallback")
    log.step_start(1, 4)
    log.delta(
        {
            "system": {"keepStart": 0, "keepEnd": 0, "insert": ["x"]},
            "tools": {"added": [], "removed": ["x"], "changed": []},
        }
    )
    log.turn_end(1)
    path = log.write(tmp_path / "s.jsonl")
    assert main(["check", str(path), "--no-cache", "--format", "json"]) == 1
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "HDR014" in rules


def test_index_stores_lone_surrogates(tmp_path, capsys):
    """JSON allows "\\ud800"; the index writer handed it to SQLite, which refused the batch (UnicodeEncodeError)."""
    from inspector.cli import main

    log = Log()
    log.clean_turn(1, text="lone \ud800 surrogate", header_reason="initial")
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "s1.jsonl"
    path.write_bytes(b"\n".join(json.dumps(x).encode() for x in [log.header, *log.events]) + b"\n")
    assert b"\\ud800" in path.read_bytes()
    db = tmp_path / "x.db"
    assert main(["index", str(logs), "--db", str(db), "-j", "1", "-q"]) in (0, 1)
    assert (
        main(["query", "select text from messages where text like 'lone%'", "--db", str(db), "--format", "json"]) == 0
    )
    assert "lone ? surrogate" in capsys.readouterr().out


def test_a_malformed_sqlite_store_is_a_finding(tmp_path, capsys):
    """A damaged page raised sqlite3.DatabaseError out of the row iterator and stopped the whole check."""
    from inspector.cli import main
    from invariants.read.sqlite_backend import write_database

    log = Log("in-db")
    for t in range(1, 40):
        log.clean_turn(t, text="x" * 400, header_reason="initial" if t == 1 else None)
    db = tmp_path / "s.sqlite"
    write_database(db, [(log.header, log.events)], schema="seed")
    data = bytearray(db.read_bytes())
    page = 4096
    data[len(data) - page : len(data) - page + 200] = b"\xff" * 200  # a leaf page of the events table
    db.write_bytes(bytes(data))
    code = main(["check", str(db), "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    bad = [f for f in json.loads(out)["findings"] if f["rule"] == "LOG016"]
    assert (
        bad
        and bad[0]["severity"] == "error"
        and "cannot be read from here on" in bad[0]["message"]
        and bad[0]["line"] > 1
    )


def test_a_zstd_bomb_is_refused_before_it_is_decompressed(tmp_path, capsys):
    """A 65 KB .jsonl.zstd whose second frame expands to 2 GiB took 22 s and 4.2 GB of memory;
    the expansion is now bounded from the block headers before anything is decompressed."""
    import tracemalloc

    import zstandard

    from inspector.cli import main

    cctx = zstandard.ZstdCompressor(level=1, write_checksum=True)
    header = b'{"type":"session","version":0,"id":"b","createdAt":1}\n'
    bomb = cctx.compress(b"a" * (300 << 20) + b"\n")
    path = tmp_path / "bomb.jsonl.zstd"
    path.write_bytes(cctx.compress(header) + bomb)
    assert path.stat().st_size < 200_000
    tracemalloc.start()
    try:
        code = main(["check", str(path), "--no-cache", "--format", "json"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20  # decompressing would need 300 MiB; its time is benchmarks/zstd_speed.py's
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert code == 1 and [f["rule"] for f in findings] == ["LOG009"] and "expand" in findings[0]["message"]


def test_highly_compressible_logs_under_the_floor_still_read(tmp_path):
    from invariants import check
    from tests.support.fuzz_inputs import to_zstd

    log = Log()
    log.clean_turn(1, text="z" * (20 << 20), header_reason="initial")  # 20 MB that compress to almost nothing
    path = tmp_path / "s.jsonl.zstd"
    path.write_bytes(to_zstd(b"\n".join(log.lines()) + b"\n"))
    result = check([path])
    assert not [f for f in result.findings if f.rule == "LOG009"] and result.sessions[0].events == len(log.events)


def _db_with(tmp_path, edit) -> Path:
    """A seed-schema store (its tables without STRICT, as a damaged file may be) holding one session."""
    import sqlite3

    from invariants.read.sqlite_backend import SEED_DDL, write_database

    log = Log("in-db")
    log.clean_turn(1, header_reason="initial")
    db = tmp_path / "s.sqlite"
    write_database(tmp_path / "strict.sqlite", [(log.header, log.events)], schema="seed")
    con = sqlite3.connect(db)
    con.executescript(SEED_DDL.replace(") STRICT;", ");"))
    con.execute("ATTACH DATABASE ? AS src", (str(tmp_path / "strict.sqlite"),))
    con.execute("INSERT INTO sessions SELECT * FROM src.sessions")
    con.execute("INSERT INTO events SELECT * FROM src.events")
    con.commit()
    con.execute("DETACH DATABASE src")
    (tmp_path / "strict.sqlite").unlink()
    edit(con)
    con.commit()
    con.close()
    return db


def test_a_blob_where_sqlite_text_was_expected_is_a_row_finding(tmp_path, capsys):
    """orjson.dumps(bytes) raised TypeError out of the row decoder."""
    from inspector.cli import main

    db = _db_with(tmp_path, lambda con: con.execute("UPDATE events SET type = x'ff00' WHERE seq = 2"))
    assert main(["check", str(db), "--no-cache", "--format", "json"]) == 1
    rows = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"] == "LOG016"]
    assert rows and "bytes column value" in rows[0]["message"] and rows[0]["line"] == 4


def test_a_garbled_sqlite_schema_is_an_unreadable_input(tmp_path, capsys):
    """SQLite quoted the invalid UTF-8 of a garbled schema in its error, and Python failed to
    decode the message: UnicodeDecodeError out of connect()."""
    from inspector.cli import main
    from invariants.read.sqlite_backend import write_database

    log = Log("in-db")
    log.clean_turn(1, header_reason="initial")
    db = tmp_path / "s.sqlite"
    write_database(db, [(log.header, log.events)], schema="seed")
    data = db.read_bytes()
    # one flipped bit (0x20 -> 0xa0): a STRICT column type SQLite rejects, quoting the byte in its error
    assert data.count(b"cwd            TEXT") == 1
    db.write_bytes(data.replace(b"cwd            TEXT", b"cwd        \xa0   TEXT"))
    code = main(["check", str(db), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and str(db) in err and "Traceback" not in err


def test_a_checkpoint_from_a_foreign_index_cannot_run_code(tmp_path):
    """Checkpoints are pickles stored in the index file; resume() unpickled whatever it was given,
    so `inspector index --db` on a crafted database ran arbitrary code."""
    import pickle
    import zlib

    from invariants.read.source import LogSource
    from invariants.replay.checkpoint import resume
    from invariants.replay.session import replay

    log = Log()
    log.clean_turn(1, header_reason="initial")
    path = log.write(tmp_path / "s.jsonl")
    src = LogSource(path, tmp_path)
    good = replay(src, checkpoint=True).checkpoint
    assert good is not None and resume(src, good) is not None  # our own checkpoints still resume

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    assert resume(src, zlib.compress(pickle.dumps(Evil()))) is None
    assert not marker.exists()

    class Escape:  # reach a function's globals through getattr
        def __reduce__(self):
            from invariants.replay.fold import _Replay

            return (getattr, (_Replay.__init__, "__globals__"))

    assert resume(src, zlib.compress(pickle.dumps(Escape()))) is None
    assert resume(src, zlib.compress(b"\0" * (200 << 20))) is None  # a zlib bomb is refused, not expanded


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50), st.integers(0, 50)), max_size=60), st.booleans())
def test_surface_generations_rebuild_exactly(ops, budget_zero):
    """Generations are stored as splices (with snapshots within a budget); every recorded position
    reads back exactly what a naive copy-per-generation surface held."""
    import invariants.replay.surface as surface_mod
    from invariants.replay.surface import Surface

    saved = surface_mod._SNAPSHOT_FLOOR, surface_mod._SNAPSHOT_FACTOR
    if budget_zero:
        surface_mod._SNAPSHOT_FLOOR, surface_mod._SNAPSHOT_FACTOR = 0, 0
    try:
        s, naive, seen = Surface(), [[]], []
        for seq, (append, a, b) in enumerate(ops):
            cur = naive[-1]
            if append or not cur:
                s.append(seq, seq)
                cur.append(seq)
            else:
                i, j = sorted((a % len(cur), b % len(cur)))
                assert s.check_replace(cur[i], cur[j]).ok
                s.replace(seq, cur[i], cur[j], seq)
                naive.append(cur[:i] + [seq] + cur[j + 1 :])
            seen.append((s.position(), naive[-1][:]))
            cur = naive[-1]
            for x, y in ((a, b), (b, a), (a, a), (-1, b)):
                ok = x in cur and y in cur and cur.index(x) <= cur.index(y)
                out = s.check_replace(x, y)
                assert out.ok == ok and (not ok or out.shadowed == cur[cur.index(x) : cur.index(y) + 1])
        for position, expect in reversed(seen):  # out of order too: the cache must not leak
            assert s.seqs_at(position) == expect
        for position, expect in seen:
            assert s.seqs_at(position) == expect
    finally:
        surface_mod._SNAPSHOT_FLOOR, surface_mod._SNAPSHOT_FACTOR = saved


def test_surface_replace_churn_stays_in_linear_memory(tmp_path):
    """8,000 appends then 8,000 replaces (a 2.9 MB log) held a full copy of the surface per
    generation: 540 MB and 5.7 s."""
    import tracemalloc

    from invariants import check

    log = Log()
    log.turn_start(1)
    last = [log.user(f"m{i}") for i in range(8000)][-1]
    for _ in range(8000):
        last = log.add(
            "user/message",
            {"content": [{"type": "text", "text": "c"}], "source": {"kind": "user"}},
            surfaceOp={"op": "replace", "start": last, "end": last},
            sourceEventSeqs=[last],
        )
    log.turn_end(1)
    path = log.write(tmp_path / "churn.jsonl")
    tracemalloc.start()
    try:
        result = check([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 120 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert result.sessions[0].events == len(log.events)


def test_capture_lines_find_their_step_in_constant_time(tmp_path):
    """step_for() scanned every step for every capture line without logLength: 40,000 steps and
    40,000 such lines (9 MB) took 45 s."""
    import time

    import orjson

    from invariants import check

    log = Log()
    log.turn_start(1)
    for k in range(1, 20001):
        log.step_start(1, k)
        log.step_end(1, k)
    log.turn_end(1)
    path = log.write(tmp_path / "s1.jsonl")
    (tmp_path / "requests.jsonl").write_bytes(
        b"".join(
            orjson.dumps({"sessionId": "s1", "turn": 2, "step": k, "request": {"messages": []}}) + b"\n"
            for k in range(20000)
        )
    )
    t0 = time.perf_counter()
    result = check([path])
    assert time.perf_counter() - t0 < 15  # ~1 s; the scan took ~12 s at this size
    assert sum(1 for f in result.findings if f.rule == "REQ002") == 20000


def test_step_for_compares_like_a_scan():
    from invariants.replay.model import SessionModel, StepState

    steps = [
        StepState(i, t, s, i, i, (0, 0)) for i, (t, s) in enumerate([(1, 1), (1, 2), ([1], 1), (1.0, 1), ("1", 1)])
    ]
    m = SessionModel.__new__(SessionModel)
    m.steps = steps
    assert m.step_for(1, 1) is steps[3]  # the last one equal to (1, 1): 1.0 == 1
    assert m.step_for([1], 1) is steps[2] and m.step_for("1", 1) is steps[4] and m.step_for(3, 1) is None
    m.steps.append(StepState(5, 1, 1, 5, 5, (0, 0)))
    assert m.step_for(1, 1) is m.steps[5]  # a grown list is re-indexed


def _tiny_captures_against_a_long_history(tmp_path, n: int):
    import orjson

    log = Log()
    log.turn_start(1)
    for _ in range(n):
        log.user("u")
    log.step_start(1, 1)
    log.snapshot()
    log.chunk(1, 1)
    log.step_end(1, 1)
    log.turn_end(1)
    path = log.write(tmp_path / "s1.jsonl")
    (tmp_path / "requests.jsonl").write_bytes(
        b"".join(
            orjson.dumps({"sessionId": "s1", "logLength": log.seq - 1, "request": {"messages": []}}) + b"\n"
            for _ in range(n)
        )
    )
    return path


def test_tiny_capture_lines_against_a_long_history_stay_linear(tmp_path):
    """2,000 one-line requests against a 2,000-message history (424 KB) took 133 s and 12.8 GB:
    deepdiff compared whole histories and its cyclic garbage piled up with the collector paused,
    and every line re-derived the history in Python."""
    import time
    import tracemalloc

    from invariants import check

    path = _tiny_captures_against_a_long_history(tmp_path, 1000)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        result = check([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 30 and peak < 200 << 20, (time.perf_counter() - t0, peak >> 20)
    div = [f for f in result.findings if f.rule == "DIV001"]
    assert len(div) == 1000 and div[0].detail["deepdiff"]["window"] == [0, 16]


def _tool_deltas(path: Path, n: int) -> Path:
    """A log of ``n`` header deltas that each add one tool."""
    log = Log()
    log.turn_start(1)
    log.user("u")
    log.step_start(1, 1)
    log.snapshot()
    for k in range(n):
        log.delta(
            {
                "tools": {
                    "added": [{"name": f"t{k}", "description": "d", "parameters": {}}],
                    "removed": [],
                    "changed": [],
                }
            }
        )
    log.step_end(1, 1)
    log.turn_end(1)
    return log.write(path)


def test_tool_deltas_cost_the_header_in_force_not_a_python_walk_of_it(tmp_path, monkeypatch):
    """2,000 deltas each adding one tool (339 KB) took 20 s: every comparison of the folded header
    walked the whole tool list in Python, building a path string per element.  Now a delta is
    applied to the live header and only checkpoints are materialised: the tools built in headers
    (what a walk would cost) grow linearly in the deltas, and no delta takes the whole-header path."""
    from invariants import check
    from invariants.replay import header_fold, header_versions

    built = {"tools": 0, "headers": 0, "whole": 0}
    header = header_versions.LiveHeader.header
    general = header_fold.HeaderFold._general_delta

    def counted_header(self):
        built["headers"] += 1
        built["tools"] += len(self.tools)
        return header(self)

    def counted_general(self, *args):
        built["whole"] += 1
        return general(self, *args)

    monkeypatch.setattr(header_versions.LiveHeader, "header", counted_header)
    monkeypatch.setattr(header_fold.HeaderFold, "_general_delta", counted_general)
    costs = {}
    for n in (500, 2000):
        built.update(tools=0, headers=0, whole=0)
        result = check([_tool_deltas(tmp_path / f"s{n}.jsonl", n)], keep_models=True)
        (model,) = result.models
        assert len(model.versions) == n + 1 and not [f for f in result.findings if f.severity == "error"]
        first = len(model.versions[0].header["tools"])  # the snapshot's own tools
        assert len(model.versions[-1].header["tools"]) == first + n  # the last version, materialised on demand
        assert built["whole"] == 0
        costs[n] = {k: v for k, v in built.items() if k != "whole"}
    # Quadratic would be n^2 / 2 tools (125,000 and 2,000,000, x16); linear is a few n (checkpoints double).
    assert all(costs[n]["tools"] <= 4 * n for n in costs) and costs[2000]["tools"] <= 6 * costs[500]["tools"], costs
    assert costs[2000]["headers"] <= 2 * costs[500]["headers"], costs  # checkpoints: logarithmic in n


def test_first_difference_paths_are_unchanged():
    from invariants.model.jsonvalue import first_difference

    a = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}], "k y": [1, 2]}
    assert first_difference(a, a) is None
    b = {"messages": [{"role": "user", "content": [{"type": "text", "text": "y"}]}], "k y": [1, 2]}
    assert first_difference(a, b, "r") == "r.messages[0].content[0].text"
    assert first_difference({"k y": [1, 2]}, {"k y": [1, 2, 3]}) == '["k y"][2]'
    assert first_difference([1], [True]) == "[0]" and first_difference(1, 1.0) is None


def test_a_root_of_forked_children_is_scanned_once(tmp_path, capsys):
    """Each child whose parent is gone listed every folder of the root and stat'ed six names in
    each: 1,000 such children took 179 s (quadratic); now one scan per root and check run."""
    import time

    from inspector.cli import main

    root = tmp_path / "root"
    for i in range(300):
        d = root / f"cwd-{i:012d}"
        d.mkdir(parents=True)
        log = Log(f"c{i}", parentSession=f"missing{i}", seedLength=2)
        log.clean_turn(1, header_reason="initial")
        log.write(d / f"c{i}.jsonl")
    for argv in (
        ["check", str(root), "--no-cache", "--format", "json"],
        ["check", str(root), "--format", "json", "--cache-dir", str(tmp_path / "c")],
    ):
        t0 = time.perf_counter()
        main(argv)
        assert time.perf_counter() - t0 < 15  # ~0.5 s; ~16 s before
        findings = json.loads(capsys.readouterr().out)["findings"]
        assert sum(1 for f in findings if f["rule"] == "FRK003") == 300


@pytest.mark.parametrize("tokens", ["12\x1b[2J", [1], True, 1.5, 2**60])
def test_cache_report_shows_any_usage_value(tmp_path, capsys, tokens):
    """cache-report formatted provider usage with f"{x:,}": a string in the log raised ValueError."""
    from inspector.cli import main

    log = Log()
    log.turn_start(1)
    log.user("hi")
    log.step_start(1, 1)
    log.snapshot()
    log.add(
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": {"inputTokens": tokens, "cacheReadTokens": tokens}}},
    )
    log.step_end(1, 1)
    log.turn_end(1)
    path = log.write(tmp_path / "s.jsonl")
    assert main(["cache-report", str(path)]) in (0, 1)
    out = capsys.readouterr().out
    assert "\x1b" not in out


@pytest.mark.parametrize("block", [64, 333, 4096])
def test_runs_read_in_place_hold_their_own_lines(tmp_path, block):
    """A run's ``text`` is a slice of the block it was read from: it must be exactly its lines,
    also when the block began inside a line carried over from the block before."""
    import random

    from invariants.read.line_records import LineRun
    from invariants.read.lines import _plain_lines, _plain_runs

    rng = random.Random(block)
    lines = [
        b'{"type":"assistant/chunk","seq":%d,"x":"%s"}' % (i, b"w" * rng.randrange(40)) if rng.random() < 0.8 else b"e"
        for i in range(400)
    ]
    path = tmp_path / "l.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    items = list(_plain_runs(path, 1 << 20, (0, 0), block_size=block))
    assert _flat(items) == _flat(_plain_lines(path, 1 << 20))
    in_place = [it for it in items if isinstance(it, LineRun) and it.text is not None]
    assert len(in_place) > 5
    assert all(bytes(it.text) == b"\n".join(it.lines) for it in in_place)


def test_reduce_takes_an_event_whose_type_is_not_a_string(tmp_path, capsys):
    """Found by the fuzz run's reduce (issue 34): an event typed as a list crashed the unit split."""
    from inspector.cli import main
    from tests.conftest import SAMPLES

    src = (SAMPLES / "prefix-unstable.jsonl").read_text().splitlines()
    bad = json.loads(src[5])
    bad["type"] = ["step/start"]
    src[5] = json.dumps(bad)
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(src) + "\n")
    assert main(["reduce", str(path), "--rule", "PFX001", "--output", str(tmp_path / "r")]) in (0, 1, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_reduce_names_a_log_inertly_whatever_its_name_holds(tmp_path, capsys):
    """Found by the fuzz run: a log named with an OSC 52 sequence (a terminal's clipboard write) and no
    finding to reduce was named raw in reduce's message: the terminal would have run it."""
    from inspector.cli import main

    log = Log()
    log.clean_turn(1, header_reason="initial")
    path = log.write(tmp_path / "\x1b]52;c;ZXZpbA==\x07.jsonl")
    assert main(["reduce", str(path), "--rule", "LOG001", "--output", str(tmp_path / "r"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "no LOG001 finding" in err and "ZXZpbA==" in err
    assert "\x1b" not in err and "\x07" not in err


@pytest.mark.parametrize("kind", [["error"], {"kind": "error"}])
def test_a_turn_end_reason_kind_of_any_json_type_is_checked_not_a_crash(tmp_path, kind):
    """Found by the fuzz run (seed 53, case 725): a late turn that ends with its step still open asks
    whether the turn ended in error after a failed step/end; a ``reason.kind`` that is a list or an
    object was looked up in a set of strings, and the check died with a TypeError."""
    from invariants import check

    log = Log(era="late")
    log.turn_start(1)
    log.step_start(1, 1)
    log.snapshot()
    log.add("turn/end", {"turn": 1, "reason": {"kind": kind}})
    result = check([log.write(tmp_path / "s.jsonl")])
    assert result.problems == []
    assert any(f.rule.startswith("EVT") for f in result.findings), [f.rule for f in result.findings]


def test_reduce_reads_a_chunk_whose_type_is_not_a_string(tmp_path, capsys):
    """Found by the fuzz run (seed 53, case 246): reduce's collapse of text deltas looked a chunk's
    ``type`` up in a dictionary; a list there ended reduce with a TypeError."""
    from inspector.cli import main

    log = Log()
    log.clean_turn(1, header_reason="initial")
    log.chunk(1, 1, chunk={"type": ["text-delta"], "text": "x"})
    path = log.write(tmp_path / "s.jsonl")
    code = main(["reduce", str(path), "--rule", "EVT011", "--output", str(tmp_path / "r"), "-q"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "r").is_dir()
