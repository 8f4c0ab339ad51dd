"""Progress on stderr: a bar on a terminal, plain lines in a CI log, nothing with -q, never on stdout."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
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
