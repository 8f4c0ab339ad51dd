"""Streaming first screen (issue 13, item 6): a huge log shows its first steps, replayed from its head,
while the whole log is checked; the findings follow, and the step the user moved to stays selected."""

from __future__ import annotations

import threading
import uuid

import pytest

from inspector.screens.session import SessionScreen
from inspector.widgets.status import StatusLine
from inspector.widgets.timeline import Timeline
from tests.support.logs import seq_of, story_log
from tests.support.tui_helpers import create_app, wait_for


def _preview_turns_1_and_2(tmp_path, log, monkeypatch) -> tuple[threading.Event, list[bool]]:
    """Preview the story log's head up to turn 3's start; hold the whole check until the gate is set.
    The list records, per head read, whether it ran on the main thread."""
    lines = (tmp_path / "story.jsonl").read_bytes().splitlines(keepends=True)
    turn3 = seq_of(log, "turn/start", turn=3)
    monkeypatch.setattr("inspector.screens.session.loading.PREVIEW_FROM", 0)
    monkeypatch.setattr("inspector.screens.session.loading.PREVIEW_BYTES", sum(len(x) for x in lines[: turn3 + 1]))
    gate = threading.Event()
    check = SessionScreen._check
    read_in: list[bool] = []
    head = SessionScreen._head

    def held_check(self):
        assert gate.wait(20), "the test never let the check run"
        return check(self)

    def spied(self):
        read_in.append(threading.current_thread() is threading.main_thread())
        return head(self)

    monkeypatch.setattr(SessionScreen, "_check", held_check)
    monkeypatch.setattr(SessionScreen, "_head", spied)
    return gate, read_in


async def test_the_first_steps_show_before_the_whole_log_is_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    gate, read_in = _preview_turns_1_and_2(tmp_path, log, monkeypatch)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.previewing)
        screen = app.screen
        assert read_in == [True]  # a local head is read on mount, so the first frame shows it
        assert screen.query_one(Timeline).visible_steps() == [0, 1, 2]  # turns 1 and 2 only
        assert not screen.state.findings
        assert "checking the whole log" in screen.query_one(StatusLine).plain
        assert "checking the whole log" in str(screen.query_one("#session-bar").content)
        await pilot.press("j")
        await wait_for(pilot, lambda: screen.step_index == 1)
        gate.set()
        await wait_for(pilot, lambda: not screen.previewing and len(screen.state.steps) == 6)
        assert len(screen.state.findings) == 2  # the findings arrive with the whole check
        assert screen.step_index == 1  # where the user went during the preview
        assert "checking the whole log" not in str(screen.query_one("#session-bar").content)


async def test_a_small_log_is_checked_at_once_without_a_preview(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    story_log(tmp_path)
    seen = []
    monkeypatch.setattr(SessionScreen, "_show_preview", lambda self, *head: seen.append(head))
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
        assert len(app.screen.state.steps) == 6 and not seen


async def test_a_huge_remote_log_is_previewed_from_the_check_worker(tmp_path, monkeypatch):
    fsspec = pytest.importorskip("fsspec", reason="the fleet extra (fsspec) is not installed")
    log, _ = story_log(tmp_path)
    base = f"/t-{uuid.uuid4().hex[:8]}"
    for p in tmp_path.iterdir():
        fsspec.filesystem("memory").pipe(f"{base}/{p.name}", p.read_bytes())
    gate, read_in = _preview_turns_1_and_2(tmp_path, log, monkeypatch)
    app = create_app(f"memory://{base}/story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.previewing)
        screen = app.screen
        assert screen.query_one(Timeline).visible_steps() == [0, 1, 2]
        assert read_in == [False]  # a remote head is read in the worker, not on the first frame's way
        gate.set()
        await wait_for(pilot, lambda: not screen.previewing and len(screen.state.steps) == 6)
        assert len(screen.state.findings) == 2


@pytest.mark.parametrize("name", ["story.jsonl", "story.jsonl.zst"])
async def test_findings_fill_in_while_the_whole_log_is_checked(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    gate, _ = _preview_turns_1_and_2(tmp_path, log, monkeypatch)
    if name.endswith(".zst"):  # the same log, compressed, alone beside its capture
        zstandard = pytest.importorskip("zstandard", reason="zstandard is not installed")
        (tmp_path / name).write_bytes(zstandard.ZstdCompressor().compress((tmp_path / "story.jsonl").read_bytes()))
        (tmp_path / "story.jsonl").unlink()
    monkeypatch.setattr("invariants.replay.fold.PROGRESS_BYTES", 1)  # told after every event
    held = threading.Event()
    told = SessionScreen._progress
    first: list[int] = []

    def hold_at_first_finding(self, source, findings, read_bytes):
        told(self, source, findings, read_bytes)
        if findings and not first:  # the check waits, mid-replay, until the test has looked
            first.append(read_bytes)
            assert held.wait(20), "the test never let the check go on"

    monkeypatch.setattr(SessionScreen, "_progress", hold_at_first_finding)
    app = create_app(name)
    async with app.run_test(size=(200, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.previewing)
        screen = app.screen
        gate.set()
        await wait_for(pilot, lambda: screen.previewing and len(screen.state.findings) == 1)
        (f,) = screen.state.findings
        assert f.rule == "PFX002"  # the drift at turn 3's resume: read, though past the steps shown
        assert screen.state.finding_step == [None]  # not pinned to the last step shown
        assert screen.query_one(Timeline).visible_steps() == [0, 1, 2]
        status = screen.query_one(StatusLine).plain
        assert "1 finding so far (1 past the steps shown)" in status
        bar = str(screen.query_one("#session-bar").content)
        assert "⚠1" in bar
        if name.endswith(".zst"):  # offsets count the decompressed text: no share of the file's size
            assert "zstd file" in status and "MB (decompressed) read" in status and "%" not in bar
        else:
            assert "%" in bar and "decompressed" not in status
        held.set()
        await wait_for(pilot, lambda: not screen.previewing and len(screen.state.steps) == 6)
        assert sorted(x.rule for x in screen.state.findings) == ["DIV001", "PFX002"]
        assert all(s is not None for s in screen.state.finding_step)


async def test_the_user_s_own_status_is_not_overwritten_by_the_check_s_progress(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    gate, _ = _preview_turns_1_and_2(tmp_path, log, monkeypatch)
    monkeypatch.setattr("invariants.replay.fold.PROGRESS_BYTES", 1)
    held = threading.Event()
    told = SessionScreen._progress

    def slow(self, source, findings, read_bytes):
        told(self, source, findings, read_bytes)
        if findings:
            assert held.wait(20)

    monkeypatch.setattr(SessionScreen, "_progress", slow)
    app = create_app("story.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.previewing)
        screen = app.screen
        await pilot.press("j")
        await wait_for(pilot, lambda: screen.step_index == 1 and "turn 1 step 2" in screen.status.plain)
        gate.set()
        await wait_for(pilot, lambda: len(screen.state.findings) == 1)
        assert "turn 1 step 2" in screen.status.plain  # where the user is, not the check's progress
        held.set()
        await wait_for(pilot, lambda: not screen.previewing)
