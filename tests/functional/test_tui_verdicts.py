"""Verdicts side by side and one-shot captures on screen (issue 19, item 5)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from inspector.screens.dialogs import FilterScreen
from inspector.screens.state import DISAGREE
from inspector.widgets.diff_view import DiffView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import StatusLine
from inspector.widgets.timeline import Timeline
from tests.support.logs import story_log
from tests.support.tui_helpers import create_app, open_session, settle

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
ONE_SHOT_ONLY = CORPUS / "upstream-seed-era" / "compact__compact-basic__compact-basic" / "t33" / "summary.jsonl"
VIOLATED = "invariant violated: llm request diverges from the boundary derivation"


def _text(view) -> str:
    return "\n".join(b.text.plain for b in view.blocks)


def story_with_verdicts(folder: Path) -> Path:
    """The story, its capture carrying the harness's verdicts: all ok, so step 2.1 (which we find diverging)
    disagrees; step 1.2's shadow check agrees with us."""
    log, cap = story_log(folder)
    lines = [orjson.loads(line) for line in cap.read_bytes().splitlines()]
    for i, line in enumerate(lines):
        line["verdict"] = "ok" if i != 1 else "unchecked"
        line["shadowVerdict"] = "ok"
    cap.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return log


async def test_our_verdict_beside_the_harnesss_and_a_filter_for_disagreements(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_with_verdicts(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_session(app, pilot)
        assert "≠ 1 verdict differs from the harness's" in screen.query_one(StatusLine).plain
        await pilot.press("2")
        await settle(pilot)
        diff = screen.query_one(DiffView)
        assert "verdicts  ours: ok  │  harness: ok  │  shadow: ok" in _text(diff)
        assert "disagree" not in _text(diff)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, FilterScreen)
        options = app.screen.query_one("#categories")
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = ids.index(DISAGREE)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.category == DISAGREE
        assert screen.query_one(Timeline).visible_steps() == [2] and screen.step_index == 2
        shown = _text(diff)
        assert "verdicts  ours: diverges  │  harness: ok  │  shadow: ok  ≠ we and the harness disagree" in shown


async def test_one_shots_are_listed_under_their_step_and_counted(monkeypatch):
    monkeypatch.chdir(SAMPLES)
    app = create_app("compaction.jsonl")
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_session(app, pilot)
        bar = str(screen.query_one("#session-bar").content)
        assert "9 recorded: 7 compared, 2 one-shot" in bar
        step = next(st.index for st in screen.state.steps if (st.turn, st.step) == (1, 4))
        screen.step_index = step
        await pilot.press("2")
        await settle(pilot)
        shown = _text(screen.query_one(DiffView))
        assert "recorded request 1 of 2 · capture compaction.requests.jsonl:4" in shown
        assert "one-shot: shown, not checked" in shown and "a one-shot request (loopBuilt: false)" in shown
        assert "recorded request 2 of 2 · capture compaction.requests.jsonl:5" in shown
        assert "✓ identical to the rebuilt request" in shown  # the loop request is still compared


@pytest.mark.skipif(not ONE_SHOT_ONLY.is_file(), reason="the real corpus (../shared/corpus) is not here")
async def test_a_session_whose_only_capture_is_a_one_shot_shows_it(monkeypatch):
    monkeypatch.chdir(ONE_SHOT_ONLY.parent)
    app = create_app(ONE_SHOT_ONLY.name)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_session(app, pilot)
        assert not screen.state.steps
        for tab, view in (("1", RequestView), ("2", DiffView)):
            await pilot.press(tab)
            await settle(pilot)
            shown = _text(screen.query_one(view))
            assert "1 recorded: 0 compared, 1 one-shot" in shown
            assert "requests.jsonl:1 · one-shot: shown, not checked" in shown
            assert '"model": "test-model"' in shown  # the request itself, not an empty tab
