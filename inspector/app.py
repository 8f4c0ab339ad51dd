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
        """Textual's commands, the theme, and every action the screen in front binds to a key (so the
        palette cannot miss one: it is built from the bindings), each with its key in brackets."""
        textuals = list(super().get_system_commands(screen))
        yield from textuals
        if not any(c.title == "Quit" for c in textuals):  # older Textual releases name theirs otherwise
            yield SystemCommand("Quit", "Quit the application (q)", self.action_quit)
        yield SystemCommand(
            "Dark or light theme",
            "Switch between the dark and the light theme; remembered (T)",
            self.action_toggle_theme,
        )
        seen: set[str] = set()
        keys: dict[str, list[str]] = {}
        for b in getattr(screen, "BINDINGS", []):
            if isinstance(b, Binding):
                keys.setdefault(b.action, []).append(b.key_display or b.key)
        for b in getattr(screen, "BINDINGS", []):
            if not isinstance(b, Binding) or b.action in seen or b.action in PALETTE_SKIP:
                continue
            seen.add(b.action)
            title, help_text = {**PALETTE, **getattr(screen, "PALETTE", {})}.get(
                b.action, (b.description, b.description)
            )
            key = PALETTE_KEYS.get(b.action) or " ".join(keys[b.action])
            yield SystemCommand(title, f"{help_text} ({key})", lambda a=b.action: screen.run_action(a))


# The command palette's words for a screen's actions (by action; the key comes from the binding).
PALETTE: dict[str, tuple[str, str]] = {
    "step(1)": ("Next step", "Move to the next step of the timeline"),
    "step(-1)": ("Previous step", "Move to the previous step of the timeline"),
    "step(10)": ("Ten steps down", "Move ten steps down the timeline"),
    "step(-10)": ("Ten steps up", "Move ten steps up the timeline"),
    "edge(0)": ("First step", "Move to the first step"),
    "edge(1)": ("Last step", "Move to the last step"),
    "next_finding": ("Next finding", "Jump to the next finding: its step, its tab, its path"),
    "previous_finding": ("Previous finding", "Jump to the previous finding"),
    "resume(1)": ("Next resume boundary", "Jump to the first step of the next loop instance"),
    "resume(-1)": ("Previous resume boundary", "Jump to the first step of the previous loop instance"),
    "search": ("Search", "Search message and event text"),
    "match(1)": ("Next search match", "The next event that matches the search"),
    "match(-1)": ("Previous search match", "The previous event that matches the search"),
    "filter": ("Filter timeline", "Show only steps with findings of one category"),
    "goto_origin": ("Go to producing event", "Jump from the selected message or difference to the event that made it"),
    "when_changed": ("When did this change?", "Jump to the event that last changed the selected field or the prefix"),
    "export": ("Export request", "Write the rebuilt request of the step as JSON"),
    "repro": ("Write a repro", "Write a redacted, reduced repro of the selected finding to a new folder"),
    "tokens": ("Token bar", "Show or hide the token bar of the step (needs the tokens extra)"),
    "help": ("Help", "All keys, explained"),
    "back": ("Back", "Back to the timeline; from the timeline, back to the session list"),
    "sort": ("Sort", "Sort the sessions by the next column"),
    "reverse": ("Reverse the sort", "Reverse the order of the sessions"),
    "clear_filter": ("Clear filter", "Show every session again"),
    **{
        f"tab('{t}')": (f"{t.title()} tab", f"Show the {t.title()} tab")
        for t in ("request", "diff", "header", "prefix", "events", "findings")
    },
}
PALETTE_KEYS = {  # where a binding's key display is shared by two actions ("n/N") or is a key's name
    "step(1)": "j ↓",
    "step(-1)": "k ↑",
    "step(10)": "PgDn",
    "step(-10)": "PgUp",
    "edge(0)": "g Home",
    "edge(1)": "G End",
    "next_finding": "n",
    "previous_finding": "N",
    "resume(1)": "]",
    "resume(-1)": "[",
    "match(1)": ">",
    "match(-1)": "<",
    "back": "Escape",
    "clear_filter": "Escape",
}
PALETTE_SKIP = {"quit"}  # Textual's own "Quit" command is there


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
