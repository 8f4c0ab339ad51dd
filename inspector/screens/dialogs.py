"""Small modal screens: the category filter, the export path prompt and the key help."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from inspector.widgets.jsontext import safe
from inspector.widgets.status import Paragraph

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
            yield Label(
                Text("Show only the steps with findings of a category (or whose verdicts disagree)", style="bold")
            )
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
            yield Label(Text("Enter writes the file (asks first if it exists), Escape cancels", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question (overwrite a file?): y or Enter says yes, n or Escape no."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: Text) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question)
            yield Label(Text("y overwrites · n or Escape keeps the file", style="dim"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


SESSION_KEYS = [
    ("↑ ↓  j k", "move between steps (↑ ↓ move inside a tab when it has focus)"),
    ("PgUp PgDn  g G", "ten steps up/down, first/last step"),
    ("n  N", "next/previous finding, in log order: its step, its tab, its recorded request"),
    ("[  ]", "previous/next resume boundary (loop instance)"),
    ("1 … 6", "Request, Diff, Header, Prefix, Events, Findings tab"),
    ("Tab", "move focus between the timeline and the tab content (the focused one is framed)"),
    ("Enter", "in Findings: jump to the finding; in Request: to the part's event; in Events: fold/unfold a chunk run"),
    ("/", "search message and event text; matches are highlighted"),
    (">  <", "next/previous search match"),
    ("f", "filter the timeline by finding category"),
    ("e", "jump from the selected part of the request (or difference, field) to the event that produced it"),
    ("w", "when did this change? jump to the event that last set the selected part or header field (else the prefix)"),
    ("x", "export the rebuilt request of the step as JSON (asks before overwriting)"),
    ("R", "write a redacted, reduced repro of the selected finding to a new folder (shows its path)"),
    ("t", "show or hide the token bar of the step (needs the tokens extra)"),
    ("T", "switch between the dark and the light theme (remembered)"),
    ("Escape", "back to the timeline; from the timeline, back to the session list"),
    ("ctrl+p", "command palette: every action by name, and other themes"),
    ("q", "quit"),
]

LIST_KEYS = [
    ("↑ ↓  j k", "move between sessions"),
    ("PgUp PgDn", "ten sessions up/down"),
    ("Enter", "open the highlighted session"),
    ("s", "sort by the next column (the top row is highlighted)"),
    ("r", "reverse the sort"),
    ("/", "filter by session id, cwd or file; Enter applies, Escape clears"),
    ("T", "switch between the dark and the light theme (remembered)"),
    ("ctrl+p", "command palette"),
    ("q", "quit"),
]


def marks_legend() -> Text:
    """The timeline's step marks, explained."""
    return Text.assemble(
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


class HelpBody(VerticalScroll, can_focus=True):
    """The scrolling part of the help: arrows and PgUp/PgDn scroll it."""


class HelpScreen(ModalScreen[None]):
    """The keys of the screen in front, explained; scrolls when it does not fit, and says so."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, title: str, keys: list[tuple[str, str]], legend: Text | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.keys = keys
        self.legend = legend

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold #7aa2f7", no_wrap=True)
        table.add_column()
        for key, what in self.keys:
            table.add_row(key, what)
        with Vertical(id="dialog", classes="help"):
            yield Label(Text.assemble((self.title_text, "bold"), ("   Escape closes", "dim")))
            with HelpBody(id="help-body"):
                yield Paragraph(table)
                if self.legend is not None:
                    yield Paragraph(self.legend)
            yield Paragraph(Text(""), id="help-more")

    def on_mount(self) -> None:
        body = self.query_one(HelpBody)
        body.focus()
        self.watch(body, "scroll_y", self._more, init=False)
        self.watch(body, "max_scroll_y", self._more, init=False)
        self.call_after_refresh(self._more)

    def on_resize(self) -> None:
        # the frame, the title and the indicator stay on screen; the body scrolls in what is left
        self.query_one(HelpBody).styles.max_height = max(3, self.size.height - 6)
        self.call_after_refresh(self._more)

    def _more(self, *_: object) -> None:
        """The line under the help: how much is below (or above), and how to get there."""
        body = self.query_one(HelpBody)
        below = max(0, round(body.max_scroll_y - body.scroll_y))
        above = round(body.scroll_y)
        more = self.query_one("#help-more", Paragraph)
        if not below and not above:
            more.update(Text(""))
            more.display = False
            return
        more.display = True
        parts = []
        if below:
            parts.append(f"▼ {below} more line{'s' if below != 1 else ''} below")
        if above:
            parts.append(f"▲ {above} above")
        more.update(Text(" · ".join(parts) + " · ↑ ↓ PgUp PgDn scroll", style="bold #e0af68"))

    def action_close(self) -> None:
        self.dismiss(None)
