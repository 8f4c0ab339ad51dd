"""The TUI as a newcomer meets it (issue 33): the palette lists every action of the screen in front, the
session list opens worst first and counts what a filter shows, words agree in number, status lines clear
when their work ends, follow mode says "new" only for a new finding, and an empty folder says why."""

from __future__ import annotations

from inspector.widgets.session_table import SessionTable
from inspector.widgets.status import SessionBar
from tests.functional.test_tui_session_list import _list, _shown, same_named_root
from tests.support.logs import story_log
from tests.support.tui_helpers import create_app, open_session, settle, wait_for


def _plain(bar) -> str:
    content = bar.content
    return content.plain if hasattr(content, "plain") else str(content)


def _keys_of(screen) -> dict[str, str]:
    """Each action the screen binds, with the keys bound to it."""
    out: dict[str, str] = {}
    for b in screen.BINDINGS:
        out.setdefault(b.action, b.key)
    return out


async def test_the_palette_lists_every_action_of_the_session_screen_with_its_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        commands = list(app.get_system_commands(screen))
        helps = {c.title: c.help for c in commands}
        assert "Write a repro" in helps and helps["Write a repro"].endswith("(R)")
        assert "Token bar" in helps and helps["Token bar"].endswith("(t)")
        assert helps["Dark or light theme"].endswith("(T)")
        assert helps["Next finding"].endswith("(n)") and helps["Previous finding"].endswith("(N)")
        # every action bound to a key is in the palette (quit is Textual's own "Quit")
        bound = set(_keys_of(screen)) - {"quit"}
        assert len([c for c in commands if c.title not in ("Theme", "Quit", "Keys", "Screenshot")]) >= len(bound)
        assert "Quit" in helps
        # and running one does what the key does
        repro = next(c for c in commands if c.title == "Write a repro")
        await repro.callback()  # nothing selected yet: R says what to do first
        await settle(pilot)
        assert "select a finding first" in screen.status.plain


async def test_the_palette_of_the_session_list_lists_its_actions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    same_named_root(tmp_path / "root", folders=2)
    app = create_app("root")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _list(app, pilot)
        titles = {c.title for c in app.get_system_commands(screen)}
        assert {"Sort", "Reverse the sort", "Filter sessions", "Clear filter", "Help", "Quit"} <= titles
        assert "Next finding" not in titles


async def test_the_session_list_opens_worst_first_and_counts_what_a_filter_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    errors = same_named_root(tmp_path / "root", folders=12)
    app = create_app("root")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await _list(app, pilot)
        table = screen.query_one(SessionTable)
        shown = [s.errors for s, _ in table.rows]
        assert shown == sorted(errors.values(), reverse=True) and shown[0] == 2
        tied = [s.path.parent.name for s, _ in table.rows if s.errors == 2]
        assert tied == sorted(tied), "sessions as bad as each other stay in path order"
        header = next(line for line in _shown(app) if "session" in line and "file" in line)
        assert "findings ▼" in header
        bar = screen.query_one("#list-bar", SessionBar)
        assert "12 sessions checked" in _plain(bar)
        await pilot.press("slash", "t", "5", "enter")
        await settle(pilot)
        assert len(table.rows) == 10  # t50..t59
        assert "10 of 12 sessions match “t5”" in _plain(bar) and "12 sessions checked" not in _plain(bar)
        await pilot.press("escape")
        await settle(pilot)
        assert "12 sessions checked" in _plain(bar)


async def test_an_empty_folder_says_what_check_says(tmp_path, monkeypatch, capsys):
    from inspector.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    assert main(["check", "empty"]) == 2
    said = "no session logs under empty"
    assert said in capsys.readouterr().err
    app = create_app("empty")
    async with app.run_test(size=(80, 24)) as pilot:
        await _list(app, pilot)
        text = "\n".join(_shown(app))
        assert said in text
        assert "(looked for .jsonl" in text


async def test_follow_is_woken_by_file_events_not_by_polling(tmp_path, monkeypatch):
    from tests.functional.test_tui_follow_mode import Growing, _following

    # neither the poll nor the idle look could wake it within the test: only the file's events can
    monkeypatch.setattr("inspector.screens.session.loading.FOLLOW_POLL", 3600)
    monkeypatch.setattr("inspector.screens.session.loading.FOLLOW_IDLE_MS", 3_600_000)
    g = Growing(tmp_path, steps=3)
    app = create_app(g.log, follow=True)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _following(app, pilot)
        await pilot.pause(0.3)  # the watch is set up
        g.grow(2)
        await wait_for(pilot, lambda: len(screen.state.steps) == 5, timeout=10)
        assert "following: +" in screen.status.plain and "+2 steps" in screen.status.plain


async def test_follow_calls_new_only_a_finding_that_was_not_there_before(tmp_path, monkeypatch):
    from dataclasses import replace

    from inspector.screens.state import SessionState
    from invariants.gate.result import CheckResult
    from tests.functional.test_tui_blame import _drop_prefix, prefix_log

    monkeypatch.chdir(tmp_path)
    prefix_log(tmp_path, _drop_prefix)
    app = create_app("prefix.jsonl")
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_session(app, pilot)
        old = screen.state
        errors = [f for f in old.findings if f.severity == "error"]
        assert errors
        model = old.model

        def state_with(findings) -> SessionState:
            return SessionState(CheckResult([], findings, [], [], [model]), model)

        # the same error, attributed anew by a re-check (other words, another step): not new
        reworded = [replace(f, message=f.message + " (reworded)", step=(f.step or 0) + 1) for f in old.findings]
        screen._followed(old, state_with(reworded), 0.01, tailing=True)
        assert rings == [] and "new error" not in screen.status.plain
        # an error at another event is new
        moved = [*old.findings, replace(errors[0], seq=(errors[0].seq or 0) + 1000)]
        screen._followed(old, state_with(moved), 0.01, tailing=True)
        assert rings == [1] and "✗ new error" in screen.status.plain


async def test_words_agree_in_number_and_status_lines_clear_when_their_work_ends(tmp_path, monkeypatch):
    from inspector.widgets.diff_view import DiffView
    from inspector.widgets.request_view import RequestView
    from tests.support.logs import story_header, story_session, write_capture

    monkeypatch.chdir(tmp_path)
    b = story_session("one")
    b.user_turn("hi")
    b.streamed_step("a", header_reason="initial", header=story_header())
    b.end_turn()
    log = b.write(tmp_path / "one.jsonl")
    write_capture(log, tmp_path / "one.requests.jsonl")
    app = create_app("one.jsonl")
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await open_session(app, pilot)
        bar = _plain(screen.query_one("#session-bar", SessionBar))
        assert "· 1 step ·" in bar and "· 1 turn ·" in bar and "1 steps" not in bar
        said = "\n".join(b.text.plain for b in screen.query_one(RequestView).blocks)
        assert "1 message:" in said and "1 messages" not in said
        await pilot.press("2")
        await settle(pilot)
        said = "\n".join(b.text.plain for b in screen.query_one(DiffView).blocks)
        assert "(1 message)" in said and "1 messages" not in said
        # a jump's word stays until the user moves on: another tab says where the selection is again
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert "produced" in screen.status.plain
        await pilot.press("1")
        await settle(pilot)
        assert "produced" not in screen.status.plain and screen.status.plain.startswith("turn 1 step 1")
        # a finished job's word goes: "counting tokens…" is replaced once they are counted
        screen.say("counting tokens…")
        screen.on_tokens_counted(type("M", (), {"serial": screen.state.serial, "steps": {}})())
        assert screen.status.plain.startswith("turn 1 step 1")
