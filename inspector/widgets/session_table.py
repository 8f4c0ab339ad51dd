"""The session list's table, drawn with the Line API (a sessions root may hold thousands).

Rows are :class:`SessionRow` s in display order, each with a depth: a
forked child is drawn under its parent, indented.  The widget owns only its
cursor; Enter or a double click posts :class:`~inspector.messages.SessionChosen`.
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass, field

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from inspector.messages import SessionChosen
from inspector.widgets.jsontext import safe, styled
from inspector.widgets.palette import Recolored
from invariants.read.source import LogPath, UrlPath


@dataclass
class SessionRow:
    """One log of a folder: what its header says, then (``loaded``) what its check found."""

    order: int
    path: LogPath
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
GIVE_WAY = ("cwd", "forks", "resumes", "created", "events", "steps")  # dropped first when the table is narrow
FLEX_MIN = 32  # narrowest a shared column (file, cwd) may be: a path tail that tells sessions apart


def layout(width: int) -> list[tuple[int, int]]:
    """(column index, width) of the columns that fit ``width``; narrow columns give way, the findings stay."""
    keys = [key for key, _, _, _ in COLUMNS]
    shown = list(range(len(COLUMNS)))
    for drop in (None, *GIVE_WAY):
        if drop is not None:
            shown.remove(keys.index(drop))
        own = [10 if keys[i] == "created" and width < WIDE else COLUMNS[i][2] for i in shown]
        fixed = sum(w for w in own if w > 0) + len(shown) + 2  # a space after each column, two before the first
        shares = -sum(w for w in own if w < 0)
        flex = sum(1 for w in own if w < 0)
        if width - fixed >= FLEX_MIN * flex:
            break
    rest = max(FLEX_MIN * flex, width - fixed)
    return [(i, w if w > 0 else max(4, rest * -w // shares)) for i, w in zip(shown, own)]


def shown_path(s: SessionRow, root: LogPath | None) -> str:
    """The file as the list shows it (and sorts it): relative to the opened root, ``#id`` for a database session."""
    return _relative(s.path, s.member, root)


@functools.lru_cache(maxsize=65536)
def _relative(path: LogPath, member: str | None, root: LogPath | None) -> str:
    name = path.name
    if root is not None and root.is_dir():
        try:
            name = _below(path, root)
        except (ValueError, OSError):
            name = str(path)
    return name if member is None else f"{name}#{member}"


def _below(path: LogPath, root: LogPath) -> str:
    """``path`` relative to ``root``; a ValueError when it is not below it (a local file is never below a URL)."""
    if isinstance(path, UrlPath):
        return path.resolve().relative_to(root.resolve()).as_posix()
    if isinstance(root, UrlPath):
        raise ValueError(f"{path} is not below {root}")
    return path.resolve().relative_to(root.resolve()).as_posix()


def _cell(text: Text, width: int, align: str, keep_end: bool = False) -> Text:
    if keep_end and text.cell_len > width > 1:  # a path: its end (folder/file) says more than its start
        text = Text.assemble("…", text[len(text) - width + 1 :])
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
    for i, w in layout(width):
        key, title, _, align = COLUMNS[i]
        title = "created" if key == "created" and width < WIDE else title
        down = reverse != (key == "errors")  # the findings sort worst (most) first
        label = title + ((" ▼" if down else " ▲") if key == sort_key else "")
        out.append_text(_cell(Text(label, style="bold"), w, align))
        out.append(" ")
    return out


def row_text(s: SessionRow, depth: int, width: int, root: LogPath | None = None) -> Text:
    out = Text("  ")
    cells: list[Text] = []
    ident = styled(("  " * (depth - 1) + "└ " if depth else "") + safe(s.id), "bold" if not depth else "")
    cells.append(ident)
    cells.append(Text(safe(shown_path(s, root))))
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
    for i, w in layout(width):
        key, _, _, align = COLUMNS[i]
        out.append_text(_cell(cells[i], w, align, keep_end=key == "file"))
        out.append(" ")
    return out


class SessionTable(Recolored, ScrollView, can_focus=True):
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

    def __init__(self, *, id: str | None = None, root: LogPath | None = None) -> None:
        super().__init__(id=id)
        self.root = root  # file paths are shown relative to it
        self.rows: list[tuple[SessionRow, int]] = []
        self.cursor = 0
        self.moved = False  # the user moved the cursor: until then it stays on the top (worst) row
        self.placeholder = "looking for session logs…"

    def set_rows(self, rows: list[tuple[SessionRow, int]], *, top: bool = False) -> None:
        """New rows; the cursor stays on its session (``top``: on the first row, after a sort) and in view."""
        current = self._key(self.rows[self.cursor][0]) if 0 <= self.cursor < len(self.rows) else None
        self.rows = rows
        if top or not self.moved:
            self.cursor = 0
        else:
            self.cursor = next((i for i, (s, _) in enumerate(rows) if self._key(s) == current), 0)
        self.virtual_size = Size(self.size.width, len(rows))
        self._keep_in_view()
        self.refresh()

    def _keep_in_view(self) -> None:
        """``force``: as the timeline's (a scroll is ignored until the rows just set show a scrollbar)."""
        height = max(1, self.scrollable_content_region.height)
        if self.cursor < self.scroll_offset.y:
            self.scroll_to(y=self.cursor, animate=False, immediate=True, force=True)
        elif self.cursor >= self.scroll_offset.y + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True, force=True)

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
        text = row_text(summary, depth, width, self.root)
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
        self.moved = True
        self.cursor = max(0, min(len(self.rows) - 1, self.cursor + delta))
        self._keep_in_view()
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
            self.moved = True
            self.cursor = index
            self.refresh()
