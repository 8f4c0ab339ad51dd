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


def test_a_terminal_gets_a_bar_and_stdout_stays_the_report() -> None:
    primary, secondary = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector.cli", "check", str(SAMPLES), "--no-cache", "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=secondary,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    os.close(secondary)
    shown = b""
    stdout, _ = b"", None
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
    text = shown.decode(errors="replace")
    assert "inspector check" in text and "sessions" in text, text[-2000:]  # the bar was drawn on the terminal
    assert "\x1b[" in text  # as a terminal display (cursor movement), not plain lines
    assert stdout.startswith(b"{") and b"inspector check" not in stdout


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
