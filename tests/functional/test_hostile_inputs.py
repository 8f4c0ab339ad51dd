"""Issue 34, items 1 and 7: a pipe or a device named like a log never blocks a command (inside a folder it
is skipped with a note; named directly it is one line and exit 2), and a symlink loop named on the command
line is one line, never a traceback."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.support.tui_helpers import create_app, wait_for

ROOT = Path(__file__).resolve().parents[2]
LOG = SAMPLES / "prefix-unstable.jsonl"


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in its own process: a hang is a timeout here, not a stuck test run."""
    return subprocess.run(
        [sys.executable, "-m", "inspector.cli", *argv], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def _specials(folder: Path) -> list[str]:
    """A FIFO and (as root) a character device named like logs and a database, beside a real log."""
    folder.mkdir()
    shutil.copy(LOG, folder / "real.jsonl")
    os.mkfifo(folder / "pipe.jsonl")
    os.mkfifo(folder / "store.db")
    names = ["pipe.jsonl", "store.db"]
    if os.geteuid() == 0:
        os.mknod(folder / "dev.jsonl.zstd", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: never ends
        names.append("dev.jsonl.zstd")
    return names


@pytest.mark.parametrize("command", [["check", "--no-cache"], ["cache-report"]])
def test_a_folder_with_a_pipe_or_device_is_read_around_them(tmp_path, command):
    names = _specials(tmp_path / "d")
    done = _run(command[0], "d", *command[1:], cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 1), done.stderr
    if command[0] == "check":
        assert done.returncode == 1 and "PFX001" in done.stdout  # the real log was checked
        for name in names:
            assert f"inspector: note: d/{name}: not a regular file; skipped" in done.stderr


def test_index_of_a_folder_with_a_pipe_indexes_the_rest(tmp_path):
    _specials(tmp_path / "d")
    done = _run("index", "d", "--db", "i.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 sessions" in done.stdout + done.stderr
    assert f"inspector: note: {tmp_path / 'd' / 'pipe.jsonl'}: not a regular file; skipped" in done.stderr


@pytest.mark.parametrize("command", [["check", "--exit-zero"], ["replay"], ["index"], ["cache-report"]])
def test_a_pipe_named_directly_is_one_line_and_exit_2(tmp_path, command):
    os.mkfifo(tmp_path / "x.jsonl")
    done = _run(command[0], "x.jsonl", *command[1:], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("inspector: error:")]
    assert len(errors) == 1 and "x.jsonl" in errors[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["check", "--exit-zero"], ["replay"], ["index"], ["cache-report"]])
def test_a_symlink_loop_named_directly_is_one_line_and_exit_2(tmp_path, command):
    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    done = _run(command[0], "a.jsonl", *command[1:], cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("inspector: error:")]
    assert len(errors) == 1 and "symlink loop" in errors[0], done.stderr


@pytest.mark.parametrize("command", [["check", "--no-cache"], ["index", "--db", "i.db"]])
def test_links_and_a_pipe_named_like_logs_or_captures_are_each_a_note(tmp_path, command):
    """Links inside a folder are never followed (a loop cannot hang a walk): one named like a log or a
    capture, and a pipe named like a capture, are each said, so a gate that passes says what it left out."""
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copy(LOG, folder / "real.jsonl")
    shutil.copy(LOG, tmp_path / "elsewhere.jsonl")
    (folder / "linked.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (folder / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")  # a dangling link
    (folder / "real.requests.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    os.mkfifo(folder / "requests.jsonl")
    (folder / "notes.txt").symlink_to(tmp_path / "elsewhere.jsonl")  # not named like anything we read: no note
    done = _run(command[0], "d", *command[1:], cwd=tmp_path)
    assert "Traceback" not in done.stderr
    notes = sorted(ln for ln in done.stderr.splitlines() if ln.startswith("inspector: note:"))
    shown = str(folder) if command[0] == "index" else "d"
    assert notes == [
        f"inspector: note: {shown}/gone.jsonl: a symbolic link, not followed; skipped",
        f"inspector: note: {shown}/linked.jsonl: a symbolic link, not followed; skipped",
        f"inspector: note: {shown}/real.requests.jsonl: a symbolic link, not followed; skipped",
        f"inspector: note: {shown}/requests.jsonl: not a regular file; skipped",
    ], done.stderr
    assert done.returncode in (0, 1), done.stderr
    assert "1 session" in done.stdout + done.stderr  # the real log alone


async def test_the_tui_opens_a_folder_with_a_pipe_and_quits_on_q(tmp_path, monkeypatch):
    from inspector.screens.session_list import SessionListScreen

    _specials(tmp_path / "d")
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", tmp_path / "d" / "clean.jsonl")  # two logs: the list stays
    monkeypatch.chdir(tmp_path)
    app = create_app("d")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionListScreen) and app.screen.finished, 60)
        assert len(app.screen.query_one("SessionTable").rows) == 2
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_code in (0, None)
    assert not app.is_running


@pytest.mark.parametrize("command", [["check", "--no-cache"], ["index", "--db", "i.db"]])
def test_a_file_url_folder_with_a_pipe_and_a_link_named_like_logs_is_read_around_them(tmp_path, command):
    """fsspec lists a pipe as type ``other``: the URL walk took it for a file, and opening it hung the
    check.  A pipe or a link under a URL is a note, as under a local path."""
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copy(LOG, folder / "real.jsonl")
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "linked.jsonl").symlink_to(folder / "real.jsonl")
    url = (folder).as_uri()
    done = _run(command[0], url, *command[1:], cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 1), done.stderr
    notes = sorted(ln for ln in done.stderr.splitlines() if ln.startswith("inspector: note:"))
    assert notes == [
        f"inspector: note: {url}/linked.jsonl: a symbolic link, not followed; skipped",
        f"inspector: note: {url}/pipe.jsonl: not a regular file; skipped",
    ], done.stderr
    assert "1 session" in done.stdout + done.stderr


@pytest.mark.parametrize("option", ["--config", "--baseline", "--ledger"])
@pytest.mark.parametrize("special", ["pipe", "/dev/zero"])
def test_a_pipe_or_a_device_named_as_a_settings_file_is_one_line_and_exit_2(tmp_path, option, special):
    """A configuration, a baseline or a ledger is read whole: a pipe blocked the command for ever, and
    /dev/zero would have been read until memory ran out."""
    if special == "pipe":
        os.mkfifo(tmp_path / "p")
        special = str(tmp_path / "p")
    done = _run("check", str(LOG), "--no-cache", option, special, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("inspector: error:")]
    assert len(errors) == 1 and special in errors[0] and "not a regular file" in errors[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def nested_root(tmp_path):
    """A root nested 100 folders deeper than the recursion limit, with a log at the bottom; removed after,
    deepest folder first (pytest's own clean-up, ``shutil.rmtree``, recurses and would fail on it)."""
    import sys

    deep = tmp_path / "r"
    folders = [str(deep)]
    for _ in range(max(1_100, sys.getrecursionlimit() + 100)):  # (pathlib's mkdir(parents=True) recurses too)
        folders.append(os.path.join(folders[-1], "a"))
    for folder in folders:
        os.mkdir(folder)
    log = os.path.join(folders[-1], "x.jsonl")
    shutil.copy(LOG, log)
    yield deep
    os.remove(log)
    for folder in reversed(folders):
        os.rmdir(folder)


@pytest.mark.parametrize("as_url", [False, True])
def test_a_root_nested_deeper_than_the_recursion_limit_is_walked(tmp_path, nested_root, as_url):
    """The walks recursed once a folder: a root 1,100 folders deep ended check and index in a
    RecursionError."""
    root = nested_root.as_uri() if as_url else str(nested_root)
    done = _run("check", root, "--no-cache", "--format", "concise", cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode == 1 and "x.jsonl" in done.stdout and "PFX001" in done.stdout, done.stderr
    if not as_url:
        done = _run("index", root, "--db", "i.db", cwd=tmp_path)
        assert done.returncode == 0 and "1 sessions" in done.stdout + done.stderr, done.stderr


@pytest.mark.parametrize("swapped", ["pipe", "link to a pipe"])
def test_a_log_swapped_for_a_pipe_after_the_walk_is_one_line_not_a_hang(tmp_path, monkeypatch, capsys, swapped):
    """The walk sees a regular file; a pipe put in its place before the log is read (a live fleet, a hostile
    writer) blocked the read for ever.  The read asks the open file what it is: a "cannot read" line, exit 2."""
    import signal

    from inspector.cli import main
    from invariants.gate import pipeline, unit

    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        shutil.copy(LOG, folder / name)
    real = unit.iter_units

    def swapping(sources, groups=unit.route_groups):
        for u in real(sources, groups):
            for s in u.sources:
                if s.path.name == "b.jsonl":
                    s.path.unlink()
                    if swapped == "pipe":
                        os.mkfifo(s.path)
                    else:
                        os.mkfifo(tmp_path / "fifo")
                        s.path.symlink_to(tmp_path / "fifo")
            yield u

    monkeypatch.setattr(pipeline, "iter_units", swapping)
    signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(20)  # a hang fails the test (KeyboardInterrupt) instead of the suite
    try:
        code = main(["check", str(folder), "--jobs", "1", "--no-cache", "-q"])
    finally:
        signal.alarm(0)
    err = capsys.readouterr().err
    assert code == 2 and err == f"inspector: error: {folder / 'b.jsonl'}: cannot read (not a regular file)\n"


@pytest.mark.parametrize("command", [["check", "--no-cache"], ["index", "--db", "i.db"]])
def test_a_pipe_and_a_link_named_like_a_named_logs_captures_are_each_a_note(tmp_path, command):
    """A log named on the command line has its capture looked up beside it, which passes over a link or
    a pipe; each is said, as a walk of the folder says it."""
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copy(LOG, folder / "real.jsonl")
    shutil.copy(LOG, tmp_path / "elsewhere.jsonl")
    os.mkfifo(folder / "real.requests.jsonl")
    (folder / "requests.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (folder / "requests.jsonl.zstd").mkdir()  # a folder of that name is no capture, and nothing to say
    done = _run(command[0], str(folder / "real.jsonl"), *command[1:], cwd=tmp_path)
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr
    notes = sorted(ln for ln in done.stderr.splitlines() if ln.startswith("inspector: note:"))
    assert notes == [
        f"inspector: note: {folder}/real.requests.jsonl: not a regular file; skipped",
        f"inspector: note: {folder}/requests.jsonl: a symbolic link, not followed; skipped",
    ], done.stderr
