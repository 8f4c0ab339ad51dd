"""A scrollable document of blocks, drawn with Textual's Line API.

Every tab of the session screen is a list of :class:`Block` s (a message, a
header field, a difference, an event): plain ``rich.text.Text`` built from
inert strings, wrapped to the widget's width once per width, and drawn line
by line through ``render_line`` with a small strip cache, so a long request
costs only the lines on screen.  A block may carry a second column (the
side-by-side diff).  One block is the cursor; up/down move it between
selectable blocks, Enter activates it, a click selects it.  The view never
decides anything: it posts :class:`~inspector.messages.BlockSelected` and
:class:`~inspector.messages.BlockActivated` and the screen acts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from inspector.messages import BlockActivated, BlockSelected
from inspector.widgets.palette import Recolored


@dataclass(slots=True)
class Block:
    """One item of a document; ``key`` says what it stands for (for the screen)."""

    text: Text
    key: Any = None
    selectable: bool = True
    right: Text | None = None  # a second column: the block is drawn side by side
    style: str = ""  # a style applied under the whole block (e.g. a changed line)
    gutter: Text | None = None  # drawn at the start of every line of the block (e.g. a region bar)


class DocumentView(Recolored, ScrollView, can_focus=True):
    """Blocks of inert text; a cursor over the selectable ones."""

    COMPONENT_CLASSES = {"document--cursor", "document--cursor-blurred", "document--gutter"}

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "activate", "Open", show=False),
    ]

    DEFAULT_CSS = """
    DocumentView { overflow-x: hidden; }
    DocumentView > .document--cursor { background: $primary 35%; }
    DocumentView > .document--cursor-blurred { background: $primary 15%; }
    DocumentView > .document--gutter { color: $text-muted; }
    """

    cursor: reactive[int] = reactive(-1, init=False, always_update=True)

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.blocks: list[Block] = []
        self._lines: list[tuple[int, Text, Text | None, int]] = []  # (block, left, right, column width)
        self._first_line: list[int] = []
        self._layout_width = -1
        self._cache: LRUCache[int, Strip] = LRUCache(512)
        self._revealing = False  # a jump is to be shown after the next refresh: a resize before it keeps out

    # -- content ---------------------------------------------------------------
    def set_blocks(
        self, blocks: list[Block], cursor_key: Any = None, *, scroll_home: bool = True, anchor_key: Any = None
    ) -> None:
        """Replace the document; put the cursor on ``cursor_key`` (else the first selectable block).

        ``anchor_key`` names a block above the cursor's (its heading) that a jump shows too.
        """
        self.blocks = blocks
        self._layout_width = -1
        self._cache.clear()
        self._relayout()
        target = self.index_of(cursor_key) if cursor_key is not None else None
        if target is None:
            target = next((i for i, b in enumerate(blocks) if b.selectable), -1)
        self.set_reactive(DocumentView.cursor, target)
        if scroll_home:
            self.scroll_to(0, 0, animate=False, immediate=True)
        if cursor_key is not None and target >= 0:
            anchor = self.index_of(anchor_key) if anchor_key is not None else None
            self._revealing = True
            self.call_after_refresh(self._reveal, target, anchor if anchor is not None and anchor < target else None)
        self.refresh()

    def _reveal(self, index: int, anchor: int | None = None) -> None:
        """After a jump: the block (from its anchor on) near the top unless it is fully visible already."""
        self._revealing = False
        start, count = self.block_lines(index)
        top = self.block_lines(anchor)[0] if anchor is not None else start
        height = max(1, self.scrollable_content_region.height)
        y = self.scroll_offset.y
        if not (top >= y and start + count <= y + height):
            self.scroll_to_block(anchor if anchor is not None else index, top=True)

    def index_of(self, key: Any) -> int | None:
        for i, b in enumerate(self.blocks):
            if b.key == key:
                return i
        return None

    @property
    def selected_key(self) -> Any:
        if 0 <= self.cursor < len(self.blocks):
            return self.blocks[self.cursor].key
        return None

    def select_key(self, key: Any, *, top: bool = False) -> bool:
        """Move the cursor to the block with ``key`` (without posting); False when absent."""
        i = self.index_of(key)
        if i is None:
            return False
        self.set_reactive(DocumentView.cursor, i)
        if top:
            self.scroll_to_block(i, top=True)
        else:
            self._reveal(i)
        self.refresh()
        return True

    def plain_text(self) -> str:
        """The document as plain text (tests and export)."""
        out = []
        for b in self.blocks:
            out.append(b.text.plain if b.right is None else f"{b.text.plain} │ {b.right.plain}")
        return "\n".join(out)

    # -- layout ----------------------------------------------------------------
    def _width(self) -> int:
        return max(20, self.size.width - 1)  # one column stays for the scrollbar

    def _relayout(self) -> None:
        width = self._width()
        if width == self._layout_width:
            return
        self._layout_width = width
        self._cache.clear()
        console = self.app.console
        lines: list[tuple[int, Text, Text | None, int]] = []
        first: list[int] = []
        for i, block in enumerate(self.blocks):
            first.append(len(lines))
            if block.right is None:
                inner = width - (block.gutter.cell_len if block.gutter is not None else 0)
                for line in block.text.wrap(console, max(8, inner), overflow="fold") or [Text("")]:
                    lines.append((i, line, None, width))
            else:
                col = max(8, (width - 3) // 2)
                left = list(block.text.wrap(console, col, overflow="fold")) or [Text("")]
                right = list(block.right.wrap(console, col, overflow="fold")) or [Text("")]
                for k in range(max(len(left), len(right))):
                    lines.append(
                        (i, left[k] if k < len(left) else Text(""), right[k] if k < len(right) else Text(""), col)
                    )
        self._lines = lines
        self._first_line = first
        self.virtual_size = Size(width, len(lines))

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()
        if self.cursor >= 0 and not self._revealing:
            self.scroll_to_block(self.cursor)

    def block_lines(self, index: int) -> tuple[int, int]:
        """(first line, line count) of block ``index``."""
        if not self._first_line or index >= len(self._first_line):
            return 0, 0
        start = self._first_line[index]
        end = self._first_line[index + 1] if index + 1 < len(self._first_line) else len(self._lines)
        return start, end - start

    def scroll_to_block(self, index: int, top: bool = False) -> None:
        """Bring block ``index`` into view; ``top``: put it near the top (a jump), else scroll as little as needed.
        ``force``: as the timeline's (a scroll is ignored until the blocks just set show a scrollbar)."""
        self._relayout()
        start, count = self.block_lines(index)
        height = max(1, self.scrollable_content_region.height)
        y = self.scroll_offset.y
        if top:
            target = max(0, start - 1)
        elif start >= y and start + count <= y + height:
            return  # already fully visible
        elif start < y or count >= height:
            target = max(0, start - 1)
        else:
            target = start + count - height
        self.scroll_to(y=target, animate=False, immediate=True, force=True)

    def theme_changed(self) -> None:
        """The lines cached were drawn with the old theme's styles."""
        self._cache.clear()
        self.refresh()

    # -- drawing ---------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        self._relayout()
        index = self.scroll_offset.y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, base)
        strip = self._cache.get(index)
        if strip is None:
            strip = self._render_row(index, base)
            self._cache[index] = strip
        block = self._lines[index][0]
        if block == self.cursor and self.blocks[block].selectable:
            base = base + self.get_component_rich_style(
                "document--cursor" if self.has_focus else "document--cursor-blurred"
            )
        return strip.apply_style(base).crop_extend(0, width, base)

    def _render_row(self, index: int, base: Style) -> Strip:
        block_index, left, right, col = self._lines[index]
        block = self.blocks[block_index]
        console = self.app.console
        if right is None:
            text = left
            if block.gutter is not None:
                text = Text.assemble(block.gutter, left)
        else:
            text = Text()
            text.append_text(left)
            text.pad_right(col - left.cell_len)
            text.append(" │ ", "dim")
            text.append_text(right)
        if block.style:
            text = text.copy()
            text.pad_right(max(0, self._layout_width - text.cell_len))
        segments = list(text.render(console, end=""))
        if block.style:
            segments = list(Segment.apply_style(segments, console.get_style(block.style)))
        return Strip(segments, text.cell_len).simplify()

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # -- input -----------------------------------------------------------------
    def _move(self, target: int) -> None:
        if target == self.cursor or not (0 <= target < len(self.blocks)):
            return
        self.cursor = target
        self.scroll_to_block(target)
        self.post_message(BlockSelected(self, self.blocks[target].key))

    def action_cursor(self, delta: int) -> None:
        i = self.cursor
        n = len(self.blocks)
        j = i + delta
        while 0 <= j < n and not self.blocks[j].selectable:
            j += delta
        if 0 <= j < n:
            self._move(j)
        elif delta > 0:
            self.scroll_relative(y=self.scrollable_content_region.height // 2, animate=False)
        else:
            self.scroll_relative(y=-(self.scrollable_content_region.height // 2), animate=False)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self.scroll_relative(y=direction * height, animate=False)
        top = self.scroll_offset.y + (0 if direction < 0 else height)
        target = self._block_at(min(max(0, top), max(0, len(self._lines) - 1)))
        if target is not None:
            j = target
            while 0 <= j < len(self.blocks) and not self.blocks[j].selectable:
                j += direction
            if 0 <= j < len(self.blocks):
                self._move(j)

    def action_edge(self, end: int) -> None:
        order = range(len(self.blocks) - 1, -1, -1) if end else range(len(self.blocks))
        for j in order:
            if self.blocks[j].selectable:
                self._move(j)
                break
        self.scroll_to(y=self.max_scroll_y if end else 0, animate=False)

    def action_activate(self) -> None:
        if 0 <= self.cursor < len(self.blocks):
            self.post_message(BlockActivated(self, self.blocks[self.cursor].key))

    def _block_at(self, line: int) -> int | None:
        if 0 <= line < len(self._lines):
            return self._lines[line][0]
        return None

    def on_click(self, event: events.Click) -> None:
        block = self._block_at(self.scroll_offset.y + event.y)
        if block is not None and self.blocks[block].selectable:
            if block == self.cursor and event.chain >= 2:
                self.action_activate()
            else:
                self._move(block)
