"""The Events tab: the raw events of a step, as logged, read back from the file.

Each event is shown as pretty JSON under a line naming its seq, type and
physical line.  Runs of ``assistant/chunk`` are folded into one summary line
(how many, which chunk types, the text they stream); Enter unfolds a run.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from inspector.widgets.difftext import join_lines
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import count, json_lines, safe, styled, value_text
from invariants.analysis.events_view import ChunkRun, RawEvent, collapse_chunks

TYPE_STYLE = "bold #7dcfff"
TARGET_BG = "on #3b3052"
MATCH_STYLE = "bold #1a1b26 on #e0af68"  # a search match: dark on amber, readable on both themes
MAX_EVENT_LINES = 80


def clock(ms: Any) -> str:
    """An event time (epoch ms) as UTC wall-clock time, or "" when it is not a plain number."""
    import datetime as _dt

    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return ""


class EventsView(DocumentView):
    """Blocks keyed ``("event", seq)`` and ``("run", first_seq)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items: list[RawEvent | ChunkRun] = []
        self.expanded: set[int] = set()
        self.step: int | None = None
        self.window: tuple[int, int | None] = (0, None)
        self.target: int | None = None
        self.title = Text("")
        self.highlight: str | None = None  # the search query, marked wherever it shows

    def set_highlight(self, query: str | None) -> None:
        """Mark ``query`` (case-insensitive) in the events shown; redraws when it changes."""
        if query == self.highlight:
            return
        self.highlight = query
        if self.items:
            self._build(self.selected_key, scroll_home=False)

    def show_reading(self, step: int, title: Text) -> None:
        self.step = step
        self.items = []
        self.set_blocks(
            [Block(title, selectable=False), Block(Text("reading events…", style="italic dim"), selectable=False)]
        )

    def show_events(self, step: int, title: Text, events: list[RawEvent], target: int | None = None) -> None:
        self.step = step
        self.title = title
        self.items = collapse_chunks(events)
        self.expanded = set()
        self.target = target
        if target is not None:
            for it in self.items:
                if isinstance(it, ChunkRun) and it.contains(target):
                    self.expanded.add(it.first_seq)
        self._build(self.key_for(target) if target is not None else None)

    def key_for(self, seq: int | None) -> Any:
        if seq is None:
            return None
        for it in self.items:
            if isinstance(it, ChunkRun) and it.contains(seq):
                return ("event", seq) if it.first_seq in self.expanded else ("run", it.first_seq)
            if isinstance(it, RawEvent) and it.seq == seq:
                return ("event", seq)
        return None

    def goto(self, seq: int) -> bool:
        """Put the cursor on event ``seq`` (unfolding its chunk run); False when it is not shown."""
        self.target = seq
        for it in self.items:
            if isinstance(it, ChunkRun) and it.contains(seq) and it.first_seq not in self.expanded:
                self.expanded.add(it.first_seq)
                self._build(("event", seq))
                return True
        return self.select_key(("event", seq), top=True)

    def toggle(self, key: Any) -> None:
        if isinstance(key, tuple) and key[0] == "run":
            if key[1] in self.expanded:
                self.expanded.discard(key[1])
            else:
                self.expanded.add(key[1])
            self._build(key, scroll_home=False)

    def _build(self, cursor_key: Any = None, scroll_home: bool = True) -> None:
        n_events = sum(it.count if isinstance(it, ChunkRun) else 1 for it in self.items)
        n_runs = sum(1 for it in self.items if isinstance(it, ChunkRun))
        title = self.title.copy()
        title.append(
            f" · {count(n_events, 'event')}"
            + (f", {n_runs} chunk run{'s' if n_runs != 1 else ''} folded (Enter unfolds)" if n_runs else ""),
            "dim",
        )
        blocks = [Block(title, selectable=False)]
        for it in self.items:
            if isinstance(it, ChunkRun):
                if it.first_seq in self.expanded:
                    head = styled(f"▾ seq {it.first_seq}–{it.last_seq} · {it.count} × assistant/chunk", "bold #e0af68")
                    blocks.append(Block(head, key=("run", it.first_seq)))
                    for ev in it.events:
                        t = styled(f"  seq {ev.seq} ", "dim")
                        data = ev.obj.get("data")
                        chunk = data.get("chunk") if isinstance(data, dict) else data
                        t.append_text(value_text(chunk, 400))
                        blocks.append(Block(t, key=("event", ev.seq), style=TARGET_BG if ev.seq == self.target else ""))
                else:
                    blocks.append(Block(self._run_summary(it), key=("run", it.first_seq)))
            else:
                blocks.append(self._event_block(it))
        if self.highlight:
            needle = safe(self.highlight)
            for b in blocks:
                b.text.highlight_words([needle], MATCH_STYLE, case_sensitive=False)
        self.set_blocks(blocks, cursor_key, scroll_home=scroll_home)

    def _event_block(self, ev: RawEvent) -> Block:
        head = styled(f"seq {ev.seq} ", "bold")
        head.append(safe(ev.type), TYPE_STYLE)
        head.append(f"  line {ev.line}", "dim")
        when = clock(ev.obj.get("time"))
        if when:
            head.append(f"  {when}", "dim")
        for key in ("surfaceOp", "sourceEventSeqs", "ignorable"):
            if key in ev.obj:
                head.append(f"  {key} ", "dim")
                head.append_text(value_text(ev.obj[key], 120))
        lines = json_lines(ev.obj.get("data"), "data", indent=1)
        body = join_lines([t for _, t in lines[:MAX_EVENT_LINES]])
        if len(lines) > MAX_EVENT_LINES:
            body.append(f"\n  … {len(lines) - MAX_EVENT_LINES} more lines", "italic dim")
        return Block(
            Text.assemble(head, "\n", body), key=("event", ev.seq), style=TARGET_BG if ev.seq == self.target else ""
        )

    @staticmethod
    def _run_summary(run: ChunkRun) -> Text:
        t = styled(f"▸ seq {run.first_seq}–{run.last_seq} · {run.count} × assistant/chunk", "bold #e0af68")
        kinds = ", ".join(f"{safe(k)} ×{n}" for k, n in run.kinds.most_common())
        t.append(f"  ({kinds})", "dim")
        if run.tools:
            t.append("  tools: " + ", ".join(safe(x) for x in run.tools), "#7dcfff")
        if run.reasoning:
            t.append("\n  reasoning: ", "dim")
            t.append(safe(run.reasoning[:300]) + ("…" if len(run.reasoning) > 300 else ""), "italic #a9b1d6")
        if run.text:
            t.append("\n  text: ", "dim")
            t.append(safe(run.text[:300]) + ("…" if len(run.text) > 300 else ""), "#9ece6a")
        return t

    def seq_of(self, key: Any) -> int | None:
        if isinstance(key, tuple) and key and key[0] in ("event", "run"):
            return key[1]
        return None
