"""The Diff tab, the Request tab's ≠ marks, ``e`` and the status line read the finding's classification
(issue 33, item 1): an extra recorded message is not blamed on the message it pushed aside."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.widgets.diff_view import DiffView
from inspector.widgets.events_view import EventsView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import StatusLine
from tests.functional.test_tui_blame import _drop_prefix, _move_prefix, prefix_log
from tests.support.logs import seq_of
from tests.support.tui_helpers import create_app, open_session, settle

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
T02 = CORPUS / "upstream-late-era" / "core__agent-loop__invariant" / "t02" / "req-check.jsonl"


def _text(view, key) -> str:
    return next(b for b in view.blocks if b.key == key).text.plain


@pytest.mark.skipif(not T02.is_file(), reason="the real corpus (../shared/corpus) is not here")
async def test_real_t02_an_extra_recorded_message_is_blamed_on_no_event(monkeypatch):
    monkeypatch.chdir(T02.parents[4])
    app = create_app(T02.relative_to(T02.parents[4]))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        status = screen.query_one(StatusLine)
        request = screen.query_one(RequestView)
        # the Request tab marks nothing: the rebuilt request's only message is innocent
        assert not any(b.gutter is not None and b.gutter.plain.startswith("≠") for b in request.blocks)
        said = "\n".join(b.text.plain for b in request.blocks)
        assert "has 1 message the log does not account for at messages[0] · no part below made it" in said
        assert "differs from the recorded request" not in said
        diff = screen.query_one(DiffView)
        # recorded request 2: an extra message before the history; recorded request 3: one at the end
        for r, at in [(1, "messages[0]"), (2, "messages[1]")]:
            await pilot.press("n")
            await settle(pilot)
            assert screen.active_tab == "diff" and diff.selected_key == ("diff", r, 0)
            assert "does not account for" in status.plain  # the finding's own sentence
            summary = _text(diff, ("diff", r, 0))
            assert f"the recorded request has 1 message the log does not account for at {at}" in summary
            assert "no event of the log produced it" in summary and "produced by event seq" not in summary
            assert "expected  <absent>" in summary and "<system-reminder>" in summary.split("recorded  ")[1]
            marked = [b for b in diff.blocks if b.text.plain.startswith("▶") and b.key[1] == r]
            assert marked, "the extra message's line is marked on the recorded side"
            assert all(b.text.plain == "▶ " for b in marked), "…and no line of the expected side is"
            assert all(b.key[3] is None and b.key[2].startswith(at) for b in marked)  # ("line", r, path, li, rj)
            await pilot.press("e")
            await settle(pilot)
            assert screen.active_tab == "diff", "e must not jump to the innocent user message"
            assert f"{at} is extra in the recorded request: the log does not account for it" in status.plain
            assert "select a message" not in status.plain


@pytest.mark.parametrize("edit,kind", [(_drop_prefix, "missing"), (_move_prefix, "moved")])
async def test_a_missing_or_moved_message_names_its_event_and_e_jumps_there(tmp_path, monkeypatch, edit, kind):
    monkeypatch.chdir(tmp_path)
    log = prefix_log(tmp_path, edit)
    delta = seq_of(log, "request/header-delta")
    app = create_app("prefix.jsonl")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        await pilot.press("n")
        await settle(pilot)
        diff = screen.query_one(DiffView)
        summary = _text(diff, diff.selected_key)
        assert {"missing": "missing from the recorded request at messages[0]", "moved": "moved: expected at"}[
            kind
        ] in summary
        assert f"produced by event seq {delta} (e jumps there)" in summary
        await pilot.press("e")
        await settle(pilot)
        events = screen.query_one(EventsView)
        assert screen.active_tab == "events" and events.seq_of(events.selected_key) == delta
        assert f"event seq {delta} produced messages[0]" in screen.query_one(StatusLine).plain


T04 = CORPUS / "upstream-late-era" / "core__agent-loop__invariant" / "t04" / "req-bare.jsonl"


@pytest.mark.skipif(not T04.is_file(), reason="the real corpus (../shared/corpus) is not here")
async def test_real_t04_the_request_tab_cites_only_rules_that_were_reported(monkeypatch):
    monkeypatch.chdir(T04.parents[4])
    app = create_app(T04.relative_to(T04.parents[4]))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(app, pilot)
        reported = {f.rule for f in screen.state.findings}
        assert "REQ001" not in reported and {"REQ002", "REQ003"} <= reported
        for _ in range(len(screen.state.steps)):
            said = "\n".join(b.text.plain for b in screen.query_one(RequestView).blocks)
            assert "REQ001" not in said
            cited = {w.strip("(),.") for w in said.split() if w.strip("(),.").startswith("REQ")}
            assert cited <= reported
            await pilot.press("j")
            await settle(pilot)
