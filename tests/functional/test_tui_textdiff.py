"""The Diff tab's character-level diff: a long system prompt that differs in one word in the middle.

Before, both sides were cut at the same point from their start and looked
identical; now both are windowed on the first difference, the changed words
are marked, and the side-by-side shows the same window.
"""

from __future__ import annotations

from inspector.widgets.diff_view import DiffView
from inspector.widgets.difftext import EXPECTED_MARK, RECORDED_MARK
from tests.functional.test_tui_snapshots import check_snapshot
from tests.support.logs import LONG_SYSTEM, long_system_log
from tests.support.tui_helpers import create_app, settle, wait_for


def _marked(text, style: str) -> list[str]:
    return [text.plain[s.start : s.end] for s in text.spans if str(s.style) == style]


async def test_a_long_system_prompt_is_windowed_on_the_changed_word_on_both_sides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    long_system_log(tmp_path)
    app = create_app("long-system.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screen.state is not None)
        await pilot.press("n")
        await settle(pilot)
        diff = app.screen.query_one(DiffView)
        summary = next(b.text for b in diff.blocks if b.key == ("diff", 0, 0))
        lines = summary.plain.split("\n")
        expected = next(line for line in lines if line.startswith("  expected"))
        recorded = next(line for line in lines if line.startswith("  recorded"))
        assert "Rule 20: answer the user in plain words" in expected
        assert "Rule 20: answer the user in terse words" in recorded
        at = LONG_SYSTEM.index("Rule 20: answer the user in plain") + len("Rule 20: answer the user in ")
        assert f"first difference at character {at + 1} of the value" in summary.plain
        # both windows open with the same cut, a little before the difference (never at the start)
        cut = int(expected.split("…(")[1].split(" chars")[0])
        assert recorded.split("…(")[1].startswith(f"{cut} chars") and at - 40 < cut < at
        assert _marked(summary, EXPECTED_MARK) == ["plain"] and _marked(summary, RECORDED_MARK) == ["terse"]
        # the side-by-side shows the same window on the marked line, with the same marks
        row = next(b for b in diff.blocks if b.right is not None and "▶" in b.text.plain)
        assert "plain words" in row.text.plain and "terse words" in row.right.plain
        assert _marked(row.text, EXPECTED_MARK) == ["plain"] and _marked(row.right, RECORDED_MARK) == ["terse"]


async def test_snapshot_of_the_character_level_diff(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    long_system_log(tmp_path)
    app = create_app("long-system.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screen.state is not None)
        await pilot.press("n")
        await settle(pilot)
        svg = app.export_screenshot(title="inspector")
    check_snapshot("diff-long-system", svg, tmp_path)
