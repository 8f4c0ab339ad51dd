"""Small modal screens: the category filter, the export path prompt and the key help."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from inspector.widgets.jsontext import safe

ALL = "\x00all"


class FilterScreen(ModalScreen[str | None]):
    """Pick a finding category to filter the timeline by (or all steps)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, categories: dict[str, int], current: str | None) -> None:
        super().__init__()
        self.categories = categories
        self.current = current

    def compose(self) -> ComposeResult:
        options = [Option(Text("all steps" + ("  ◀" if self.current is None else "")), id=ALL)]
        for cat, n in sorted(self.categories.items()):
            options.append(Option(Text(f"{safe(cat)}  ({n})" + ("  ◀" if cat == self.current else "")), id=cat))
        with Vertical(id="dialog"):
            yield Label(Text("Show only the steps with findings of category", style="bold"))
            yield OptionList(*options, id="categories")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(None if event.option.id == ALL else event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(self.current)


class ExportScreen(ModalScreen[str | None]):
    """Ask where to write the rebuilt request."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text("Export the rebuilt request as JSON to:", style="bold"))
            yield Input(value=self.default, id="export-path")
            yield Label(Text("Enter writes the file, Escape cancels", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


KEYS = [
    ("↑ ↓  j k", "move between steps (↑ ↓ move inside a tab when it has focus)"),
    ("PgUp PgDn  g G", "ten steps up/down, first/last step"),
    ("n  N", "next/previous finding: jump to its step and the tab that shows it"),
    ("[  ]", "previous/next resume boundary (loop instance)"),
    ("1 … 6", "Request, Diff, Header, Prefix, Events, Findings tab"),
    ("Tab", "move focus between the timeline and the tab content"),
    ("Enter", "in Findings: jump to the finding; in Events: fold/unfold a chunk run"),
    ("/", "search message and event text (Enter again: next match)"),
    ("f", "filter the timeline by finding category"),
    ("e", "jump from the selected message (or difference, field) to the event that produced it"),
    ("w", "when did this change? jump to the event that last changed the selected header field (else the prefix)"),
    ("x", "export the rebuilt request of the step as JSON"),
    ("t", "show or hide the token bar of the step (needs the tokens extra)"),
    ("Escape", "back to the timeline; from the timeline, back to the session list"),
    ("ctrl+p", "command palette"),
    ("q", "quit"),
]


class HelpScreen(ModalScreen[None]):
    """The key bindings, explained."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold #7aa2f7", no_wrap=True)
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        legend = Text.assemble(
            ("marks  ", "bold"),
            ("✓", "bold green"),
            " matches  ",
            ("✗", "bold red"),
            " messages diverge  ",
            ("≠", "bold #ff9e64"),
            " header diverges  ",
            ("?", "bold red"),
            " unexplained  ",
            ("·", "dim"),
            " not checked  ",
            ("●n", "bold red"),
            " findings",
        )
        with VerticalScroll(id="dialog", classes="help"):
            yield Label(Text.assemble(("inspector keys", "bold"), ("   Escape closes", "dim")))
            yield Static(table)
            yield Static(legend)

    def action_close(self) -> None:
        self.dismiss(None)
