"""Navigation (issue 19, item 6): findings in log order, n/N over all of them and onto their capture,
a visible focus ring, per-screen help that scrolls at 80x24, a footer and a tab bar that fit, and a
status line that follows the selection.  Events and findings are found by their content, not by seq.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.screens.dialogs import HelpScreen
from inspector.screens.session import SessionScreen
from inspector.widgets.diff_view import DiffView
from inspector.widgets.document import DocumentView
from inspector.widgets.findings_view import FindingsView
from inspector.widgets.status import StatusLine
from inspector.widgets.timeline import Timeline
from tests.functional.test_tui_snapshots import screen_lines
from tests.support.logs import story_header, story_log, story_session, write_capture
from tests.support.tui_helpers import create_app, open_session, settle, wait_for

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
T52 = CORPUS / "upstream-seed-era" / "support__invariants__invariants" / "t52" / "req-check.jsonl"


def status(app) -> str:
    return app.screen.query_one(StatusLine).plain


def rendered(widget) -> str:
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


def out_of_order_log(folder: Path) -> Path:
    """Step 1.2's recorded model differs (DIV010 at the step's seq); step 2.1's recorded first user message
    differs (DIV001 at that message's seq, which is earlier): by seq the 2.1 finding comes first."""
    b = story_session("order")
    b.user_turn("What is in src/?")
    b.streamed_step("Looking.", header_reason="initial", header=story_header())
    b.streamed_step("Three files.")
    b.end_turn()
    b.user_turn("And tests/?")
    b.streamed_step("Two files.")
    b.end_turn()
    log = b.write(folder / "order.jsonl")

    def model(request: dict) -> None:
        request["model"] = "another-model"

    def first_message(request: dict) -> None:
        request["messages"][0]["content"][0]["text"] = "What is in lib/?"

    write_capture(log, folder / "order.requests.jsonl", {1: model, 2: first_message})
    return log


async def test_findings_are_listed_and_visited_in_step_order_not_seq_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out_of_order_log(tmp_path)
    app = create_app("order.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_session(app, pilot)
        by_rule = {f.rule: f for f in screen.state.result.findings}
        assert by_rule["DIV001"].seq < by_rule["DIV010"].seq  # the library's order would put 2.1 first
        steps = [
            (f.rule, screen.state.steps[s].turn, screen.state.steps[s].step)
            for f, s in zip(screen.state.findings, screen.state.finding_step)
        ]
        assert steps == [("DIV010", 1, 2), ("DIV001", 2, 1)]
        await pilot.press("6")
        await settle(pilot)
        text = screen.query_one(FindingsView).plain_text()
        assert text.index("DIV010") < text.index("DIV001")
        # n visits every finding in that order, then wraps; N goes back
        seen = []
        for _ in range(3):
            await pilot.press("n")
            await settle(pilot)
            st = screen.state.steps[screen.step_index]
            seen.append((status(app).split(" ")[2], f"{st.turn}.{st.step}", screen.active_tab))
        assert seen == [("DIV010", "1.2", "diff"), ("DIV001", "2.1", "diff"), ("DIV010", "1.2", "diff")]
        await pilot.press("N")
        await settle(pilot)
        assert "DIV001" in status(app) and screen.step_index == 2


@pytest.mark.skipif(not T52.is_file(), reason="the real corpus (../shared/corpus) is not here")
async def test_n_lands_on_the_recorded_request_each_finding_is_about(monkeypatch):
    monkeypatch.chdir(T52.parents[4])
    app = create_app(T52.relative_to(T52.parents[4]))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_session(app, pilot)
        divs = [f for f in screen.state.findings if f.rule == "DIV001"]
        captures = [f.detail["capture"].rsplit("/", 1)[-1] for f in divs]
        assert captures == ["requests.jsonl:2", "requests.jsonl:3"]
        diffs = screen.state.diffs(screen.step_index)
        for k, capture in enumerate(captures):
            await pilot.press("n")
            await settle(pilot)
            line = int(capture.rsplit(":", 1)[1])
            r = next(i for i, sd in enumerate(diffs) if sd.check.recorded.line == line)
            view = screen.query_one(DiffView)
            assert view.selected_key[:2] == ("diff", r)
            shown = rendered(view)
            assert f"recorded request {r + 1} of {len(diffs)}" in shown  # on screen, not scrolled past
            assert f"capture {capture}" in status(app) and f"[{k + 1}/" in status(app)


async def test_tab_moves_a_visible_focus_ring(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_session(app, pilot)
        timeline = screen.query_one(Timeline)
        view = screen.query_one("#request-view", DocumentView)

        def ring(widget):
            return widget.styles.border_top[1]

        assert screen.focused is timeline
        focused, unfocused = ring(timeline), ring(view)
        assert focused != unfocused
        await pilot.press("tab")
        await settle(pilot)
        assert screen.focused is view
        assert ring(view) == focused and ring(timeline) == unfocused


async def test_help_shows_the_keys_of_the_screen_in_front_and_scrolls_at_80x24(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    story_log(root)
    other = story_session("other")
    other.user_turn("x")
    other.streamed_step("y", header_reason="initial", header=story_header())
    other.end_turn()
    other.write(root / "other.jsonl")
    app = create_app("root")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: getattr(app.screen, "finished", False))
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(screen_lines(app.export_screenshot()))
        assert "keys of the session list" in text and "sort by the next column" in text
        assert "next/previous finding" not in text
        await pilot.press("escape", "enter")
        await settle(pilot)
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
        await pilot.press("question_mark")
        await settle(pilot)
        text = "\n".join(screen_lines(app.export_screenshot()))
        assert "keys of the session screen" in text and "next/previous finding" in text
        assert "sort by the next column" not in text
        # 80x24 cannot show it all: it says how much is below, and scrolls to the end
        assert "more lines below" in text and "q               quit" not in text
        for _ in range(4):
            await pilot.press("pagedown")
        await settle(pilot)
        text = "\n".join(screen_lines(app.export_screenshot()))
        assert "above" in text and "more lines below" not in text
        assert "quit" in text.split("ctrl+p", 1)[1]


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_footer_and_tab_bar_fit(size, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=size) as pilot:
        screen = await open_session(app, pilot)
        lines = screen_lines(app.export_screenshot())
        footer = lines[-1]
        assert "Help" in footer and "Quit" in footer and footer.rstrip().endswith("Quit")
        tabs = [screen.tabs.get_tab(t) for t in ("request", "diff", "header", "prefix", "events", "findings")]
        bar = screen.tabs.query_one("Tabs")
        assert sum(t.size.width for t in tabs) <= bar.size.width
        assert all(t.size.width >= len(str(t.label)) for t in tabs)
        assert str(tabs[-1].label) == "Findings 2"
        assert any("Findings 2" in line for line in lines)
        if size[0] >= 120:
            assert str(tabs[0].label) == "Request" and str(tabs[2].label) == "Header"


async def test_the_status_line_follows_the_selection(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_session(app, pilot)
        await pilot.press("n", "e")
        await settle(pilot)
        assert "produced the difference" in status(app)
        await pilot.press("j")
        await settle(pilot)
        st = screen.state.steps[screen.step_index]
        assert "produced" not in status(app)
        assert status(app).startswith(f"turn {st.turn} step {st.step}")
        # a step with findings says so
        await pilot.press("g", "j", "j")
        await settle(pilot)
        assert screen.state.step_findings.get(screen.step_index) and "1 finding here" in status(app)
        # moving in the Findings tab shows the finding under the cursor
        await pilot.press("6", "tab", "down")
        await settle(pilot)
        view = screen.query_one(FindingsView)
        i = FindingsView.index_of_key(view.selected_key)
        assert screen.state.findings[i].rule in status(app) and f"[{i + 1}/" in status(app)


def test_out_of_order_log_really_is_out_of_order(tmp_path):
    """The fixture itself: the library lists the 2.1 finding first."""
    from invariants import check

    log = out_of_order_log(tmp_path)
    result = check([log])
    assert [f.rule for f in result.findings if f.severity == "error"] == ["DIV001", "DIV010"]
    assert result.findings[0].turn == 2
