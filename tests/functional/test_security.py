"""What SECURITY.md promises about untrusted logs, checked end to end:

* never written: every command run over a read-only copy of a sessions root
  (both layouts, zstd, a torn tail and an open turn the harness would repair,
  a SQLite session database in WAL mode, captures, a fork) leaves every byte,
  mtime and directory listing as it was, and an audit hook sees no open for
  writing, no rename/remove/mkdir and no writable SQLite connection under it;
* confined: ``parentSession`` ids and capture ``sessionFile`` hints never
  make the tool open anything outside the root named (``..``, absolute paths,
  encoded tricks), symlinks in a root are not followed (loops cannot hang it);
* the index never blocks a reader: while an indexer sits inside its write
  transaction, ``sessions`` and ``query`` answer at once.

Audit hooks cannot be removed, so the one installed here records only while
``_AUDIT.on`` is set.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.cli import main
from tests.conftest import ROOT, SAMPLES
from tests.support.fuzz_cases import hang_guard
from tests.support.fuzz_inputs import to_zstd
from tests.support.logs import Log


class _Audit:
    on = False
    events: list[tuple] = []


def _hook(event: str, args: tuple) -> None:
    if not _Audit.on:
        return
    if event == "open":
        _Audit.events.append(("open", args[0], args[1], args[2]))
    elif event == "sqlite3.connect":
        _Audit.events.append((event, args[0], None, None))
    elif event in (
        "os.remove",
        "os.rename",
        "os.replace",
        "os.mkdir",
        "os.rmdir",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "os.link",
        "os.symlink",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
    ):
        _Audit.events.append((event, args[0], None, None))


sys.addaudithook(_hook)

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _path_of(arg) -> Path | None:
    if isinstance(arg, int):
        return None
    try:
        return Path(os.fsdecode(arg)).absolute()
    except TypeError:
        return None


def _under(p: Path | None, root: Path) -> bool:
    return p is not None and (p == root or root in p.parents)


def writes_under(root: Path) -> list[tuple]:
    """Recorded events that would change something under ``root``."""
    root = root.absolute()
    bad = []
    for event, target, mode, flags in _Audit.events:
        if event == "sqlite3.connect":
            text = os.fsdecode(target) if isinstance(target, (str, bytes, os.PathLike)) else ""
            path = text[5:].split("?", 1)[0] if text.startswith("file:") else text
            from urllib.parse import unquote

            if _under(_path_of(unquote(path)), root) and "mode=ro" not in text and "immutable=1" not in text:
                bad.append((event, text))
            continue
        p = _path_of(target)
        if not _under(p, root):
            continue
        if event == "open":
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            ):
                bad.append((event, str(p), mode, flags))
        else:
            bad.append((event, str(p)))
    return bad


def opened_under(root: Path) -> set[Path]:
    root = root.absolute()
    return {p for e, t, _, _ in _Audit.events if e == "open" and _under(p := _path_of(t), root)}


class audited:
    def __enter__(self):
        _Audit.events = []
        _Audit.on = True
        return self

    def __exit__(self, *exc):
        _Audit.on = False


def snapshot(root: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        out[str(d)] = ("dir", sorted(dirnames), sorted(filenames), os.lstat(d).st_mtime_ns)
        for name in filenames:
            p = d / name
            st = os.lstat(p)
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else os.readlink(p)
            out[str(p)] = ("file", digest, st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def set_writable(root: Path, writable: bool) -> None:
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                p.chmod(0o644 if writable else 0o444)
        Path(dirpath).chmod(0o755 if writable else 0o555)


# -- a sessions root with everything the harness would touch on load -------------------------


def build_root(root: Path) -> None:
    seed = root / "cwd-0123456789ab"
    seed.mkdir(parents=True)
    for name in ("clean-multi-turn", "capture-divergence", "torn-tail", "repaired-resume"):
        shutil.copy(SAMPLES / f"{name}.jsonl", seed / f"{name}.jsonl")
        shutil.copy(SAMPLES / f"{name}.requests.jsonl", seed / f"{name}.requests.jsonl")
    fork = root / "cwd-fork00000000"
    shutil.copytree(SAMPLES / "fork", fork)
    late = root / "--home-dev-proj--"
    for i, name in enumerate(("delta-tools", "compaction")):
        d = late / f"late-{i}"
        d.mkdir(parents=True)
        data = (SAMPLES / f"{name}.jsonl").read_bytes()
        (d / "session.jsonl.zstd").write_bytes(to_zstd(data) if i == 0 else to_zstd(data)[:-9])  # the second is torn
        shutil.copy(SAMPLES / f"{name}.requests.jsonl", d / "requests.jsonl")
    open_turn = Log("open-turn")
    open_turn.clean_turn(1, header_reason="initial")
    open_turn.turn_start(2)
    open_turn.user("still typing")  # the harness appends interrupted closers here on load
    open_turn.write(seed / "open-turn.jsonl")
    from invariants.read.sqlite_backend import write_database
    from tests.support.logs import Log as _Log

    db_log = _Log("in-db")
    db_log.clean_turn(1, header_reason="initial")
    db = root / "store" / "sessions.sqlite"
    db.parent.mkdir()
    write_database(db, [(db_log.header, db_log.events)], schema="seed")
    import sqlite3

    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")  # a reader would need -shm beside it
    con.close()


@pytest.fixture
def readonly_root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    build_root(root)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the result cache, index and exports go here, outside the root
    before = snapshot(root)
    set_writable(root, False)
    yield root, work
    set_writable(root, True)
    set_writable(root, False)  # the mode is part of the snapshot: compare it as it was made read-only
    after = snapshot(root)
    set_writable(root, True)
    ro_before = {k: (v[:4] if v[0] == "file" else v[:3]) for k, v in before.items()}
    ro_after = {k: (v[:4] if v[0] == "file" else v[:3]) for k, v in after.items()}
    assert ro_after == ro_before, "the root changed: " + ", ".join(
        k for k in set(ro_after) ^ set(ro_before) or [k for k in ro_after if ro_after[k] != ro_before[k]]
    )


def test_check_replay_index_and_reports_never_write_a_log(readonly_root, capsys):
    root, work = readonly_root
    runs = [
        ["check", str(root)],
        ["check", str(root), "--format", "json", "--no-cache"],
        ["check", str(root), "--format", "sarif", "--ledger", str(work / "ledger.json")],
        ["check", str(root), "--write-baseline", str(work / "baseline.json")],
        ["check", str(root / "cwd-0123456789ab" / "torn-tail.jsonl"), "--format", "junit"],
        ["check", str(root / "store" / "sessions.sqlite")],
        ["replay", str(root / "cwd-0123456789ab" / "open-turn.jsonl")],
        ["replay", str(root / "--home-dev-proj--" / "late-1" / "session.jsonl.zstd")],
        ["index", str(root), "--db", str(work / "x.db"), "-j", "1", "-q"],
        ["index", str(root), "--db", str(work / "x.db"), "-j", "1", "-q"],  # incremental: resumes, stats, reads again
        ["sessions", "--db", str(work / "x.db")],
        ["query", "select * from findings", "--db", str(work / "x.db")],
        ["cache-report", str(root)],
    ]
    with audited():
        for argv in runs:
            with hang_guard(120):
                code = main(argv)
            capsys.readouterr()
            assert code in (0, 1, 2), argv
    assert writes_under(root) == []
    assert opened_under(root), "the audit hook saw nothing: the test would be vacuous"
    # the same in worker processes (no audit hook there: the snapshot comparison covers them)
    for argv in (
        ["check", str(root), "--jobs", "2", "--no-cache"],
        ["index", str(root), "--db", str(work / "y.db"), "-j", "2", "-q"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "inspector.cli", *argv], capture_output=True, text=True, timeout=300, cwd=work
        )
        assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, proc.stderr


async def test_the_tui_never_writes_a_log(readonly_root):
    from inspector.screens.session import SessionScreen
    from tests.support.tui_helpers import create_app, settle

    root, work = readonly_root
    with audited():
        for target in (
            root,
            root / "cwd-0123456789ab" / "open-turn.jsonl",
            root / "--home-dev-proj--" / "late-1" / "session.jsonl.zstd",
        ):
            app = create_app(target)
            async with app.run_test(size=(140, 40)) as pilot:
                await settle(pilot)
                for key in ("enter", "j", "5", "6", "n"):
                    await pilot.press(key)
                    await settle(pilot, rounds=1)
                screen = app.screen
                assert isinstance(screen, SessionScreen), type(screen)
                screen.export_request(work / "exported.json")
                await settle(pilot, rounds=1)
                screen.export_request(Path(screen.source.path))  # onto the log itself: refused
                await settle(pilot, rounds=1)
    assert writes_under(root) == []


@pytest.mark.parametrize("flag", ["--output", "--ledger", "--write-baseline"])
@pytest.mark.parametrize("victim", ["s.jsonl", "s.requests.jsonl"])
def test_report_files_onto_an_input_are_refused(tmp_path, capsys, flag, victim):
    log = tmp_path / "s.jsonl"
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", log)
    shutil.copy(SAMPLES / "clean-multi-turn.requests.jsonl", tmp_path / "s.requests.jsonl")
    before = (tmp_path / victim).read_bytes()
    code = main(["check", str(tmp_path), "--no-cache", flag, str(tmp_path / victim)])
    assert code == 2 and "one of the inputs" in capsys.readouterr().err
    assert (tmp_path / victim).read_bytes() == before


@pytest.mark.parametrize("victim", [0, 1, 2])
def test_the_capture_of_any_folder_of_a_root_is_refused_as_a_report_file(tmp_path, capsys, victim):
    """Each folder's captures are looked up in that folder's own listing (the victim's capture name is
    in no other folder), whichever folder comes first."""
    for i in range(3):
        folder = tmp_path / "--home-dev-proj--" / f"s{i}"
        folder.mkdir(parents=True)
        shutil.copy(SAMPLES / "clean-multi-turn.jsonl", folder / "session.jsonl")
        name = "requests.jsonl" if i == victim else "session.requests.jsonl"
        shutil.copy(SAMPLES / "clean-multi-turn.requests.jsonl", folder / name)
    target = tmp_path / "--home-dev-proj--" / f"s{victim}" / "requests.jsonl"
    before = target.read_bytes()
    code = main(["check", str(tmp_path), "--no-cache", "--output", str(target)])
    assert code == 2 and "one of the inputs" in capsys.readouterr().err
    assert target.read_bytes() == before


@pytest.mark.parametrize("victim", ["s.jsonl", "s.requests.jsonl"])
def test_a_report_file_linked_to_an_input_is_refused(tmp_path, capsys, victim):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", logs / "s.jsonl")
    shutil.copy(SAMPLES / "clean-multi-turn.requests.jsonl", logs / "s.requests.jsonl")
    before = (logs / victim).read_bytes()
    (tmp_path / "via").symlink_to(logs)  # the input named through a linked folder
    (tmp_path / "out.json").symlink_to(logs / victim)
    code = main(["check", str(tmp_path / "via"), "--no-cache", "--output", str(tmp_path / "out.json")])
    assert code == 2 and "one of the inputs" in capsys.readouterr().err
    assert (logs / victim).read_bytes() == before
    code = main(["check", str(tmp_path / "via"), "--no-cache", "--output", str(tmp_path / "new.json")])
    assert code == 0 and (tmp_path / "new.json").is_file()  # a file that does not exist yet is no input


# -- confinement ----------------------------------------------------------------------------

HOSTILE_PARENTS = [
    "outside",
    "..",
    "../outside",
    "../../outside",
    "/tmp/outside",
    "{abs}",
    "{abs}/session",
    "..\\outside",
    "~002E~002E",
    "%2e%2e/outside",
    "outside\x00",
    "./outside",
    "~002E~002E~002Foutside",
]


def _decoys(base: Path, ids: list[str]) -> list[Path]:
    """Logs outside the root at every place a hostile id could point, each claiming to be that parent."""
    out = []
    for pid in ids:
        parent = Log(pid)
        parent.clean_turn(1, header_reason="initial")
        for p in (
            base / "outside.jsonl",
            base / "outside" / "session.jsonl",
            base / "outside" / "outside.jsonl",
            base.parent / "outside.jsonl",
            base / ".." / "outside.jsonl",
        ):
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                parent.write(p)
                out.append(p.resolve())
    return out


@pytest.mark.parametrize("layout", ["flat", "seed", "late"])
def test_parent_session_ids_never_leave_the_root(tmp_path, capsys, layout):
    base = tmp_path / "base"
    root = base / "root"
    root.mkdir(parents=True)
    ids = [p.replace("{abs}", str(base / "outside")) for p in HOSTILE_PARENTS]
    decoys = _decoys(base, ids)
    for i, pid in enumerate(ids):
        parent = Log(pid)
        parent.clean_turn(1, header_reason="initial")
        child = Log(f"child{i}", parentSession=pid, seedLength=len(parent.events))
        child.events = [dict(e) for e in parent.events]
        child.clean_turn(2, header_reason="resume")
        where = {
            "flat": root / f"child{i}.jsonl",
            "seed": root / "cwd-000000000000" / f"child{i}.jsonl",
            "late": root / "--proj--" / f"child{i}" / "session.jsonl",
        }[layout]
        where.parent.mkdir(parents=True, exist_ok=True)
        child.write(where)
    # a capture whose hints point out of the folder
    cap = [
        {"sessionId": "outside", "sessionFile": hint, "logLength": 1, "request": {"messages": []}}
        for hint in (
            "../outside.jsonl",
            str(base / "outside.jsonl"),
            "..",
            "../../outside.jsonl",
            "outside/../../outside.jsonl",
        )
    ]
    first = next(root.rglob("*.jsonl"))
    (first.parent / "requests.jsonl").write_text("\n".join(json.dumps(c) for c in cap) + "\n")
    with audited():
        code = main(["check", str(root), "--format", "json", "--no-cache"])
        for p in sorted(root.rglob("child*.jsonl")) + sorted(root.rglob("session.jsonl")):
            main(["check", str(p), "--format", "json", "--no-cache"])  # a log named alone: its folder is the root
    out = capsys.readouterr().out
    assert code == 1
    opened = {p.resolve() for p in opened_under(base)}
    assert not opened & set(decoys), f"opened outside the root: {sorted(opened & set(decoys))}"
    report = json.loads(out.split("\n}\n")[0] + "\n}")
    frk = [f for f in report["findings"] if f["rule"].startswith("FRK")]
    assert len([f for f in frk if f["rule"] == "FRK003"]) == len(ids)  # none found, none compared
    assert not [f for f in frk if f["rule"] == "FRK001"]


def test_symlinks_in_a_root_are_not_followed_and_loops_do_not_hang(tmp_path, capsys):
    base = tmp_path / "base"
    root = base / "root"
    (root / "a").mkdir(parents=True)
    outside = base / "outside"
    outside.mkdir()
    secret = outside / "secret.jsonl"
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", secret)
    shutil.copy(SAMPLES / "clean-multi-turn.requests.jsonl", outside / "requests.jsonl")
    shutil.copy(SAMPLES / "delta-tools.jsonl", root / "a" / "real.jsonl")
    (root / "a" / "loop").symlink_to(root / "a", target_is_directory=True)
    (root / "up").symlink_to(root, target_is_directory=True)
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "a" / "link.jsonl").symlink_to(secret)
    (root / "a" / "requests.jsonl").symlink_to(outside / "requests.jsonl")
    (root / "a" / "dangling.jsonl").symlink_to(base / "nowhere.jsonl")
    (root / "a" / "self.jsonl").symlink_to(root / "a" / "self.jsonl")  # a link loop of its own
    with audited(), hang_guard(60):
        code = main(["check", str(root), "--format", "json", "--no-cache"])
    report = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert [s["file"] for s in report["sessions"]] == [str(root / "a" / "real.jsonl")]
    assert not {p.resolve() for p in opened_under(base)} & {secret.resolve(), (outside / "requests.jsonl").resolve()}


# -- the index never blocks a reader ----------------------------------------------------------


def test_a_running_indexer_never_blocks_readers(tmp_path):
    """The indexer is stopped inside its write transaction (the index's own test hook); meanwhile
    ``sessions`` and ``query`` answer at once from the committed state (WAL, read-only opens)."""
    from tests.support.logs import make_root

    base = tmp_path / "sessions"
    make_root(base, n=6)
    db = tmp_path / "index.db"
    env = {**os.environ, "INSPECTOR_INDEX_PAUSE_AT": "3", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector.cli", "index", str(base), "--db", str(db), "--jobs", "1"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "paused" in line, line
        for argv in (
            ["sessions", "--db", str(db), "--format", "json"],
            ["query", "select count(*) from sessions", "--db", str(db)],
        ):
            t0 = time.monotonic()
            reader = subprocess.run(
                [sys.executable, "-m", "inspector.cli", *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
            )
            assert reader.returncode == 0, reader.stderr
            assert time.monotonic() - t0 < 20, "a reader waited on the writer's lock"
            assert "locked" not in reader.stderr
        assert proc.poll() is None  # the writer is still inside its transaction
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.parametrize("kind", [b'{"a":1}', b"[1]"])
def test_a_lone_chunk_whose_type_is_not_a_string_is_a_finding(tmp_path, capsys, kind):
    """A chunk read alone (here: one line per zstd frame, so no run) with an object or an
    array for its type once raised TypeError in the fold's fast path."""
    lines = (SAMPLES / "compaction.jsonl").read_bytes().split(b"\n")
    delta, chunk = b'"type":"text-delta"', b'"assistant/chunk"'
    at = next(i for i, line in enumerate(lines) if delta in line and chunk in lines[i - 1])
    lines[at] = lines[at].replace(b'"type":"text-delta"', b'"type":' + kind, 1)
    log = tmp_path / "s.jsonl.zstd"
    log.write_bytes(to_zstd(b"\n".join(lines), batch=1))
    rc = main(["check", str(log), "--no-cache", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1
    seq = json.loads(lines[at])["seq"]
    assert [(f["rule"], f["seq"]) for f in report["findings"]] == [("EVT011", seq)]


def test_the_journal_of_a_store_read_is_refused_as_a_report_file(tmp_path, capsys):
    """SQLite reads a store with its write-ahead log: a report renamed over it loses sessions."""
    import sqlite3

    from invariants.read.sqlite_backend import write_database

    log = Log("in-db")
    log.clean_turn(1, header_reason="initial")
    db = tmp_path / "store" / "sessions.sqlite"
    db.parent.mkdir()
    write_database(db, [(log.header, log.events)], schema="seed")
    writer = sqlite3.connect(db)  # held open: its -wal and -shm stay beside the store
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("CREATE TABLE IF NOT EXISTS kept (x)")
        writer.commit()
        wal = tmp_path / "store" / "sessions.sqlite-wal"
        assert wal.exists()
        before = wal.read_bytes()
        code = main(["check", str(tmp_path), "--no-cache", "--output", str(wal)])
        assert code == 2 and "one of the inputs" in capsys.readouterr().err
        assert wal.read_bytes() == before
    finally:
        writer.close()


def test_a_rerun_over_its_own_report_lists_no_input_for_it(tmp_path, monkeypatch):
    """A report named like no log, capture or database, and with one name, cannot be an input: the
    folders named are not walked to find out (a rerun of a check of a large root, or of a bucket,
    listed it all once more before starting).  A target the walk could find still is looked for."""
    import argparse

    from inspector.commands import check as check_command
    from invariants.read import discover

    walked: list = []
    real = discover.iter_discover

    def recording(paths, problems, *rest, **kw):
        walked.append(list(paths))
        return real(paths, problems, *rest, **kw)

    monkeypatch.setattr(discover, "iter_discover", recording)
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", logs / "s.jsonl")
    report = tmp_path / "report.json"
    report.write_text("{}")

    def args(target: Path, *paths: str) -> argparse.Namespace:
        return argparse.Namespace(
            paths=list(paths), captures=None, output=str(target), write_baseline=None, ledger=None
        )

    assert check_command._written_input(args(report, str(logs), "memory://bucket/sessions")) is None
    assert walked == []
    os.link(report, tmp_path / "other-name.json")  # a second name: it could be an input under it
    assert check_command._written_input(args(report, str(logs), "memory://bucket/sessions")) is None
    assert walked == [[str(logs)]]  # walked, and the URL left out: a bucket never holds this file
    named_like_a_log = tmp_path / "old.jsonl"
    named_like_a_log.write_text("{}")
    assert check_command._written_input(args(named_like_a_log, str(logs))) is None
    assert len(walked) == 2
    os.link(logs / "s.jsonl", tmp_path / "s-report.json")
    assert "one of the inputs" in check_command._written_input(args(tmp_path / "s-report.json", str(logs)))
