"""The Findings tab: every finding of the session; Enter jumps to its place."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from inspector.screens.state import SessionState
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import count, safe, styled
from invariants.gate.report import after_location

SEVERITY = {
    "error": ("✗ error  ", "bold red"),
    "warning": ("⚠ warning", "bold #e0af68"),
    "info": ("● info   ", "#7dcfff"),
}


def finding_where(f: Any) -> str:
    parts = []
    if f.turn is not None:
        parts.append(f"turn {safe(f.turn)}" + (f" step {safe(f.step)}" if f.step is not None else ""))
    if f.seq is not None:
        parts.append(f"seq {f.seq}")
    if f.line is not None:
        parts.append(f"line {f.line}")
    capture = f.detail.get("capture") if isinstance(f.detail, dict) else None
    if isinstance(capture, str) and capture:
        parts.append("capture " + safe(capture.replace("\\", "/").rsplit("/", 1)[-1]))
    return " · ".join(parts)


class FindingsView(DocumentView):
    """Blocks keyed ``("finding", i)`` (index into ``SessionState.findings``)."""

    _stamp: int | None = None

    def show(self, state: SessionState, cursor_key: Any = None) -> None:
        if self._stamp == state.serial:  # findings belong to the session, not to the step
            if cursor_key is not None:
                self.select_key(cursor_key, top=True)
            return
        self._stamp = state.serial
        c = state.counts()
        title = styled(f"{len(state.findings)} finding{'s' if len(state.findings) != 1 else ''}", "bold")
        title.append(
            f" · {count(c['error'], 'error')}, {count(c['warning'], 'warning')}, {count(c['info'], 'info')}"
            " · Enter jumps to the place; n/N step through them",
            "dim",
        )
        blocks = [Block(title, selectable=False)]
        if not state.findings:
            blocks.append(Block(Text("✓ nothing to report for this session", style="green"), selectable=False))
        for i, f in enumerate(state.findings):
            label, style = SEVERITY.get(f.severity, (f.severity, ""))
            t = styled(label, style)
            t.append(f" {f.rule} ", "bold")
            t.append(safe(f.category), "dim")
            where = finding_where(f)
            if where:
                t.append("  " + where, "")
            step = state.finding_step[i]
            if step is not None:
                st = state.steps[step]
                t.append(f"  → step {safe(st.turn)}.{safe(st.step)}", "#7aa2f7")
            if f.path:
                t.append("\n  at ", "dim")
                t.append(safe(f.path), "bold #ff9e64")
            t.append("\n  " + safe(after_location(f)), "")
            blocks.append(Block(t, key=("finding", i)))
        self.set_blocks(blocks, cursor_key)

    @staticmethod
    def index_of_key(key: Any) -> int | None:
        if isinstance(key, tuple) and key and key[0] == "finding":
            return key[1]
        return None
