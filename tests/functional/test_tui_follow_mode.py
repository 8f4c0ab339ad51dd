"""--follow on screen (issue 19, item 9): the newest step stays selected and in view while the log grows,
and the first new error rings the bell once and is named on the status line (n goes to it)."""

from __future__ import annotations

from pathlib import Path

from inspector.screens.session import SessionScreen
from inspector.widgets.status import StatusLine
from inspector.widgets.timeline import Timeline
from tests.support.logs import story_steps, write_capture
from tests.support.tui_helpers import create_app, settle, wait_for


class Growing:
    """A log (and its capture) that the test appends turns to, the way the harness writes them."""

    def __init__(self, folder: Path, steps: int) -> None:
        self.folder = folder
        self.b = story_steps("growing", steps)
        self.log = self.b.write(folder / "growing.jsonl")
        self.capture = folder / "growing.requests.jsonl"
        self.wrong: set[int] = set()
        write_capture(self.log, self.capture)

    def grow(self, steps: int, diverging: bool = False) -> None:
        before = len(self.b.lines())
        self.b.user_turn("and then?")
        for i in range(steps):
            self.b.streamed_step(f"more {i}")
        self.b.end_turn()
        first_new = len(self.steps_so_far())
        if diverging:
            self.wrong.add(first_new)  # the first new step's recorded request diverges
        preview = self.folder / "preview"
        preview.mkdir(exist_ok=True)
        edits = {i: _edit for i in self.wrong}
        write_capture(self.b.write(preview / self.log.name), self.capture, edits)  # the capture first,
        with open(self.log, "ab") as fh:  # then the log grows
            fh.write(b"\n".join(self.b.lines()[before:]) + b"\n")

    def steps_so_far(self) -> list[int]:
        from invariants.read.source import LogSource
        from invariants.replay.session import replay

        return [s.index for s in replay(LogSource(self.log, self.folder)).steps]


def _edit(request: dict) -> None:
    request["messages"][0]["content"][0]["text"] += " (edited)"


def status(app) -> str:
    return app.screen.query_one(StatusLine).plain


def in_view(timeline: Timeline) -> bool:
    y = timeline.cursor_row - timeline.scroll_offset.y
    return 0 <= y < timeline.scrollable_content_region.height


async def _following(app, pilot) -> SessionScreen:
    await settle(pilot, rounds=1)
    await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
    return app.screen


async def test_the_newest_step_stays_selected_and_in_view(tmp_path, monkeypatch):
    monkeypatch.setattr("inspector.screens.session.loading.FOLLOW_POLL", 0.05)
    g = Growing(tmp_path, steps=30)
    app = create_app(g.log, follow=True)
    async with app.run_test(size=(100, 16)) as pilot:
        screen = await _following(app, pilot)
        timeline = screen.query_one(Timeline)
        assert screen.step_index == 29
        await wait_for(pilot, lambda: in_view(timeline))  # scrolled there once laid out (late on a busy machine)
        for grown in (1, 2):
            g.grow(3)
            await wait_for(pilot, lambda grown=grown: len(screen.state.steps) == 30 + 3 * grown)
            newest = len(screen.state.steps) - 1  # selected, in view and scrolled to the end, once laid out
            await wait_for(
                pilot,
                lambda newest=newest: (
                    screen.step_index == newest
                    and in_view(timeline)
                    and timeline.scroll_offset.y == timeline.max_scroll_y
                ),
            )
        assert "following: +" in status(app)


async def test_the_first_new_error_rings_once_until_looked_at(tmp_path, monkeypatch):
    monkeypatch.setattr("inspector.screens.session.loading.FOLLOW_POLL", 0.05)
    g = Growing(tmp_path, steps=3)
    app = create_app(g.log, follow=True)
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _following(app, pilot)
        assert not [f for f in screen.state.findings if f.severity == "error"]
        g.grow(1)  # no error: no bell
        await wait_for(pilot, lambda: len(screen.state.steps) == 4)
        assert rings == [] and "new error" not in status(app)
        g.grow(2, diverging=True)
        await wait_for(pilot, lambda: len(screen.state.steps) == 6)
        await pilot.pause(0.1)
        assert rings == [1]
        assert "✗ new error DIV001" in status(app) and "n jumps to it" in status(app)
        g.grow(1, diverging=True)  # a second new error before the user looked: no second bell
        await wait_for(pilot, lambda: len(screen.state.steps) == 7)
        await pilot.pause(0.1)
        assert rings == [1]
        await pilot.press("n")
        await settle(pilot, rounds=1)
        assert screen.step_index == min(g.wrong)  # the error the status line named
        assert "DIV001" in status(app) and screen.active_tab == "diff"
        g.grow(1, diverging=True)  # looked at: the next new error rings again
        await wait_for(pilot, lambda: len(screen.state.steps) == 8)
        await pilot.pause(0.1)
        assert rings == [1, 1]
