"""Shorten the long strings of a reduced log: each is cut to a window around its difference from its nearest
relative (the same system prompt in the recorded request, the parent's copy of a seed message), or to its head
when it has none.  A cut replaces a whole string everywhere it occurs (events, the parent, the capture patches),
so equal strings stay equal; the oracle decides whether each cut keeps the finding."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from invariants.reduce.logfile import LogData
from invariants.reduce.redact import ENUMERATED, KEEP_KEYS
from invariants.reduce.subject import CaptureLine, Subject

WINDOW = 16  # characters kept on each side of a difference
LONG = 3 * WINDOW  # strings at most this long are left alone


def _strings(value: Any, key: str | None = None) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) > LONG and key not in KEEP_KEYS and value not in ENUMERATED:
            yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)


def long_strings(subject: Subject, keep: list[int], keep_lines: list[int]) -> list[str]:
    """The distinct long strings of the kept events and capture patches, in first-seen order."""
    log = subject.log
    seen: dict[str, None] = {}
    for i in keep:
        for s in _strings(log.events[i]):
            seen.setdefault(s, None)
        if log.parent is not None and i < len(log.parent.events):
            for s in _strings(log.parent.events[i]):
                seen.setdefault(s, None)
    for k in keep_lines:
        for s in _strings(subject.lines[k].patch):
            seen.setdefault(s, None)
    return list(seen)


def _shared(a: str, b: str) -> tuple[int, int]:
    """The lengths of the common prefix and of the common suffix (not overlapping the prefix)."""
    p = len(os.path.commonprefix([a, b]))
    q = len(os.path.commonprefix([a[p:][::-1], b[p:][::-1]]))
    return p, q


def _window(s: str, p: int, q: int) -> str:
    return s[max(0, p - WINDOW) : min(len(s), len(s) - q + WINDOW)]


def cuts(strings: list[str]) -> list[dict[str, str]]:
    """One candidate replacement per string: a window around its difference from its nearest relative (both
    cut alike), else its head."""
    out: list[dict[str, str]] = []
    for s in strings:
        best, best_score = None, 0
        for t in strings:
            if t is not s:
                p, q = _shared(s, t)
                if p + q > best_score and p + q >= WINDOW:
                    best, best_score = t, p + q
        if best is None:
            out.append({s: s[:WINDOW]})
            continue
        p, q = _shared(s, best)
        cut = {s: _window(s, p, q), best: _window(best, p, q)}
        out.append({k: v for k, v in cut.items() if k != v})
    return [c for c in out if c]


def _mapped(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_mapped(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _mapped(v, mapping) for k, v in value.items()}
    return value


def apply_cut(subject: Subject, mapping: dict[str, str]) -> Subject:
    """``subject`` with every string in ``mapping`` replaced (headers and capture envelopes left alone)."""
    log = subject.log
    parent = None
    if log.parent is not None:
        parent = replace(log.parent, events=[_mapped(e, mapping) for e in log.parent.events])
    shortened = LogData(log.name, log.header, [_mapped(e, mapping) for e in log.events], log.captures, parent)
    lines = [CaptureLine(c.line, c.step_index, _mapped(c.patch, mapping)) for c in subject.lines]
    return Subject(shortened, lines)
