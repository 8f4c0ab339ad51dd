"""The session list (issue 19, item 7): paths relative to the root, a highlighted row that sorting and
filtering keep (the top one after a sort), Enter opening that row, and the findings column at 80 columns."""

from __future__ import annotations

from pathlib import Path

from inspector.screens.session import SessionScreen
from inspector.screens.session_list import SessionListScreen
from inspector.widgets.session_table import SessionTable, layout
from tests.functional.test_tui_snapshots import screen_lines
from tests.support.logs import story_header, story_session, write_capture
from tests.support.tui_helpers import create_app, settle, wait_for


def same_named_root(root: Path, folders: int = 12) -> dict[str, int]:
    """``t50``..: one ``req-check.jsonl`` each (as in the corpus); folder t5k has k diverging requests (mod 3)."""
    errors = {}
    for k in range(folders):
        folder = root / f"t{50 + k}"
        folder.mkdir(parents=True)
        b = story_session(f"req-check-{k}")
        b.user_turn("hi")
        b.streamed_step("a", header_reason="initial", header=story_header())
        b.streamed_step("b")
        b.streamed_step("c")
        b.end_turn()
        log = b.write(folder / "req-check.jsonl")
        wrong = k % 3

        def edit(request: dict) -> None:
            request["model"] = "recorded-model"

        write_capture(log, folder / "requests.jsonl", {i: edit for i in range(wrong)})
        errors[folder.name] = wrong
    return errors


async def _list(app, pilot) -> SessionListScreen:
    await settle(pilot)
    await wait_for(pilot, lambda: isinstance(app.screen, SessionListScreen) and app.screen.finished)
    await pilot.pause(0.2)
    return app.screen


def _shown(app) -> list[str]:
    return screen_lines(app.export_screenshot())


def _highlighted_on_screen(table: SessionTable) -> bool:
    y = table.cursor - table.scroll_offset.y
    return 0 <= y < table.scrollable_content_region.height


async def test_files_are_shown_relative_to_the_root_and_sorted_by_that(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    same_named_root(tmp_path / "root")
    app = create_app("root")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _list(app, pilot)
        text = "\n".join(_shown(app))
        for k in range(12):
            assert f"t{50 + k}/req-check.jsonl" in text
        while screen.sort_key != "file":
            await pilot.press("s")
        await settle(pilot)
        table = screen.query_one(SessionTable)
        rows = [s.path.parent.name for s, _ in table.rows]
        assert rows == sorted(rows)
        await pilot.press("r")
        await settle(pilot)
        assert [s.path.parent.name for s, _ in table.rows] == sorted(rows, reverse=True)
        assert table.cursor == 0 and _highlighted_on_screen(table)


async def test_after_a_sort_the_top_row_is_highlighted_and_enter_opens_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    errors = same_named_root(tmp_path / "root", folders=30)
    app = create_app("root")
    async with app.run_test(size=(100, 16)) as pilot:
        screen = await _list(app, pilot)
        table = screen.query_one(SessionTable)
        for _ in range(25):  # the cursor far down, the list scrolled
            await pilot.press("down")
        assert table.cursor == 25
        await pilot.press("s")  # another column, then round to the findings again
        while screen.sort_key != "errors":
            await pilot.press("s")
        await settle(pilot)  # most findings first
        assert table.cursor == 0 and _highlighted_on_screen(table)
        top = table.rows[0][0]
        assert top.errors == max(errors.values())
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen))
        assert app.screen.source.path == top.path


async def test_a_filter_keeps_a_highlighted_row_and_enter_opens_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    same_named_root(tmp_path / "root")
    app = create_app("root")
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await _list(app, pilot)
        table = screen.query_one(SessionTable)
        for _ in range(5):
            await pilot.press("down")
        await pilot.press("slash", "t", "5", "7", "enter")  # the folder name matches the shown path
        await settle(pilot)
        assert [s.path.parent.name for s, _ in table.rows] == ["t57"]
        assert table.cursor == 0 and _highlighted_on_screen(table)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen))
        assert app.screen.source.path.parent.name == "t57"


async def test_the_findings_column_stays_at_80_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    same_named_root(tmp_path / "root", folders=3)
    app = create_app("root")
    async with app.run_test(size=(80, 24)) as pilot:
        await _list(app, pilot)
        lines = _shown(app)
        header = next(line for line in lines if "session" in line and "file" in line)
        assert "findings" in header and "cwd" not in header  # cwd gave way first
        rows = [line for line in lines if "req-check.jsonl" in line]
        assert len(rows) == 3 and all("✗" in row and "●" in row for row in rows)
        assert any("t52/req-check.jsonl" in row and "✗2" in row for row in rows)
        assert "? Help" in lines[-1] and "q Quit" in lines[-1]
    columns = [c for c, _ in layout(78)]
    async with create_app("root").run_test(size=(80, 24)) as pilot:  # s sorts only by the columns shown
        screen = await _list(pilot.app, pilot)
        keys = []
        for _ in range(len(columns) + 1):
            await pilot.press("s")
            keys.append(screen.sort_key)
        assert keys == ["order", "id", "file", "steps", "errors"]
    wide = [c for c, _ in layout(198)]
    assert len(wide) == 9 and len(columns) < len(wide) and wide[-1] == columns[-1]
