"""Progress on stderr: a bar on a terminal, plain lines in a CI log, nothing with -q, never on stdout."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import inspector.progress as progress_module
from inspector.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"


@pytest.fixture
def every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain line at every session (the real interval is seconds)."""
    monkeypatch.setattr(progress_module, "EVERY", 0.0)


def test_not_a_terminal_gives_plain_lines_on_stderr_only(capsys, every_line) -> None:
    code = main(["check", str(SAMPLES), "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1  # the samples diverge on purpose
    lines = [x for x in err.splitlines() if x.startswith("inspector: check ")]
    assert lines, err
    assert all(" sessions, " in x and " MB, " in x and "sessions/s" in x for x in lines)
    assert "inspector: check" not in out and out.startswith("{")


def test_quiet_shows_no_progress(capsys, every_line) -> None:
    main(["check", str(SAMPLES), "--no-cache", "--format", "json", "-q"])
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("{")


def _on_a_terminal(term: str) -> tuple[str, bytes]:
    """What a check of the samples shows on a terminal of type ``term`` (its stderr), and its stdout;
    plain lines, if any, at every session."""
    primary, secondary = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TERM": term}
    code = (
        "import sys, inspector.progress as p; p.EVERY = 0.0; from inspector.cli import main; "
        f"sys.exit(main(['check', {str(SAMPLES)!r}, '--no-cache', '--format', 'json']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=secondary,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    os.close(secondary)
    shown = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        elif proc.poll() is not None:
            break
    stdout = proc.stdout.read() if proc.stdout else b""
    proc.wait(timeout=60)
    os.close(primary)
    return shown.decode(errors="replace"), stdout


def test_a_terminal_gets_a_bar_and_stdout_stays_the_report() -> None:
    text, stdout = _on_a_terminal("xterm")
    assert "inspector check" in text and "sessions" in text, text[-2000:]  # the bar was drawn on the terminal
    assert "\x1b[" in text  # as a terminal display (cursor movement), not plain lines
    assert "inspector: check " not in text
    assert stdout.startswith(b"{") and b"inspector check" not in stdout


def test_a_dumb_terminal_gets_plain_lines() -> None:
    """TERM=dumb: rich draws no bar there, and the run said nothing at all."""
    text, stdout = _on_a_terminal("dumb")
    lines = [x for x in text.splitlines() if x.startswith("inspector: check ")]
    assert lines and all("sessions/s" in x for x in lines), text[-2000:]
    assert "\x1b[" not in text
    assert stdout.startswith(b"{")


def test_plain_lines_go_on_while_nothing_is_done_and_stop_when_closed() -> None:
    """A large folder is planned for seconds before its first session is done: a CI log still gets
    its line every few seconds, and none once the command closed its progress."""
    stream = io.StringIO()
    shown = progress_module.PlainProgress("check", stream=stream, every=0.2)
    deadline = time.monotonic() + 30
    while stream.getvalue().count("\n") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    shown.close()
    said = stream.getvalue()
    assert said.count("inspector: check 0 sessions") >= 2, said
    time.sleep(0.5)
    assert stream.getvalue() == said


def test_the_time_left_is_measured_from_the_first_session_done() -> None:
    """Not from the start: an hour of planning before the first session made its estimate absurd."""
    shown = progress_module.PlainProgress("check", stream=io.StringIO(), every=3600)
    shown.started -= 3600
    shown.set_total(100)
    shown.advance(1)
    assert shown.left() is None  # one session says nothing yet of how fast they go
    assert shown.first is not None
    shown.first = (shown.first[0] - 2, *shown.first[1:])  # two seconds later...
    shown.advance(9)  # ...nine more: 4.5 a second, 90 left
    left = shown.left()
    assert left is not None and 19 <= left <= 21
    assert 4 <= shown.rate() <= 5
    assert "about 20s left" in shown.line() or "about 19s left" in shown.line()
    shown.close()


def _root_of(tmp_path: Path, sessions: int) -> Path:
    root = tmp_path / "root"
    for i in range(sessions):
        folder = root / "--home-dev-proj--" / f"s{i}"
        folder.mkdir(parents=True)
        (folder / "session.jsonl").write_bytes((SAMPLES / "clean-multi-turn.jsonl").read_bytes())
    return root


def _total_of(shown: progress_module.Progress, seconds: float = 30) -> int | None:
    deadline = time.monotonic() + seconds
    while shown.total is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return shown.total


def test_a_folder_is_counted_by_a_process_of_its_own(tmp_path, monkeypatch) -> None:
    """Walked by a thread of the check, the count took the GIL from it at every file: the check ran
    20-30 % slower and its total came as it ended.  Nothing of the count runs in this process."""
    from invariants.read import discover

    root = _root_of(tmp_path, 12)
    size = (SAMPLES / "clean-multi-turn.jsonl").stat().st_size

    def not_here(*args, **kwargs):
        raise AssertionError("the count walked in the check's own process")

    monkeypatch.setattr(discover, "iter_discover", not_here)
    shown = progress_module.Progress("check")
    stop = progress_module.count_in_background(shown, [root])
    try:
        assert _total_of(shown) == 12
        assert shown.total_bytes == 12 * size
    finally:
        stop()


def test_named_log_files_are_counted_at_once_and_a_stopped_count_leaves_nothing(tmp_path) -> None:
    from tests.support.processes import descendants

    root = _root_of(tmp_path, 2)
    first, second = sorted(root.rglob("session.jsonl"))
    (tmp_path / "alias.jsonl").symlink_to(first)
    shown = progress_module.Progress("check")
    progress_module.count_in_background(shown, [first, tmp_path / "alias.jsonl", second])()
    assert shown.total == 2  # known when the call returns: the same file named twice is one log
    before = set(descendants(os.getpid()))  # (an earlier test's fork server may live on)
    busy = progress_module.Progress("check")
    stop = progress_module.count_in_background(busy, [root])
    assert len(set(descendants(os.getpid())) - before) == 1  # the count
    stop()
    assert set(descendants(os.getpid())) <= before


def test_a_fork_waits_for_a_display_to_finish_drawing() -> None:
    """A worker forked while a display thread held stderr's lock would wait for ever on its first
    line to stderr: the fork waits for the drawing, and the new process can draw."""
    import threading

    held = threading.Event()

    def draw() -> None:
        with progress_module.DRAWING:
            held.set()
            time.sleep(0.5)

    drawer = threading.Thread(target=draw)
    drawer.start()
    held.wait()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the new process: it can draw at once
        os._exit(0 if progress_module.DRAWING.acquire(timeout=1) else 1)
    waited = time.monotonic() - started
    drawer.join()
    _, status = os.waitpid(pid, 0)
    assert waited >= 0.3
    assert os.waitstatus_to_exitcode(status) == 0
