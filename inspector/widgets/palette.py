"""The views' colours on a light theme.

Views draw log text with one palette of hex colours picked for a dark
background; on a light one those are pale (a light green on white).  Rather
than thread the theme through every view, widgets that draw such colours mix
in :class:`Recolored`: on a light theme each line they render has its
foreground colours swapped for darker ones of the same hue and its background
marks for lighter ones, so every view reads on both themes.  Theme-variable
styles (``$primary`` cursors, borders) and ANSI colours follow the theme
already and are left alone.
"""

from __future__ import annotations

from typing import Any

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip

LIGHT_FG = {  # dark-theme colour -> the same hue, dark enough for a white background
    "#9ece6a": "#2f6f0e",
    "#f7768e": "#b3203c",
    "#e0af68": "#875a00",
    "#7dcfff": "#04628f",
    "#7aa2f7": "#2451c2",
    "#bb9af7": "#6a35bd",
    "#ff9e64": "#a84a0c",
    "#787c99": "#585c6e",
    "#a9b1d6": "#474e6b",
}
LIGHT_BG = {  # dark background marks -> light ones
    "#1f3a24": "#d3efd8",
    "#4a1f26": "#f7d6dc",
    "#6b2a12": "#fbdcc3",
    "#3b3052": "#e5dcf7",
    "#1e2433": "#e2e7f1",
}
_FG = {Color.parse(k).triplet: Color.parse(v) for k, v in LIGHT_FG.items()}
_BG = {Color.parse(k).triplet: Color.parse(v) for k, v in LIGHT_BG.items()}
_cache: dict[Style, Style] = {}


def light_style(style: Style) -> Style:
    """``style`` with its palette colours swapped for their light-theme ones."""
    out = _cache.get(style)
    if out is None:
        fg = _FG.get(style.color.triplet) if style.color is not None and style.color.triplet else None
        bg = _BG.get(style.bgcolor.triplet) if style.bgcolor is not None and style.bgcolor.triplet else None
        out = style + Style(color=fg, bgcolor=bg) if fg is not None or bg is not None else style
        if len(_cache) < 4096:
            _cache[style] = out
    return out


def light_strip(strip: Strip) -> Strip:
    return Strip(
        [Segment(text, light_style(style) if style is not None else None, control) for text, style, control in strip],
        strip.cell_length,
    )


class Recolored:
    """Mix into a widget that draws palette colours: on a light theme its lines are recoloured.

    A widget that caches rendered lines defines ``theme_changed()`` to drop them (they hold the
    component styles of the theme they were drawn in).
    """

    def on_mount(self) -> None:
        app: Any = getattr(self, "app", None)
        if app is not None and hasattr(self, "theme_changed"):
            app.theme_changed_signal.subscribe(self, lambda _theme: self.theme_changed())

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = super().render_lines(crop)  # type: ignore[misc]
        app: Any = getattr(self, "app", None)
        if app is None or app.current_theme.dark:
            return strips
        return [light_strip(s) for s in strips]
