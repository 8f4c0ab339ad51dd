"""Deep links (issue 19, item 8): ``inspector PATH --at SEQ|TURN.STEP`` opens the session there, and
``inspector check`` prints, under each error, the command that does so (text only: JSON is unchanged)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from inspector.cli import main
from inspector.deeplink import At, parse_at
from inspector.screens.session import SessionScreen
from inspector.screens.session_list import SessionListScreen
from inspector.widgets.diff_view import DiffView
from inspector.widgets.events_view import EventsView
from inspector.widgets.status import StatusLine
from invariants.gate.report import open_command
from invariants.read.source import LogSource
from tests.conftest import SAMPLES
from tests.support.logs import story_log
from tests.support.tui_helpers import create_app, settle, wait_for

SAMPLE = SAMPLES / "capture-divergence.jsonl"


def status(app) -> str:
    return app.screen.query_one(StatusLine).plain


async def _opened(app, pilot) -> SessionScreen:
    await settle(pilot)
    await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
    await settle(pilot)
    return app.screen


def _seq_of(log: Path, text: str) -> int:
    """The seq of the first event whose data mentions ``text`` (found by content, never hard-coded)."""
    for line in log.read_bytes().splitlines()[1:]:
        obj = orjson.loads(line)
        if text in json.dumps(obj.get("data"), ensure_ascii=False):
            return obj["seq"]
    raise AssertionError(text)


def test_parse_at():
    assert parse_at("12") == At(seq=12) and parse_at(" 2.1 ") == At(turn=2, step=1)
    assert [parse_at(x) for x in ("", "2.", ".1", "2.1.3", "-1", "x", "2,1")] == [None] * 7
    assert str(At(turn=3, step=10)) == "3.10" and str(At(seq=0)) == "0"


def test_check_text_prints_how_to_open_each_error_and_how_to_read_a_rule(capsys):
    code = main(["check", str(SAMPLE)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    main(["check", str(SAMPLE), "--format", "json", "-q"])
    errors = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] == "error"]
    assert errors
    opens = [line.strip() for line in out if line.strip().startswith("open it:")]
    assert opens == [f"open it: inspector {SAMPLE} --at {f['turn']}.{f['step']}" for f in errors]
    for f in errors:  # each right under its finding
        i = next(k for k, line in enumerate(out) if line.lstrip().startswith(f"error   {f['rule']}"))
        assert out[i + 1].strip() == f"open it: inspector {SAMPLE} --at {f['turn']}.{f['step']}"
    assert out[-2].startswith(f"read a rule: inspector rules {errors[0]['rule']}")
    assert "error(s)" in out[-1]  # the summary stays last
    main(["check", str(SAMPLE), "--statistics"])
    assert "open it:" not in capsys.readouterr().out


def test_clean_logs_get_no_hints(capsys):
    assert main(["check", str(SAMPLES / "clean-multi-turn.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "open it:" not in out and "read a rule" not in out


def test_the_open_command_of_a_database_session_names_it_and_quotes_paths():
    class F:
        turn, step, seq = None, None, 7

    class M:
        source = LogSource(Path("my sessions.sqlite"), Path("."), "sess-1")

    assert open_command(F, M) == "inspector 'my sessions.sqlite' --session sess-1 --at 7"


async def test_at_turn_step_opens_the_step_on_its_error(monkeypatch):
    monkeypatch.chdir(SAMPLES)
    app = create_app(SAMPLE.name, at=parse_at("2.1"))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _opened(app, pilot)
        st = screen.state.steps[screen.step_index]
        assert (st.turn, st.step) == (2, 1) and screen.active_tab == "diff"
        assert "error DIV001" in status(app)
        assert screen.query_one(DiffView).selected_key[0] == "diff"


async def test_at_seq_opens_the_event(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    seq = _seq_of(log, "I'm back. Write the changelog.")
    app = create_app(log.name, at=At(seq=seq))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _opened(app, pilot)
        await wait_for(pilot, lambda: screen.query_one(EventsView).selected_key == ("event", seq))
        assert screen.active_tab == "events" and screen.step_index == screen.state.step_of_seq(seq)
        assert f"--at {seq}" in status(app)


async def test_at_somewhere_that_is_not_in_the_log_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    app = create_app(log.name, at=At(turn=9, step=9))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _opened(app, pilot)
        assert screen.step_index == 0 and "no turn 9 step 9" in status(app)


async def test_at_with_a_folder_applies_to_the_first_session_opened(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    story_log(root)
    (root / "other").mkdir()
    story_log(root / "other")
    app = create_app("root", at=At(turn=3, step=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: isinstance(app.screen, SessionListScreen) and app.screen.finished)
        await pilot.press("enter")
        screen = await _opened(app, pilot)
        st = screen.state.steps[screen.step_index]
        assert (st.turn, st.step) == (3, 1)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("down", "enter")
        second = await _opened(app, pilot)
        assert second is not screen and second.step_index == 0  # only the first one


def test_a_bad_at_is_a_usage_error(capsys, tmp_path):
    assert main([str(SAMPLE), "--at", "two"]) == 2
    assert "--at two" in capsys.readouterr().err


def test_help_documents_at(capsys):
    with pytest.raises(SystemExit):
        main(["tui", "--help"])
    assert "--at SEQ|TURN.STEP" in capsys.readouterr().out
