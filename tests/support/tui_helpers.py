"""Helpers to drive the app under Textual's Pilot (the logs the TUI tests open come from tests.support.logs)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable


async def settle(pilot: Any, rounds: int = 3) -> None:
    """Let workers finish and their messages be handled."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        # a --follow watcher runs until the app exits: never wait for it
        # (and an empty list would mean "all workers" to wait_for_complete)
        busy = [w for w in app.workers if w.group != "follow"]
        if busy:
            await app.workers.wait_for_complete(busy)
    await pilot.pause()


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


def create_app(*args: Any, **kwargs: Any) -> Any:
    """The app users run, without animations (Pilot waits for them; the end state is the same)."""
    from inspector.app import create_app as make

    app = make(*args, **kwargs)
    app.animation_level = "none"
    return app


async def open_session(app: Any, pilot: Any) -> Any:
    """The session screen once its log is checked (the app was opened on one log)."""
    from inspector.screens.session import SessionScreen

    await settle(pilot)
    await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.state is not None)
    return app.screen
