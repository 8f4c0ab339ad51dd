"""A selection moved while a widget's content grows is scrolled into view at once.

Textual ignores a scroll while a widget shows no scrollbar, and a widget shows its scrollbar only at
the layout after its content grew.  The timeline, the session table and the documents scroll in the
same turn as they take new content, so each scrolls regardless (issue 30's CI run found a followed
session whose newest step stayed out of view when the layout came late).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult

from inspector.screens.state import SessionState
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.session_table import SessionRow, SessionTable
from inspector.widgets.timeline import Timeline
from invariants.gate.result import CheckResult
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.support.logs import story_steps


class Host(App):
    """One widget, 10 rows tall, in a 20-row terminal."""

    CSS = "Timeline, SessionTable, DocumentView { height: 10; }"

    def __init__(self, widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def session(folder: Path, steps: int) -> SessionState:
    """A checked session of one turn of ``steps`` steps."""
    log = story_steps(f"s{steps}", steps).write(folder / f"s{steps}.jsonl")
    model = replay(LogSource(log, folder))
    return SessionState(CheckResult([], [], [], [], [model]), model)


def shown(widget, row: int) -> bool:
    return 0 <= row - widget.scroll_offset.y < widget.scrollable_content_region.height


async def test_a_step_selected_as_the_timeline_fills_is_in_view(tmp_path):
    long, short = session(tmp_path, 40), session(tmp_path, 3)
    timeline = Timeline()
    async with Host(timeline).run_test(size=(60, 20)) as pilot:
        await pilot.pause()  # laid out with no rows: no scrollbar
        timeline.set_rows(long, long.rows(None), 39)
        assert timeline.cursor_row > 30 and shown(timeline, timeline.cursor_row)
        timeline.set_rows(short, short.rows(None), 1)
        await pilot.pause()
        timeline.set_rows(long, long.rows(None), 20)
        assert timeline.selected_step == 20 and shown(timeline, timeline.cursor_row)


async def test_the_session_under_the_cursor_stays_in_view_when_the_table_grows():
    table = SessionTable()
    rows = [(SessionRow(i, Path(f"/logs/{i}.jsonl"), f"s{i}"), 0) for i in range(60)]
    async with Host(table).run_test(size=(100, 20)) as pilot:
        table.set_rows(rows[:3])
        await pilot.pause()
        table.cursor, table.moved = 2, True
        table.set_rows(rows[3:50] + [rows[2]] + rows[50:])  # more sessions found, this one now sorts 48th
        await pilot.pause()
        assert table.cursor == 47 and shown(table, 47)


async def test_a_block_jumped_to_as_the_document_fills_is_in_view():
    doc = DocumentView()
    async with Host(doc).run_test(size=(60, 20)) as pilot:
        doc.set_blocks([Block(Text("one line"), key=0)])
        await pilot.pause()
        doc.set_blocks([Block(Text(f"line {i}"), key=i) for i in range(60)])
        assert doc.select_key(50, top=True)
        assert shown(doc, doc.block_lines(50)[0])
