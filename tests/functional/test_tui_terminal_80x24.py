"""At 80x24, in a real terminal (tmux), nothing essential is cut (issue 33): the session list keeps the error
counts and the path tail that tells sessions apart; the session screen keeps the error counts, the finding's
rule, path and sentence, the expected and recorded values, and the keys to quit and for help."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.functional.test_tui_terminal import Pane, _inspector

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
LATE = CORPUS / "upstream-late-era" / "core__agent-loop__invariant"

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)"),
    pytest.mark.skipif(not (LATE / "t02").is_dir(), reason="the real corpus (../shared/corpus) is not here"),
]


@pytest.fixture
def two_same_named(tmp_path) -> Path:
    """t02 and t04 of the corpus: both logs are named req-check/req-bare under folders that tell them apart."""
    root = tmp_path / "logs" / "core__agent-loop__invariant"
    for t in ("t02", "t04"):
        shutil.copytree(LATE / t, root / t)
    return tmp_path


def test_the_list_and_the_session_screen_at_80x24(two_same_named):
    pane = Pane(two_same_named, (80, 24), _inspector("logs"))
    try:
        shown = pane.wait("sessions under", "2 sessions checked", "q Quit")
        lines = shown.splitlines()
        assert "? Help" in lines[-1] and "q Quit" in lines[-1]
        header = next(line for line in lines if "session" in line and "file" in line)
        assert "findings ▼" in header  # worst first
        rows = [line for line in lines if ".jsonl" in line]
        assert len(rows) == 2
        assert "t02/req-check.jsonl" in rows[0] and "✗2" in rows[0]  # the worst first, its folder shown
        assert "t04/req-bare.jsonl" in rows[1]
        pane.keys("Enter")
        shown = pane.wait("Findings 3", "✗2", "q Quit")  # the session screen (the list also shows ✗2)
        assert "? Help" in shown.splitlines()[-1]
        pane.keys("n")
        # the recorded value is painted after the status line: wait for it too (the paint can come between)
        shown = pane.wait("[1/3] error DIV001 at messages[0]", "expected  <absent>", "  recorded")
        flat = " ".join(line.strip("│ ") for line in shown.splitlines())
        assert "the recorded request has 1 message the log does not" in flat  # the finding's sentence
        # both values on screen: nothing expected, the extra message recorded
        lines = shown.splitlines()
        at = next((i for i, line in enumerate(lines) if "  recorded" in line and "│" in line), None)
        assert at is not None, shown
        assert "system-reminder" in "".join(lines[at : at + 3]), shown
        assert "? Help" in shown.splitlines()[-1] and "q Quit" in shown.splitlines()[-1]
        pane.keys("e")
        shown = pane.wait("is extra in the recorded request")
        pane.keys("n")
        shown = pane.wait("[2/3] error DIV001 at messages[1]", "expected  <absent>")
        pane.keys("q")
        pane.wait("EXIT=0")
    finally:
        pane.close()
