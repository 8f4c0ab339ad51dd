"""Plain-text tables for ``inspector sessions`` and ``inspector query``.

Every cell comes from the index, which holds log text: it goes through
``invariants.model.inert.inert`` before it reaches a terminal.  Long cells
are cut with "…" only for a terminal: piped or redirected output keeps every
character, so ``inspector sessions | grep`` and scripts see whole paths.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Sequence

from invariants.model.inert import inert


def cell(value: Any, width: int | None = None) -> str:
    if value is None:
        text = ""
    elif isinstance(value, bytes):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    text = inert(text)
    if width is not None and len(text) > width:
        text = text[: max(1, width - 1)] + "…"
    return text


def cell_width(width: int) -> int | None:
    """``width`` when stdout is a terminal, else None (no cell is cut)."""
    try:
        return width if sys.stdout.isatty() else None
    except (AttributeError, ValueError):  # a replaced or closed stdout
        return None


def render(columns: Sequence[str], rows: Iterable[Sequence[Any]], max_width: int | None = 60) -> str:
    body = [[cell(v, max_width) for v in r] for r in rows]
    head = [cell(c, max_width) for c in columns]
    widths = [len(h) for h in head]
    for r in body:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    numeric = [all(_is_num(r[i]) for r in body if r[i]) and any(r[i] for r in body) for i in range(len(head))]

    def line(values: Sequence[str]) -> str:
        out = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(out).rstrip()

    lines = [line(head), "  ".join("-" * w for w in widths)]
    lines += [line(r) for r in body]
    return "\n".join(lines)


def _is_num(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
