"""One-line bars: the session bar at the top and the status line above the footer.

Both show ``Text`` only (file names, session ids and finding messages come
from logs, so they are never given to Textual as markup strings).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from inspector.widgets.palette import Recolored


class Paragraph(Recolored, Static):
    """Static text drawn with the views' palette (recoloured on a light theme)."""


class SessionBar(Paragraph):
    """One line at the top (the open session, or the list's root): never wraps, cut with an ellipsis."""

    DEFAULT_CSS = """
    SessionBar { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def show(self, text: Text) -> None:
        self.update(text)


class StatusLine(Paragraph):
    """What the last action found: a finding's path and message, a search hit, an export."""

    def show(self, text: Text | str) -> None:
        self.update(text if isinstance(text, Text) else Text(text))

    @property
    def plain(self) -> str:
        content = self.content
        return content.plain if isinstance(content, Text) else str(content)
