"""The session list's table, drawn with the Line API (a sessions root may hold thousands).

Rows are :class:`SessionRow` s in display order, each with a depth: a
forked child is drawn under its parent, indented.  The widget owns only its
cursor; Enter or a double click posts :class:`~inspector.messages.SessionChosen`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from inspector.messages import SessionChosen
from inspector.widgets.jsontext import safe, styled


@dataclass
class SessionRow:
    """One log of a folder: what its header says, then (``loaded``) what its check found."""

    order: int
    path: Path
    id: str
    member: str | None = None  # the session's id inside a SQLite database
    cwd: str | None = None
    created: float | None = None
    parent: str | None = None
    events: int | None = None
    steps: int | None = None
    resumes: int | None = None
    forks: int = 0
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    profile: str | None = None
    loaded: bool = False
    problem: str | None = None
    indexed: bool = False  # the row came from the index (``inspector index``)
    stale: bool = False  # ... and the file changed since: re-checked live
    children: list[str] = field(default_factory=list)


COLUMNS = [  # (key, title, width, align); width < 0 = a share of the rest
    ("id", "session", 20, "left"),
    ("file", "file", -3, "left"),
    ("cwd", "cwd", -2, "left"),
    ("created", "created (UTC)", 16, "left"),
    ("events", "events", 8, "right"),
    ("steps", "steps", 6, "right"),
    ("resumes", "resumes", 7, "right"),
    ("forks", "forks", 5, "right"),
    ("errors", "findings", 12, "right"),
]


def created_text(ms: float | None, with_time: bool = True) -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return "?"
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime(
            "%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d"
        )
    except (OverflowError, OSError, ValueError):
        return "?"


WIDE = 130  # from this width on, the created column shows the time too


def column_widths(width: int) -> list[int]:
    own = [(10 if key == "created" and width < WIDE else w) for key, _, w, _ in COLUMNS]
    fixed = sum(w for w in own if w > 0) + len(COLUMNS)  # a space between columns
    shares = -sum(w for w in own if w < 0)
    rest = max(2 * shares, width - fixed - 2)
    return [w if w > 0 else max(4, rest * -w // shares) for w in own]


def _cell(text: Text, width: int, align: str) -> Text:
    text.truncate(width, overflow="ellipsis")
    pad = width - text.cell_len
    if pad > 0:
        if align == "right":
            text = Text.assemble(" " * pad, text)
        else:
            text.pad_right(pad)
    return text


def header_text(width: int, sort_key: str, reverse: bool) -> Text:
    out = Text("  ")
    for (key, title, _, align), w in zip(COLUMNS, column_widths(width)):
        title = "created" if key == "created" and width < WIDE else title
        label = title + ((" ▼" if reverse else " ▲") if key == sort_key else "")
        out.append_text(_cell(Text(label, style="bold"), w, align))
        out.append(" ")
    return out


def row_text(s: SessionRow, depth: int, width: int) -> Text:
    out = Text("  ")
    cells: list[Text] = []
    ident = styled(("  " * (depth - 1) + "└ " if depth else "") + safe(s.id), "bold" if not depth else "")
    cells.append(ident)
    name = s.path.name if s.member is None else f"{s.path.name}#{s.member}"
    if s.path.name.startswith("session.") and s.member is None:
        name = f"{s.path.parent.name}/{s.path.name}"
    cells.append(Text(safe(name)))
    cells.append(Text(safe(s.cwd or ""), style="dim"))
    cells.append(Text(created_text(s.created, width >= WIDE)))
    if s.problem:
        cells += [Text("?")] * 4
    else:
        cells.append(Text(str(s.events) if s.events is not None else "…", style="" if s.loaded else "dim"))
        cells.append(Text(str(s.steps) if s.steps is not None else "…", style="" if s.loaded else "dim"))
        cells.append(Text(str(s.resumes) if s.resumes is not None else "…", style="" if s.loaded else "dim"))
        cells.append(Text(str(s.forks) if s.forks else "", style="#bb9af7"))
    if s.problem:
        f = styled("unreadable", "bold red")
    elif not s.loaded:
        f = styled("stale, checking…" if s.stale else "checking…", "italic dim")
    else:
        f = Text()
        f.append(f"✗{s.errors}", "bold red" if s.errors else "dim")
        f.append(f" ⚠{s.warnings}", "#e0af68" if s.warnings else "dim")
        f.append(f" ●{s.infos}", "#7dcfff" if s.infos else "dim")
    cells.append(f)
    for cell, (_, _, _, align), w in zip(cells, COLUMNS, column_widths(width)):
        out.append_text(_cell(cell, w, align))
        out.append(" ")
    return out


class SessionTable(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"session-table--cursor"}
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "cursor(-10)", "Page up", show=False),
        Binding("pagedown", "cursor(10)", "Page down", show=False),
        Binding("enter", "open", "Open"),
    ]
    DEFAULT_CSS = """
    SessionTable { overflow-x: hidden; }
    SessionTable > .session-table--cursor { background: $primary 55%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[tuple[SessionRow, int]] = []
        self.cursor = 0
        self.placeholder = "looking for session logs…"

    def set_rows(self, rows: list[tuple[SessionRow, int]]) -> None:
        current = self._key(self.rows[self.cursor][0]) if 0 <= self.cursor < len(self.rows) else None
        self.rows = rows
        self.cursor = next(
            (i for i, (s, _) in enumerate(rows) if self._key(s) == current), min(self.cursor, max(0, len(rows) - 1))
        )
        self.virtual_size = Size(self.size.width, len(rows))
        self.refresh()

    @staticmethod
    def _key(s: SessionRow) -> tuple:
        return (s.path, s.member)

    @property
    def selected(self) -> SessionRow | None:
        return self.rows[self.cursor][0] if 0 <= self.cursor < len(self.rows) else None

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        base = self.rich_style
        if not self.rows:
            if y == 0:
                return (
                    Strip(list(Text(" " + self.placeholder, style="italic dim").render(self.app.console, end="")))
                    .apply_style(base)
                    .crop_extend(0, width, base)
                )
            return Strip.blank(width, base)
        if index >= len(self.rows):
            return Strip.blank(width, base)
        summary, depth = self.rows[index]
        text = row_text(summary, depth, width)
        if index == self.cursor:
            base = base + self.get_component_rich_style("session-table--cursor")
        return (
            Strip(list(text.render(self.app.console, end="")), text.cell_len)
            .apply_style(base)
            .crop_extend(0, width, base)
        )

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(self.size.width, len(self.rows))
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(len(self.rows) - 1, self.cursor + delta))
        height = max(1, self.scrollable_content_region.height)
        if self.cursor < self.scroll_offset.y:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= self.scroll_offset.y + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)
        self.refresh()

    def action_open(self) -> None:
        s = self.selected
        if s is not None:
            self.post_message(SessionChosen(s.path, s.id))

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(self.rows):
            if index == self.cursor and event.chain >= 2:
                self.action_open()
            self.cursor = index
            self.refresh()
