"""The timeline: turns → steps, one row per request, drawn with the Line API.

Rows come from :meth:`SessionState.rows` (loop-instance and compaction
separators, turn headings, steps).  Only the rows on screen are rendered, so
a session with tens of thousands of steps scrolls as fast as one with ten.
The cursor only ever rests on step rows.  A click posts
:class:`~inspector.messages.StepSelected`; keys are the screen's, which then
calls :meth:`select_step`, so the selection has one owner.
"""

from __future__ import annotations

import bisect

from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from inspector.messages import StepSelected
from inspector.screens.state import SessionState, TimelineRow
from inspector.widgets.jsontext import safe, styled
from inspector.widgets.palette import Recolored

MARKS = {
    "ok": ("✓", "bold green"),
    "diverges": ("✗", "bold red"),
    "header": ("≠", "bold #ff9e64"),
    "unexplained": ("?", "bold red"),
    "unchecked": ("·", "dim"),
}
SEVERITY_STYLE = {"error": "bold red", "warning": "#e0af68", "info": "#7dcfff"}


class Timeline(Recolored, ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"timeline--cursor", "timeline--separator", "timeline--turn"}

    DEFAULT_CSS = """
    Timeline { overflow-x: hidden; }
    Timeline > .timeline--cursor { background: $primary 55%; text-style: bold; }
    Timeline > .timeline--separator { color: #bb9af7; }
    Timeline > .timeline--turn { color: $text-muted; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.rows: list[TimelineRow] = []
        self._steps: list[int] = []
        self.state: SessionState | None = None
        self.cursor_row = -1
        self._row_of_step: dict[int, int] = {}
        self._cache: LRUCache[int, Strip] = LRUCache(256)
        self.placeholder = "reading the log…"

    # -- content -----------------------------------------------------------------
    def set_rows(self, state: SessionState, rows: list[TimelineRow], step: int | None) -> None:
        self.state = state
        self.rows = rows
        self._row_of_step = {r.step: i for i, r in enumerate(rows) if r.kind == "step" and r.step is not None}
        self._steps = [r.step for r in rows if r.kind == "step" and r.step is not None]
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(rows))
        self.cursor_row = -1
        if step is not None:
            self.select_step(step)
        self.refresh()

    @property
    def selected_step(self) -> int | None:
        if 0 <= self.cursor_row < len(self.rows):
            return self.rows[self.cursor_row].step
        return None

    def visible_steps(self) -> list[int]:
        """Step indexes shown, ascending (the rows follow the log)."""
        return self._steps

    def neighbour(self, step: int | None, delta: int) -> int | None:
        """The step ``delta`` step rows away from ``step`` (clamped), among the rows shown."""
        steps = self.visible_steps()  # ascending: rows follow the log
        if not steps:
            return None
        k = bisect.bisect_left(steps, step if step is not None else -1)
        if step in self._row_of_step:
            k += delta
        else:  # the step is filtered out: count from where it would be
            k += delta - 1 if delta > 0 else delta
        return steps[max(0, min(len(steps) - 1, k))]

    def select_step(self, step: int, scroll: bool = True) -> None:
        row = self._row_of_step.get(step, -1)
        if row != self.cursor_row:
            self.cursor_row = row
            self.refresh()
        if scroll and row >= 0:
            self._scroll_to_row(row)

    def _scroll_to_row(self, row: int) -> None:
        """``force``: Textual ignores a scroll while no scrollbar is shown, and rows just set show theirs
        only at the next layout; without it a step selected as the rows grew stayed out of view."""
        height = max(1, self.scrollable_content_region.height)
        y = self.scroll_offset.y
        top = row
        # keep the separator/turn rows just above a step in view
        while top > 0 and self.rows[top - 1].kind != "step" and row - top < 3:
            top -= 1
        if top < y - 1 or row > y + height:  # a jump: put the row a third of the way down
            self.scroll_to(y=max(0, top - height // 3), animate=False, immediate=True, force=True)
        elif top < y:
            self.scroll_to(y=top, animate=False, immediate=True, force=True)
        elif row >= y + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True, force=True)

    def refresh_step(self, step: int) -> None:
        row = self._row_of_step.get(step)
        if row is not None:
            self._cache.discard(row)
            self.refresh()

    def theme_changed(self) -> None:
        """The lines cached were drawn with the old theme's styles."""
        self._cache.clear()
        self.refresh()

    # -- drawing -----------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self.rows))
        if self.cursor_row >= 0:
            self._scroll_to_row(self.cursor_row)

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
        strip = self._cache.get(index)
        if strip is None:
            text = self._row_text(self.rows[index], width)
            strip = Strip(list(text.render(self.app.console, end="")), text.cell_len)
            self._cache[index] = strip
        if index == self.cursor_row:
            base = base + self.get_component_rich_style("timeline--cursor")
        return strip.apply_style(base).crop_extend(0, width, base)

    def _row_text(self, row: TimelineRow, width: int) -> Text:
        state = self.state
        assert state is not None
        model = state.model
        if row.kind == "instance":
            inst = (
                model.instances[row.instance]
                if row.instance is not None and row.instance < len(model.instances)
                else None
            )
            label = f" instance {row.instance} · {safe(inst.reason) if inst else '?'}"
            if row.seq is not None:
                label += f" · seq {row.seq}"
            return self._rule(
                label + " ", "━", width, self.get_component_rich_style("timeline--separator") + Style(bold=True)
            )
        if row.kind == "drift":
            inst = (
                model.instances[row.instance]
                if row.instance is not None and row.instance < len(model.instances)
                else None
            )
            t = styled("   drift: ", "#e0af68")
            t.append(", ".join(safe(d) for d in inst.drift) if inst else "?", "bold #e0af68")
            t.truncate(width, overflow="ellipsis")
            return t
        if row.kind == "compaction":
            label = " compaction" + (f" · seq {row.seq}" if row.seq is not None else "") + " "
            return self._rule(label, "┄", width, Style.parse("#e0af68"))
        if row.kind == "turn":
            t = styled(f"turn {safe(row.turn)}", self.get_component_rich_style("timeline--turn"))
            return t
        st = state.steps[row.step]  # type: ignore[index]
        mark, mark_style = MARKS.get(st.status, ("·", "dim"))
        t = Text("  ")
        t.append(mark, mark_style)
        t.append(f" {safe(st.turn)}.{safe(st.step)}", "bold")
        t.append(f"  seq {st.seq}", "dim")
        if st.chunks:
            t.append(f"  {st.chunks}ch", "dim")
        found = state.step_findings.get(row.step, [])  # type: ignore[arg-type]
        if found:
            worst = state.worst(row.step)  # type: ignore[arg-type]
            t.append(f"  ●{len(found)}", SEVERITY_STYLE.get(worst or "", ""))
        if st.status in ("diverges", "header", "unexplained"):
            t.append("  " + st.status, mark_style)
        t.truncate(width, overflow="ellipsis")
        return t

    @staticmethod
    def _rule(label: str, char: str, width: int, style: Style) -> Text:
        left = 2
        right = max(0, width - left - len(label))
        t = styled(char * left + label + char * right, style)
        t.truncate(width, overflow="ellipsis")
        return t

    # -- input -------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(self.rows):
            row = self.rows[index]
            step = row.step
            if row.kind != "step":
                # a separator selects the step it introduces
                step = next((r.step for r in self.rows[index:] if r.kind == "step"), None)
            if step is not None:
                self.post_message(StepSelected(step))
