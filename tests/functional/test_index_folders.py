"""The index on late-era and corpus logs, inside its root, and on folders too large for one task."""

from __future__ import annotations

import collections
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from inspector.index import build_index
from invariants import check
from tests.conftest import ROOT, corpus_dir
from tests.support.index_db import assert_same, fresh_index, q
from tests.support.logs import Log, add_late, make_root


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
    assert_same(db, fresh_index(base, tmp_path))


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


def test_an_executor_whose_results_arrive_out_of_order_writes_each_folder_as_it_can(tmp_path: Path) -> None:
    """On an executor (``--scheduler``), a folder's task is made when the executor asks for it and its
    rows are written once every folder before it has come, while later folders are still out: the index
    is the serial one, in the same order."""
    from itertools import islice

    class Reversed:
        """Takes its items four at a time, and gives each four's results last first."""

        jobs = 2
        taken = 0

        def map(self, fn, items, costs=None):
            return [result for _, result in sorted(self.imap(fn, items), key=lambda pair: pair[0])]

        def imap(self, fn, items, costs=None):
            numbered = enumerate(items)
            while four := list(islice(numbered, 4)):
                self.taken += len(four)
                for i, item in reversed(four):
                    yield i, fn(item)

    make_root(tmp_path / "root", n=12)
    executor = Reversed()
    taken_at_write: list[int] = []
    stats = build_index(
        [tmp_path / "root"],
        tmp_path / "fleet.db",
        executor=executor,
        after_folder=lambda written: taken_at_write.append(executor.taken),
    )
    build_index([tmp_path / "root"], tmp_path / "serial.db", jobs=1)
    assert stats.groups == len(taken_at_write) > 10 and not stats.problems
    assert taken_at_write[0] == 4 and taken_at_write[-1] == stats.groups  # the first written before the rest was made
    assert_same(tmp_path / "fleet.db", tmp_path / "serial.db")
    in_rowid_order = "SELECT path FROM sessions ORDER BY rowid"
    assert q(tmp_path / "fleet.db", in_rowid_order) == q(tmp_path / "serial.db", in_rowid_order)


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


@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_the_index_binds_its_parameters_as_every_supported_sqlite3_accepts(tmp_path):
    """Numbered placeholders (``?1``) given a sequence are deprecated from Python 3.12 and an error from
    3.14: the index's step statuses and session counts bind by name.  (Below 3.12 this passes either way.)"""
    samples = ROOT / "sample_logs"
    db = tmp_path / "index.db"
    first = build_index([samples], db, jobs=1)
    again = build_index([samples], db, jobs=1, full=True)
    assert first.problems == again.problems == [] and first.sessions == again.sessions > 0
    assert q(db, "SELECT count(*) FROM sessions WHERE errors + warnings + infos > 0")[0][0] > 0
    assert q(db, "SELECT count(*) FROM steps WHERE status IS NOT NULL AND requests > 0")[0][0] > 0
