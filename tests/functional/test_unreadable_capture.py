"""A capture file that cannot be read must not look like an all-clear, in the TUI or in check."""

from __future__ import annotations

from pathlib import Path

from inspector.widgets.status import StatusLine
from tests.support.logs import story_header, story_log, story_session
from tests.support.tui_helpers import create_app, settle, wait_for

SIZE = (140, 36)


async def test_a_missing_capture_file_is_said_on_the_session_screen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    app = create_app(Path(log.name), captures=["missing.jsonl"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: getattr(app.screen, "state", None) is not None)
        status = app.screen.query_one(StatusLine).plain
        assert "cannot check fully: missing.jsonl: capture file not found" in status
        assert "no findings" not in status
        bar = str(app.screen.query_one("#session-bar").content)
        assert "missing.jsonl: capture file not found" in bar
        await pilot.press("n")  # the status line moves on; the bar keeps saying it
        await settle(pilot)
        assert "missing.jsonl: capture file not found" in str(app.screen.query_one("#session-bar").content)


async def test_a_missing_capture_file_is_said_on_the_session_list(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    for name in ("one", "two"):
        b = story_session(name)
        b.user_turn("q")
        b.streamed_step("a", header_reason="initial", header=story_header())
        b.end_turn()
        b.write(root / f"{name}.jsonl")
    app = create_app(root, captures=[str(tmp_path / "missing.jsonl")])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await wait_for(pilot, lambda: screen.finished)
        await pilot.pause(0.2)
        bar = str(screen.query_one("#list-bar").content)
        assert bar.count("missing.jsonl: capture file not found") == 1


def test_check_with_a_missing_capture_file_prints_only_the_error(capsys, tmp_path):
    from inspector.cli import main

    log, _ = story_log(tmp_path)
    assert main(["check", str(log), "--no-cache", "--captures", str(tmp_path / "missing.jsonl")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"inspector: error: {tmp_path / 'missing.jsonl'}: capture file not found\n"


def test_the_tui_command_with_an_unreadable_capture_names_it_and_does_not_open(capsys, tmp_path):
    from inspector.cli import main

    log, _ = story_log(tmp_path)
    for bad, said in ((tmp_path / "missing.jsonl", "capture file not found"), (tmp_path, "not a capture file")):
        assert main([str(log), "--captures", str(bad)]) == 2  # before any app starts: no all-clear on screen
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"inspector: error: {bad}: {said}")
