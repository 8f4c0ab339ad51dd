"""Where two strings differ, windowed so a person sees it.

Two long values that differ deep inside look identical when both are cut at
the same point from their start (``shorten``).  :func:`diff_text` trims the
common prefix and suffix, aligns what is left word by word, and gives each
side as :class:`Piece` s: the same text, the changed runs, and cuts standing
for text left out, so the window sits on the first difference on both sides
and is never cut before it.  :func:`diff_values` does it for the JSON text of
any two values.  Renderers choose how a piece looks: :func:`plain` for one
line of text, Rich styles in the TUI.  Pure; pieces hold raw text, which the
renderer must make inert.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from invariants.model.jsonvalue import dumps

SAME = "same"
CHANGED = "changed"
CUT = "cut"

CONTEXT = 30  # characters of common text kept on each side of a changed run
WIDTH = 160  # characters shown per side, cuts not counted
MAX_ALIGN = 4000  # tokens per side above which the differing span is not aligned word by word (time)
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of one side: ``same`` or ``changed`` text, or a ``cut`` of ``omitted`` characters."""

    kind: str
    text: str = ""
    omitted: int = 0


@dataclass(frozen=True, slots=True)
class TextDiff:
    """Both sides windowed around the first difference; ``offset`` is its character index (-1: equal)."""

    expected: tuple[Piece, ...]
    recorded: tuple[Piece, ...]
    offset: int


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings, by bisection over slice comparisons (no loop per character)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _common_suffix(a: str, b: str, floor: int) -> int:
    """Length of the common suffix, leaving the first ``floor`` characters of both alone."""
    n = min(len(a), len(b)) - floor
    return common_prefix(a[::-1][:n], b[::-1][:n]) if n > 0 else 0


def _align(a: str, b: str) -> tuple[list[Piece], list[Piece]]:
    """The differing spans, word by word: equal words inside them stay ``same``."""
    if not a or not b:
        return ([Piece(CHANGED, a)] if a else []), ([Piece(CHANGED, b)] if b else [])
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    if len(ta) > MAX_ALIGN or len(tb) > MAX_ALIGN:
        return [Piece(CHANGED, a)], [Piece(CHANGED, b)]
    left: list[Piece] = []
    right: list[Piece] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb).get_opcodes():
        kind = SAME if tag == "equal" else CHANGED
        if i2 > i1:
            left.append(Piece(kind, "".join(ta[i1:i2])))
        if j2 > j1:
            right.append(Piece(kind, "".join(tb[j1:j2])))
    return left, right


def _fold_same(pieces: list[Piece], context: int) -> list[Piece]:
    """Long common runs between changed ones keep ``context`` characters at each end."""
    out: list[Piece] = []
    for i, p in enumerate(pieces):
        if p.kind != SAME or len(p.text) <= 2 * context + 10:
            out.append(p)
            continue
        head = context if i > 0 else 0
        tail = context if i < len(pieces) - 1 else 0
        if head:
            out.append(Piece(SAME, p.text[:head]))
        out.append(Piece(CUT, omitted=len(p.text) - head - tail))
        if tail:
            out.append(Piece(SAME, p.text[-tail:]))
    return out


def _clip(pieces: list[Piece], width: int) -> list[Piece]:
    """At most ``width`` characters of text; what follows becomes one cut."""
    out: list[Piece] = []
    used = 0
    for i, p in enumerate(pieces):
        if p.kind == CUT:
            out.append(p)
            continue
        room = width - used
        if len(p.text) <= room:
            out.append(p)
            used += len(p.text)
            continue
        if room > 0:
            out.append(Piece(p.kind, p.text[:room]))
        rest = len(p.text) - max(room, 0) + sum(len(q.text) + q.omitted for q in pieces[i + 1 :])
        out.append(Piece(CUT, omitted=rest))
        break
    merged: list[Piece] = []
    for p in out:  # two cuts side by side are one
        if p.kind == CUT and merged and merged[-1].kind == CUT:
            merged[-1] = Piece(CUT, omitted=merged[-1].omitted + p.omitted)
        elif p.kind != CUT or p.omitted:
            merged.append(p)
    return merged


def _start(a: str, prefix: int, context: int) -> int:
    """Where the window opens: ``context`` characters before the difference, at a word start when one is near."""
    start = max(0, prefix - context)
    if start:
        space = a.find(" ", start, start + context // 2)
        if space >= 0:
            start = space + 1
    return start


def _joined(s: str, prefix: int, suffix: int, middle: list[Piece]) -> list[Piece]:
    head = [Piece(SAME, s[:prefix])] if prefix else []
    return head + middle + ([Piece(SAME, s[len(s) - suffix :])] if suffix else [])


def _side(s: str, start: int, prefix: int, suffix: int, middle: list[Piece], context: int, width: int) -> list[Piece]:
    out: list[Piece] = []
    if start:
        out.append(Piece(CUT, omitted=start))
    if prefix > start:
        out.append(Piece(SAME, s[start:prefix]))
    out.extend(middle)
    if suffix:
        out.append(Piece(SAME, s[len(s) - suffix :]))
    return _clip(_fold_same(out, context), width)


def diff_text(a: str, b: str, *, context: int = CONTEXT, width: int = WIDTH) -> TextDiff:
    """``a`` (expected) and ``b`` (recorded) as pieces, each side windowed on the first difference."""
    if a == b:
        return TextDiff(tuple(_clip([Piece(SAME, a)], width)), tuple(_clip([Piece(SAME, b)], width)), -1)
    prefix = common_prefix(a, b)
    suffix = _common_suffix(a, b, prefix)
    left, right = _align(a[prefix : len(a) - suffix], b[prefix : len(b) - suffix])
    if len(a) <= width and len(b) <= width:  # both fit: nothing to window
        return TextDiff(tuple(_joined(a, prefix, suffix, left)), tuple(_joined(b, prefix, suffix, right)), prefix)
    start = _start(a, prefix, context)
    return TextDiff(
        tuple(_side(a, start, prefix, suffix, left, context, width)),
        tuple(_side(b, start, prefix, suffix, right, context, width)),
        prefix,
    )


def _quoted(pieces: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """A string's pieces between quotes, where its start and end are shown."""
    head = (Piece(SAME, '"'),) if not pieces or pieces[0].kind != CUT else ()
    tail = (Piece(SAME, '"'),) if not pieces or pieces[-1].kind != CUT else ()
    return head + pieces + tail


def diff_values(a: Any, b: Any, *, context: int = CONTEXT, width: int = WIDTH) -> TextDiff:
    """Two values windowed on their first difference: two strings by their characters (``offset`` counts
    them), anything else by its compact JSON text (an absent value is ``<absent>``)."""
    if isinstance(a, str) and isinstance(b, str):
        d = diff_text(a, b, context=context, width=width)
        return TextDiff(_quoted(d.expected), _quoted(d.recorded), d.offset)
    return diff_text(dumps(a), dumps(b), context=context, width=width)


def cut_label(omitted: int) -> str:
    return f"…({omitted} chars)…"


def plain(pieces: tuple[Piece, ...] | list[Piece]) -> str:
    """One side as one line of text, a cut shown as ``…(N chars)…`` (raw: make it inert to print it)."""
    return "".join(cut_label(p.omitted) if p.kind == CUT else p.text for p in pieces)


def preview_pair(a: Any, b: Any, width: int = 80) -> tuple[str, str]:
    """Two values as one-line previews that both show where they differ."""
    d = diff_values(a, b, width=width, context=min(CONTEXT, width // 3))
    return plain(d.expected), plain(d.recorded)
