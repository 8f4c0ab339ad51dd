"""The TUI application and its factory, shared by the CLI and the tests.

``create_app`` builds the same :class:`InspectorApp` that ``inspector PATH``
runs, so the Pilot and snapshot tests drive what users see.  A log file opens
the session screen; a folder or a sessions root opens the session list
(which goes straight to the session when ``--session`` names one, or when
there is only one log); so does a SQLite session database.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme

from inspector import settings
from inspector.deeplink import At
from invariants.gate.config import Config
from invariants.gate.result import CheckOptions
from invariants.read.source import LogPath, LogSource, log_path

DARK_THEME = "textual-dark"
LIGHT_THEME = "textual-light"


class InspectorApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "inspector"
    BINDINGS = [Binding("T", "toggle_theme", "Theme", show=False)]

    def __init__(
        self,
        path: str | LogPath,
        *,
        captures: list | None = None,
        session: str | None = None,
        follow: bool = False,
        profile: str | None = None,
        db: str | os.PathLike | None = None,
        config: Config | None = None,
        at: At | None = None,
    ) -> None:
        super().__init__()
        self.at = at  # --at: where the (first) session opens
        self.db = Path(db) if db is not None else None  # the index the session list reads (None: the default, if any)
        self.path = log_path(path)  # a local path, or a URL read through fsspec
        self.options = CheckOptions(captures=[log_path(c) for c in captures] if captures else None, profile=profile)
        self.config = config  # what the screens report, as the gate does (None: every finding)
        self.session = session
        self.follow = follow

    # -- theme: dark or light, remembered between runs (inspector.settings) ---------------------
    def _restore_theme(self) -> None:
        saved = settings.load().get("theme")
        if isinstance(saved, str) and saved in self.available_themes:
            self.theme = saved
        self.theme_changed_signal.subscribe(self, self._remember_theme)

    def _remember_theme(self, theme: Theme) -> None:
        settings.save(theme=theme.name)

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT_THEME if self.current_theme.dark else DARK_THEME

    def on_mount(self) -> None:
        self._restore_theme()
        # Every keypress builds thousands of short-lived Text/Strip objects;
        # with a big session model in memory the default thresholds make the
        # cyclic GC walk the model every few moves (~100 ms each on a 50k-event
        # log).  Screens freeze the model after loading; the threshold keeps
        # young collections rare.  Both are undone on exit.
        self._gc_threshold = gc.get_threshold()
        gc.set_threshold(50_000, 20, 100)
        from invariants.read.source import SQLITE_SUFFIXES

        if self.path.is_dir() or self.path.name.endswith(SQLITE_SUFFIXES):  # a database holds many sessions
            from inspector.screens.session_list import SessionListScreen

            self.push_screen(
                SessionListScreen(
                    self.path,
                    options=self.options,
                    config=self.config,
                    session=self.session,
                    follow=self.follow,
                    db=self.db,
                    at=self.at,
                )
            )
        else:
            from inspector.screens.session import SessionScreen  # only: a log's first frame waits for its imports

            self.push_screen(
                SessionScreen(
                    LogSource(self.path, self.path.parent),
                    options=self.options,
                    config=self.config,
                    follow=self.follow,
                    at=self.at,
                )
            )

    def on_unmount(self) -> None:
        gc.set_threshold(*self._gc_threshold)
        gc.unfreeze()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Dark or light theme",
            "Switch between the dark and the light theme; remembered (t)",
            self.action_toggle_theme,
        )
        from inspector.screens.session import SessionScreen

        if isinstance(screen, SessionScreen):
            yield SystemCommand(
                "Next finding", "Jump to the next finding: its step, its tab, its path (n)", screen.action_next_finding
            )
            yield SystemCommand("Previous finding", "Jump to the previous finding (N)", screen.action_previous_finding)
            yield SystemCommand(
                "Next resume boundary",
                "Jump to the first step of the next loop instance (])",
                lambda: screen.action_resume(1),
            )
            yield SystemCommand(
                "Previous resume boundary",
                "Jump to the first step of the previous loop instance ([)",
                lambda: screen.action_resume(-1),
            )
            yield SystemCommand("Search", "Search message and event text (/)", screen.action_search)
            yield SystemCommand(
                "Filter timeline", "Show only steps with findings of one category (f)", screen.action_filter
            )
            yield SystemCommand(
                "Go to producing event",
                "Jump from the selected message to the event that produced it (e)",
                screen.action_goto_origin,
            )
            yield SystemCommand(
                "When did this change?",
                "Jump to the event that last changed the selected header field or the prefix (w)",
                screen.action_when_changed,
            )
            yield SystemCommand(
                "Export request", "Write the rebuilt request of the step as JSON (x)", screen.action_export
            )
            yield SystemCommand("Help", "All keys, explained (?)", screen.action_help)
            yield SystemCommand(
                "Next search match", "The next event that matches the search (>)", lambda: screen.next_match(1)
            )
            yield SystemCommand(
                "Previous search match", "The previous event that matches the search (<)", lambda: screen.next_match(-1)
            )
            for i, (tab, title) in enumerate(
                (
                    ("request", "Request"),
                    ("diff", "Diff"),
                    ("header", "Header"),
                    ("prefix", "Prefix"),
                    ("events", "Events"),
                    ("findings", "Findings"),
                )
            ):
                yield SystemCommand(
                    f"{title} tab", f"Show the {title} tab ({i + 1})", lambda t=tab: screen.action_tab(t)
                )


def create_app(
    path: str | LogPath,
    captures: list | None = None,
    session: str | None = None,
    follow: bool = False,
    profile: str | None = None,
    db: str | os.PathLike | None = None,
    config: Config | None = None,
    at: At | None = None,
) -> InspectorApp:
    """The app ``inspector PATH`` runs (the CLI and the tests both call this)."""
    return InspectorApp(
        path, captures=captures, session=session, follow=follow, profile=profile, db=db, config=config, at=at
    )
