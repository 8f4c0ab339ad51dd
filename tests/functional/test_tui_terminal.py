"""The TUI in a real terminal (tmux) at 80x24 and 200x50: it opens, keys work, the session list's findings
column and ``q Quit`` are on screen at 80x24, ``q`` quits cleanly (exit 0), and no escape sequence from log
text reaches the terminal (the pane's raw output is recorded with ``pipe-pane``).

Skipped when tmux is not installed (``apt-get install -y tmux``); ``.ci/run`` installs it when it can.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.logs import story_log

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = (
    "clip \x1b]52;c;ZXZpbA==\x07 title \x1b]0;pwned\x07 clear \x1b[2J [link=https://evil.example]x[/link] c1\x9b31m"
)
# what log text would put on the wire if it were not made inert
RAW = [b"\x1b]52;", b"\x1b]0;pwned", b"\xc2\x9b31m", b"evil.example\x1b"]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)")


class Pane:
    """One tmux server of our own (its own socket) running one command in a pane of a given size."""

    def __init__(self, tmp: Path, size: tuple[int, int], command: str) -> None:
        self.socket = f"inspector-test-{uuid.uuid4().hex[:8]}"
        self.raw = tmp / f"pane-{size[0]}x{size[1]}.bytes"
        env = {
            "PYTHONPATH": str(ROOT),
            "INSPECTOR_CONFIG_DIR": str(tmp / "config"),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # COLUMNS/LINES (pytest sets them) would override the pane's size
        script = f"cd {shlex.quote(str(tmp))} && env -u COLUMNS -u LINES {exports} {command}; echo EXIT=$?; sleep 120"
        self._tmux("new-session", "-d", "-s", "t", "-x", str(size[0]), "-y", str(size[1]), script)
        self._tmux("pipe-pane", "-o", "-t", "t", f"cat >> {shlex.quote(str(self.raw))}")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, check=True
        ).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        for k in keys:
            self._tmux("send-keys", "-t", "t", k)
            time.sleep(0.15)

    def wait(self, *texts: str, timeout: float = 90.0) -> str:
        end = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if all(t in shown for t in texts):
                return shown
            if time.monotonic() > end:
                raise AssertionError(f"not on screen in {timeout:.0f}s: {texts}\n{shown}")
            time.sleep(0.2)

    def wait_gone(self, text: str, timeout: float = 90.0) -> None:
        end = time.monotonic() + timeout
        while text in self.screen():
            if time.monotonic() > end:
                raise AssertionError(f"still on screen after {timeout:.0f}s: {text}\n{self.screen()}")
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def hostile_root(tmp_path):
    root = tmp_path / "logs"  # not "sessions": `inspector sessions` is a command
    root.mkdir()
    story_log(root, hostile=HOSTILE)
    (root / "again").mkdir()
    story_log(root / "again")
    return tmp_path


def _inspector(*args: str) -> str:
    return " ".join([shlex.quote(sys.executable), "-m", "inspector.cli", *map(shlex.quote, args)])


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_the_app_in_a_real_terminal(size, hostile_root):
    pane = Pane(hostile_root, size, _inspector("logs"))
    try:
        pane.wait("sessions under", "sessions checked", "q Quit")
        pane.wait_gone("checking…")  # a capture can fall between the status bar's frame and the rows'
        shown = pane.screen()
        lines = shown.splitlines()
        header = next(line for line in lines if "session" in line and "file" in line)
        assert "findings" in header
        rows = [line for line in lines if "story.jsonl" in line]
        assert len(rows) == 2 and all("✗1" in row for row in rows)  # the findings column, with the error
        assert "again/story.jsonl" in shown  # paths relative to the root
        assert "? Help" in lines[-1] and "q Quit" in lines[-1]
        pane.keys("Enter")
        shown = pane.wait("story-session", "Findings 2", "q Quit")
        assert "? Help" in shown.splitlines()[-1]
        pane.keys("n")
        shown = pane.wait("DIV001")
        pane.keys("1")  # the Request tab (the blame view) shows the hostile user message, inert
        shown = pane.wait("Rebuilt request", "model:")
        pane.keys("?")
        pane.wait("keys of the session screen")
        pane.keys("Escape")  # the help closes ...
        pane.wait_gone("keys of the session screen")
        pane.keys("Escape")  # ... and the session goes back to the list
        pane.wait("sessions under")
        pane.keys("q")
        pane.wait("EXIT=0")
    finally:
        pane.close()
    raw = pane.raw.read_bytes()
    assert raw, "pipe-pane recorded nothing"
    for seq in RAW:
        assert seq not in raw, f"{seq!r} from the log reached the terminal"
    # the only OSC the app writes is Textual's pointer shape; no bell rang (the log's BELs show as \x07)
    assert set(re.findall(rb"\x1b\][^\x07\x1b]*", raw)) <= {b"\x1b]22;default"}
    assert raw.count(b"\x07") == raw.count(b"\x1b]22;default\x07")


def test_the_hostile_text_is_on_screen_as_visible_escapes(hostile_root):
    log = hostile_root / "logs" / "story.jsonl"
    pane = Pane(hostile_root, (200, 50), _inspector(str(log), "--at", "1.1"))
    try:
        shown = pane.wait("[0] prefix", "[/link]")
        assert "\\x1b]52;c;ZXZpbA==\\x07" in shown or "\\u001b]52;c;ZXZpbA==\\u0007" in shown
        assert "[link=https://evil.example]x[/link]" in shown  # markup shown as text
        pane.keys("q")
        pane.wait("EXIT=0")
    finally:
        pane.close()
    assert os.path.getsize(pane.raw) > 0
