"""Issue 19, item 10: dark and light themes that read and are remembered, search with next/previous and
marked matches, and an export that asks before overwriting and names the absolute path written."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.color import Color

from inspector import settings
from inspector.app import DARK_THEME, LIGHT_THEME
from inspector.screens.dialogs import ConfirmScreen, ExportScreen
from inspector.screens.session import SessionScreen
from inspector.widgets.events_view import MATCH_STYLE, EventsView
from inspector.widgets.palette import LIGHT_FG
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import StatusLine
from tests.support.logs import story_log
from tests.support.tui_helpers import create_app, settle, wait_for


def status(app) -> str:
    return app.screen.query_one(StatusLine).plain


async def _opened(app, pilot) -> SessionScreen:
    await settle(pilot)
    await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
    return app.screen


def _colours(widget) -> set[str]:
    """Foreground colours of what the widget puts on screen (after any recolouring)."""
    out = set()
    for strip in widget.render_lines(widget.region.reset_offset):
        for seg in strip:
            if seg.style is not None and seg.style.color is not None and seg.style.color.triplet is not None:
                out.add(seg.style.color.triplet.hex)
    return out


def _contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two colours."""

    def lum(hex_: str) -> float:
        r, g, b = (c / 255 for c in Color.parse(hex_).triplet)
        lin = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_the_light_palette_reads_on_white_and_the_dark_one_on_black():
    for dark, light in LIGHT_FG.items():
        assert _contrast(light, "#ffffff") >= 4.5, light  # WCAG AA for text
        assert _contrast(dark, "#000000") >= 4.5, dark


def test_settings_live_in_the_folder_the_environment_names(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.ENV, str(tmp_path / "cfg"))
    assert settings.load() == {}
    assert settings.save(theme="x") and settings.load() == {"theme": "x"}
    (tmp_path / "cfg" / settings.FILE).write_text("[not an object", encoding="utf-8")
    assert settings.load() == {}
    monkeypatch.delenv(settings.ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert settings.config_dir() == tmp_path / "xdg" / "inspector"


async def test_shift_t_switches_to_a_readable_light_theme_and_it_is_remembered(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _opened(app, pilot)
        assert app.theme == DARK_THEME
        view = screen.query_one(RequestView)
        dark = _colours(view)
        assert dark & set(LIGHT_FG)  # the views draw the dark palette
        await pilot.press("T")
        await settle(pilot)
        assert app.theme == LIGHT_THEME and not app.current_theme.dark
        light = _colours(view)
        assert not light & set(LIGHT_FG) and light & set(LIGHT_FG.values())
        assert json.loads((settings.config_dir() / settings.FILE).read_text())["theme"] == LIGHT_THEME
    again = create_app("story.jsonl")  # the next run starts in the light theme
    async with again.run_test(size=(120, 36)) as pilot:
        await _opened(again, pilot)
        assert again.theme == LIGHT_THEME
        await pilot.press("T")
        await settle(pilot)
        assert settings.load()["theme"] == DARK_THEME


async def test_search_goes_forward_and_back_and_marks_the_matches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _opened(app, pilot)
        await pilot.press("slash", *"skill", "enter")
        await wait_for(pilot, lambda: "match 1 of" in status(app))
        total = len(screen.search_matches)
        assert total >= 3
        seqs = [m.seq for m in screen.search_matches]
        visited = []
        for key in ("greater_than_sign", "greater_than_sign", "less_than_sign", "less_than_sign", "less_than_sign"):
            await pilot.press(key)
            await settle(pilot)
            visited.append(screen.search_pos)
        assert visited == [1, 2, 1, 0, total - 1]  # forward, back, and around
        await wait_for(pilot, lambda: screen.query_one(EventsView).selected_key == ("event", seqs[-1]))
        assert f"match {total} of {total}" in status(app) and "< previous" in status(app)
        events = screen.query_one(EventsView)
        block = events.blocks[events.index_of(("event", seqs[-1]))]
        marked = [block.text.plain[s.start : s.end] for s in block.text.spans if str(s.style) == MATCH_STYLE]
        assert marked and all(m.casefold() == "skill" for m in marked)
        # an empty search clears the marks
        await pilot.press("slash", *["backspace"] * 5, "enter")
        await settle(pilot)
        block = events.blocks[events.index_of(("event", seqs[-1]))]
        assert not [s for s in block.text.spans if str(s.style) == MATCH_STYLE]


async def test_export_asks_before_overwriting_and_names_the_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    target = tmp_path / "story.turn1-step1.request.json"
    target.write_text("keep me\n", encoding="utf-8")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _opened(app, pilot)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ExportScreen)
        assert app.screen.query_one("#export-path").value == str(target)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert target.read_text() == "keep me\n" and "export cancelled" in status(app)
        await pilot.press("x", "enter", "y")
        await settle(pilot)
        assert json.loads(target.read_text()) == screen.state.rebuilt(0).request
        assert f"to {target}" in status(app)
        # a relative name is written under the working directory and named in full
        await pilot.press("x")
        await settle(pilot)
        app.screen.query_one("#export-path").value = "sub.json"
        await pilot.press("enter")
        await settle(pilot)
        assert (tmp_path / "sub.json").is_file() and f"to {tmp_path / 'sub.json'}" in status(app)
        # an input is never written
        before = (tmp_path / "story.requests.jsonl").read_bytes()
        await pilot.press("x")
        await settle(pilot)
        app.screen.query_one("#export-path").value = "story.requests.jsonl"
        await pilot.press("enter", "y")
        await settle(pilot)
        assert (tmp_path / "story.requests.jsonl").read_bytes() == before
        assert "refusing to overwrite an input" in status(app)
    assert Path(tmp_path / "story.jsonl").is_file()
