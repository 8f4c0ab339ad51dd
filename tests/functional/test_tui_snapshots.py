"""SVG snapshots of the main TUI screens, so a layout regression shows up in review.

Each case drives the real app to a screen and compares ``app.export_screenshot()``
with the committed ``tests/snapshots/<name>.svg``.  After an intended change,
regenerate them and look at the new pictures before committing::

    TUI_SNAPSHOT_UPDATE=1 python -m pytest tests/functional/test_tui_snapshots.py tests/functional/test_tui_textdiff.py

On a mismatch the new SVG is written beside the test's tmp dir and the first
differing screen line is shown.  The pictures are Textual's exact rendering: they
are compared only under the Textual release they were made with
(``SNAPSHOT_TEXTUAL``; update it with the pictures), and the comparison is skipped,
with that reason, under any other (the screens are still driven).  Logs are opened by relative paths from a
fixed working directory so no tmp path appears on screen.
"""

from __future__ import annotations

import difflib
import html
import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.support.logs import story_header, story_log, story_session
from tests.support.tui_helpers import create_app, settle, wait_for

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("TUI_SNAPSHOT_UPDATE") == "1"
SNAPSHOT_TEXTUAL = "8.2.8"  # the Textual release the committed pictures were rendered with

NARROW = (100, 30)
WIDE = (160, 45)

CASES = [
    # tall enough for the whole blame view of step 1.1: a scrollbar drawn by the first app of a process
    # differs from later apps', so a snapshot with one would depend on the test order
    ("session-request-narrow", (100, 40), []),
    ("session-diff-narrow", NARROW, ["n"]),
    ("session-diff-wide", WIDE, ["n"]),
    ("session-header-wide", WIDE, ["j", "3"]),
    ("session-prefix-narrow", NARROW, ["right_square_bracket", "4"]),
    ("session-events-wide", WIDE, ["n", "e"]),
    ("session-findings-narrow", NARROW, ["6"]),
    ("help-narrow", (100, 50), ["question_mark"]),  # the whole help, no scrollbar (see above); 80x24 scrolls
    ("session-diff-80x24", (80, 24), ["n"]),
    ("help-80x24", (80, 24), ["question_mark"]),
    ("session-diff-light", NARROW, ["T", "n"]),
]


def screen_lines(svg: str) -> list[str]:
    """The text of an exported screen, one string per terminal row (for readable failures)."""
    rows: dict[str, list[str]] = {}
    for y, text in re.findall(r'<text[^>]*\by="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        rows.setdefault(y, []).append(html.unescape(text).replace("\xa0", " "))
    return ["".join(parts) for _, parts in sorted(rows.items(), key=lambda kv: float(kv[0]))]


def check_snapshot(name: str, svg: str, tmp_path: Path) -> None:
    path = SNAPSHOTS / f"{name}.svg"
    installed = version("textual")
    if not UPDATE and installed != SNAPSHOT_TEXTUAL:
        pytest.skip(f"snapshot {name} was rendered by Textual {SNAPSHOT_TEXTUAL}; Textual {installed} is installed")
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"no snapshot {path}; create it with TUI_SNAPSHOT_UPDATE=1 and look at it before committing")
    expected = path.read_text(encoding="utf-8")
    if svg != expected:
        actual = tmp_path / f"{name}.svg"
        actual.write_text(svg, encoding="utf-8")
        diff = "\n".join(
            difflib.unified_diff(screen_lines(expected), screen_lines(svg), "committed", "now", n=1, lineterm="")
        )
        pytest.fail(
            f"screen {name} changed; new picture: {actual}\n{diff or '(same text, different styles or layout)'}"
        )


async def _shoot(app, keys: list[str], size: tuple[int, int]) -> str:
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: getattr(app.screen, "state", True) is not None)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        return app.export_screenshot(title="inspector")


@pytest.mark.parametrize("name,size,keys", CASES, ids=[c[0] for c in CASES])
async def test_session_screen_snapshot(name, size, keys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    check_snapshot(name, await _shoot(app, keys, size), tmp_path)


async def test_session_list_snapshot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "sessions"
    root.mkdir()
    story_log(root)
    other = story_session("other-session", cwd="/srv/other", created=1783987200000)
    other.user_turn("x")
    other.streamed_step("y", header_reason="initial", header=story_header())
    other.end_turn()
    other.write(root / "other.jsonl")
    app = create_app("sessions")
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: getattr(app.screen, "finished", False))
        await pilot.pause(0.2)
        svg = app.export_screenshot(title="inspector")
    check_snapshot("session-list-narrow", svg, tmp_path)
