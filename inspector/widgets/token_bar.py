"""The selected step's request in tokens: one bar, one line of figures.

The bar splits the request into system+tools, session prefix, history the
previous request already carried, and what this step added; a ``│`` marks
the context window and the part the provider read from its cache is
underlined.  Counts come from ``invariants.analysis.token_steps`` (the
``tokens`` extra), counted the first time ``t`` asks for the bar.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

PARTS = (("system+tools", "#7aa2f7"), ("prefix", "#bb9af7"), ("history", "#565f89"), ("new", "#9ece6a"))


def token_bar_text(step: Any, window: int | None, cache_read: int | None, width: int) -> Text:
    """The bar for one ``StepTokens`` (pure: the widget only shows it)."""
    t = step.tokens
    sizes = [t.system_tools, t.prefix, step.history, step.new + t.suffix]
    scale = max(t.total, window or 0, 1)
    cells = max(10, width - 2)
    out = Text("▕")
    used = 0
    read = round(cells * min(cache_read or 0, t.total) / scale)
    for (_name, color), n in zip(PARTS, sizes):
        k = round(cells * n / scale)
        for i in range(used, used + k):
            out.append("█", style=f"{color} underline" if i < read else color)
        used += k
    mark = round(cells * window / scale) if window else None
    for i in range(used, cells):
        out.append("│" if i == mark else " ", style="bold #f7768e" if i == mark else "")
    out.append("▏\n")
    # the words that fit the width: short ones in a narrow terminal, then the total without its parts
    # (the bar shows them); the window and the cache read stay
    for names, parts in ((LONG, True), (SHORT, True), (LONG, False)):
        figures = " · ".join(f"{name} {n:,}" for name, n in zip(names[:4], sizes))
        line = Text(f" {t.total:,} {names[4]}" + (f" ({figures})" if parts else ""), style="bold")
        if window:
            line.append(f" · {names[5]} {window:,}", style="#f7768e")
        if cache_read is not None:
            line.append(f" · {names[6]} {cache_read:,}{names[7]}", style="#e0af68")
        if line.cell_len <= width:
            break
    out.append_text(line)
    return out


LONG = ("system+tools", "prefix", "history", "new", "tokens", "window", "cacheRead", " (underlined)")
SHORT = ("sys", "pfx", "hist", "new", "tok", "win", "cache", "")


class TokenBar(Static):
    """Hidden unless asked for (``t``) and a step's tokens are known."""

    wanted = False

    def show(self, text: Text | None) -> None:
        self.display = text is not None
        if text is not None:
            self.update(text)
