"""The blame view (issue 19, item 1): every part of the rebuilt request names the event that produced it,
Enter jumps there, and a diverging step marks what differs (Request tab) and the recorded value (Header tab)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from inspector.widgets.diff_view import DiffView
from inspector.widgets.events_view import EventsView
from inspector.widgets.header_view import HeaderView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import StatusLine
from tests.functional.test_tui_snapshots import check_snapshot
from tests.support.logs import seq_of, skills_prefix, story_header, story_log, story_session, write_capture
from tests.support.tui_helpers import create_app, open_session, settle

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
T52 = CORPUS / "upstream-seed-era" / "support__invariants__invariants" / "t52" / "req-check.jsonl"


def _block(view, key):
    return next(b for b in view.blocks if b.key == key)


def prefix_log(folder: Path, edit) -> Path:
    """One step whose header (set by a snapshot, its prefix by a delta) sends a skills prefix; ``edit`` changes
    the recorded request."""
    b = story_session("prefix")
    b.user_turn("Which skills are there?")
    h0 = story_header()
    h1 = copy.deepcopy(h0)
    h1["messagePrefix"] = skills_prefix(["release-notes"])
    b.step_start(1, 1)
    b.snapshot("initial", h0)
    b.delta({"messagePrefix": h1["messagePrefix"]})
    c = b.chunk(1, 1, "One.")
    b.assistant(1, 1, [{"type": "text", "text": "One."}], [c])
    b.step_end(1, 1)
    b.end_turn()
    log = b.write(folder / "prefix.jsonl")
    write_capture(log, folder / "prefix.requests.jsonl", {0: edit})
    return log


def _drop_prefix(request: dict) -> None:
    request["messages"] = request["messages"][1:]


def _move_prefix(request: dict) -> None:
    request["messages"] = request["messages"][1:] + request["messages"][:1]


async def test_every_part_of_the_request_names_its_event_and_enter_jumps_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        view = screen.query_one(RequestView)
        initial = seq_of(log, "request/header", reason="initial")
        delta = seq_of(log, "request/header-delta")
        await pilot.press("j")  # step 1.2: its system prompt came from the delta, the rest from the snapshot
        await settle(pilot)
        tags = {k: v for k, v in view.origins.items()}
        assert tags[("part", "system")] == delta and tags[("part", "model")] == initial
        assert tags[("part", "temperature")] == initial and tags[("part", "tools[1]")] == initial
        assert tags[("message", 0)] == initial  # the prefix
        assert tags[("message", 1)] == seq_of(log, "user/message", text="How many Python files are there under src/?")
        assert "← request/header-delta seq" in _block(view, ("part", "system")).text.plain
        assert "← request/header (initial snapshot) seq" in _block(view, ("message", 0)).text.plain
        view.focus()
        view.select_key(("message", 1))
        await pilot.press("enter")
        await settle(pilot)
        events = screen.query_one(EventsView)
        assert screen.active_tab == "events" and events.seq_of(events.selected_key) == tags[("message", 1)]


async def test_w_on_the_request_tab_answers_for_the_part_under_the_cursor(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        await pilot.press("j")
        await settle(pilot)
        view = screen.query_one(RequestView)
        view.focus()
        view.select_key(("part", "system"))
        await pilot.press("w")
        await settle(pilot)
        delta = seq_of(log, "request/header-delta")
        events = screen.query_one(EventsView)
        assert screen.active_tab == "events" and events.seq_of(events.selected_key) == delta
        assert f"system last changed at seq {delta} by request/header-delta" in screen.query_one(StatusLine).plain


async def test_a_diverging_step_marks_the_differing_parts_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        view = screen.query_one(RequestView)
        assert not any("≠" in b.text.plain for b in view.blocks)  # step 1.1 matches its recorded request
        await pilot.press("j", "j")  # step 2.1: messages[2] was edited in its capture
        await settle(pilot)
        marked = [b.key for b in view.blocks if b.gutter is not None and b.gutter.plain.startswith("≠")]
        assert marked == [("message", 2)]
        assert "≠ 1 part differs from recorded request 1 of 1 (story.requests.jsonl:3)" in "\n".join(
            b.text.plain for b in view.blocks
        )


async def test_the_header_tab_shows_the_recorded_value_of_a_field_that_differs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    b = story_session("temps")
    b.user_turn("hi")
    b.streamed_step("hello", header_reason="initial", header=story_header(temperature=0.2))
    b.end_turn()
    log = b.write(tmp_path / "temps.jsonl")

    def warmer(request: dict) -> None:
        request["temperature"] = 0.7

    write_capture(log, tmp_path / "temps.requests.jsonl", {0: warmer})
    app = create_app("temps.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        await pilot.press("3")
        await settle(pilot)
        view = screen.query_one(HeaderView)
        config = _block(view, ("field", "config"))
        assert "≠ recorded temperature: 0.7" in config.text.plain and config.gutter.plain == "≠ "
        assert _block(view, ("field", "system")).gutter is None  # the system prompt matches
        # the Request tab marks the same part
        await pilot.press("1")
        await settle(pilot)
        request = screen.query_one(RequestView)
        assert _block(request, ("part", "temperature")).gutter.plain == "≠ "
        assert _block(request, ("part", "model")).gutter.plain == "  "


@pytest.mark.parametrize("edit", [_drop_prefix, _move_prefix], ids=["dropped", "moved"])
async def test_a_prefix_difference_is_blamed_on_the_delta_that_set_the_prefix(tmp_path, monkeypatch, edit):
    monkeypatch.chdir(tmp_path)
    log = prefix_log(tmp_path, edit)
    app = create_app("prefix.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        view = screen.query_one(RequestView)
        assert view.origins[("message", 0)] == seq_of(log, "request/header-delta")
        assert _block(view, ("message", 0)).gutter.plain.startswith("≠")


@pytest.mark.skipif(not T52.is_file(), reason="the real corpus (../shared/corpus) is not here")
async def test_real_t52_n_visits_both_findings_and_the_prefix_is_blamed_on_seq_4(monkeypatch):
    monkeypatch.chdir(T52.parents[4])
    app = create_app(T52.relative_to(T52.parents[4]))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        divs = [i for i, f in enumerate(screen.state.findings) if f.rule == "DIV001"]
        assert len(divs) == 2
        seen = []
        for _ in range(len(screen.state.findings)):
            await pilot.press("n")
            await settle(pilot)
            seen.append(screen.finding_pos)
        assert set(divs) <= set(seen)
        diff = screen.query_one(DiffView)
        assert diff.selected_key is not None
        await pilot.press("1")
        await settle(pilot)
        view = screen.query_one(RequestView)
        prefix = _block(view, ("message", 0))
        assert view.origins[("message", 0)] == 4
        assert "← request/header-delta seq 4 · line 6" in prefix.text.plain


async def test_snapshot_of_the_blame_view(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(app, pilot)
        await pilot.press("j", "j")
        await settle(pilot)
        svg = app.export_screenshot(title="inspector")
    check_snapshot("request-blame", svg, tmp_path)


@pytest.mark.parametrize("edit", [_drop_prefix, _move_prefix], ids=["dropped", "moved"])
async def test_snapshot_of_a_prefix_difference(tmp_path, monkeypatch, edit):
    monkeypatch.chdir(tmp_path)
    prefix_log(tmp_path, edit)
    app = create_app("prefix.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(app, pilot)
        await pilot.press("n")
        await settle(pilot)
        svg = app.export_screenshot(title="inspector")
    check_snapshot(f"diff-prefix-{edit.__name__.split('_')[1]}", svg, tmp_path)
