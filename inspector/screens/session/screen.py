"""The session screen: the timeline of steps and, for the selected step, the tabs.

Its parts, each a layer of the class: :mod:`.display` (the state the screen owns
and how the tabs draw it), :mod:`.navigation` (moves, jumps, search),
:mod:`.loading` (the check, preview, follow and token workers) and
:mod:`.export` (export and repro).  This module lays the screen out and binds its keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Input, TabbedContent, TabPane, Tabs

from inspector.screens.session.display import TAB_TITLES
from inspector.screens.session.export import SessionExport
from inspector.screens.session.loading import SessionLoading
from inspector.widgets.diff_view import DiffView
from inspector.widgets.events_view import EventsView
from inspector.widgets.findings_view import FindingsView
from inspector.widgets.header_view import HeaderView
from inspector.widgets.jsontext import safe
from inspector.widgets.prefix_view import PrefixView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import SessionBar, StatusLine
from inspector.widgets.timeline import Timeline
from inspector.widgets.token_bar import TokenBar
from invariants.model.registry import TABS


class SessionScreen(SessionLoading, SessionExport):
    BINDINGS = [
        Binding("j", "step(1)", "Step", key_display="j/k"),
        Binding("k", "step(-1)", "Step", show=False),
        Binding("down", "step(1)", "Next step", show=False),
        Binding("up", "step(-1)", "Previous step", show=False),
        Binding("pagedown", "step(10)", "10 steps down", show=False),
        Binding("pageup", "step(-10)", "10 steps up", show=False),
        Binding("g,home", "edge(0)", "First step", show=False),
        Binding("G,end", "edge(1)", "Last step", show=False),
        Binding("n", "next_finding", "Finding", key_display="n/N"),
        Binding("N", "previous_finding", "Previous finding", show=False),
        Binding("right_square_bracket", "resume(1)", "Resume", key_display="[/]"),
        Binding("left_square_bracket", "resume(-1)", "Previous resume", show=False),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("greater_than_sign", "match(1)", "Next match", show=False),
        Binding("less_than_sign", "match(-1)", "Previous match", show=False),
        Binding("f", "filter", "Filter", show=False),
        Binding("e", "goto_origin", "Event"),
        Binding("w", "when_changed", "When?"),
        Binding("x", "export", "Export"),
        Binding("R", "repro", "Repro", show=False),
        Binding("t", "tokens", "Tokens", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("escape", "back", "Back", show=False),
        Binding("q", "quit", "Quit"),
        *[Binding(str(i + 1), f"tab('{t}')", TAB_TITLES[t], show=False) for i, t in enumerate(TABS)],
    ]

    # -- layout --------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield SessionBar(Text(f" {safe(self.source.display)} · reading…"), id="session-bar")
        yield TokenBar(id="token-bar")
        with Horizontal(id="main"):
            yield Timeline(id="timeline")
            with TabbedContent(id="tabs", initial="request"):
                with TabPane("Request", id="request"):
                    yield RequestView(id="request-view")
                with TabPane("Diff", id="diff"):
                    yield DiffView(id="diff-view")
                with TabPane("Header", id="header"):
                    yield HeaderView(id="header-view")
                with TabPane("Prefix", id="prefix"):
                    yield PrefixView(id="prefix-view")
                with TabPane("Events", id="events"):
                    yield EventsView(id="events-view")
                with TabPane("Findings", id="findings"):
                    yield FindingsView(id="findings-view")
        yield StatusLine(Text(""), id="status")
        yield Input(
            placeholder="search messages and events · Enter searches (again: next) · Escape closes", id="search"
        )
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p still opens it: the help says so

    def on_mount(self) -> None:
        # Tab moves between the timeline and the tab's content; tabs switch with 1-6 or a click.
        self.tabs.query_one(Tabs).can_focus = False
        self.query_one(Timeline).focus()
        if isinstance(self.source.path, Path):  # a local log's head is read at once: on the first frame
            self._preview_now()
        # the whole check after that frame is drawn: it holds the GIL for long stretches
        self.call_after_refresh(self.load_session)

    def on_resize(self, event: Any) -> None:
        # a third of the screen for the timeline, within reason
        width = max(30, min(44, self.size.width // 3))
        self.timeline.styles.width = width
        self._update_tab_labels(self.size.width - width)
