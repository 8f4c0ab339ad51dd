"""Log values as inert, styled ``rich.text.Text``: the one place views turn JSON into text.

Everything a log holds is untrusted.  Strings become JSON literals and then
pass through :func:`invariants.model.inert.inert`, so no control character, escape
sequence or Rich markup (``[bold]``, ``[link=…]``) reaches the terminal as
anything but visible characters: we only ever build ``Text`` objects from
plain strings, never markup.  :func:`json_lines` pretty-prints a value as
lines that each know their JSON path (``messages[1].content[0].text``), so a
view can highlight the line of a difference; small containers stay on one line.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

import orjson
from rich.text import Text

from invariants.model.inert import inert
from invariants.model.jsonvalue import MISSING, join_path

KEY = "bold #7aa2f7"
STRING = "#9ece6a"
NUMBER = "#e0af68"
LITERAL = "#bb9af7"
PUNCT = "#787c99"
ABSENT = "italic #787c99"

COMPACT = 64  # a container whose one-line form is at most this long stays on one line
MAX_STRING = 4000  # longer strings are shown cut, with the number of chars left out


def safe(text: Any, keep_newlines: bool = False) -> str:
    """Any value as a string with every control character made visible."""
    if not isinstance(text, str):
        text = str(text)
    return inert(text, keep_newlines=keep_newlines)


def plain(text: Any, style: str = "", keep_newlines: bool = False) -> Text:
    """Untrusted text as a ``Text`` (never parsed as markup)."""
    return Text(safe(text, keep_newlines), style=style)


def literal(value: Any, limit: int = MAX_STRING) -> str:
    """A JSON scalar (or any value) as inert one-line JSON text."""
    if value is MISSING:
        return "<absent>"
    if isinstance(value, str) and len(value) > limit:
        cut = len(value) - limit
        return safe(_dumps(value[:limit]))[:-1] + f'…"  (+{cut} chars)'
    return safe(_dumps(value))


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):  # lone surrogates, huge ints
        return json.dumps(value, ensure_ascii=False, default=repr)


def _scalar_style(value: Any) -> str:
    if isinstance(value, str):
        return STRING
    if value is None or isinstance(value, bool):
        return LITERAL
    if value is MISSING:
        return ABSENT
    return NUMBER


def value_text(value: Any, limit: int = MAX_STRING) -> Text:
    """One JSON value on one line, styled (containers in compact form)."""
    if isinstance(value, (dict, list)):
        return _compact(value, limit)
    return Text(literal(value, limit), style=_scalar_style(value))


def _compact(value: Any, limit: int) -> Text:
    out = Text()
    if isinstance(value, dict):
        out.append("{", PUNCT)
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(", ", PUNCT)
            out.append(literal(k, limit), KEY)
            out.append(": ", PUNCT)
            out.append_text(_compact(v, limit))
        out.append("}", PUNCT)
    elif isinstance(value, list):
        out.append("[", PUNCT)
        for i, v in enumerate(value):
            if i:
                out.append(", ", PUNCT)
            out.append_text(_compact(v, limit))
        out.append("]", PUNCT)
    else:
        out.append(literal(value, limit), _scalar_style(value))
    return out


def _short_len(value: Any, budget: int) -> int:
    """Length of the compact form, or budget+1 as soon as it exceeds ``budget``."""
    if isinstance(value, dict):
        total = 2
        for k, v in value.items():
            total += len(k) + 6 + _short_len(v, budget)
            if total > budget:
                return budget + 1
        return total
    if isinstance(value, list):
        total = 2
        for v in value:
            total += 2 + _short_len(v, budget)
            if total > budget:
                return budget + 1
        return total
    if isinstance(value, str):
        return len(value) + 2
    return len(_dumps(value))


def json_lines(
    value: Any,
    path: str = "",
    *,
    key: Any = MISSING,
    indent: int = 0,
    comma: bool = False,
    compact: int = COMPACT,
    expand: tuple[str, ...] = (),
    shown: dict[str, Text] | None = None,
) -> list[tuple[str, Text]]:
    """Pretty JSON as ``(path, line)`` pairs; a line's path is the value it opens or holds.

    Containers on the way to a path in ``expand`` are never folded onto one
    line, so the value at that path gets a line of its own; ``shown`` gives the
    text to draw for the value at a path instead of its literal (a windowed diff).
    """
    out: list[tuple[str, Text]] = []
    _emit(value, path, key, indent, comma, compact, out, expand, shown or {})
    return out


def _head(indent: int, key: Any) -> Text:
    t = Text("  " * indent)
    if key is not MISSING:
        if isinstance(key, str):
            t.append(literal(key), KEY)
            t.append(": ", PUNCT)
    return t


def _emit(
    value: Any,
    path: str,
    key: Any,
    indent: int,
    comma: bool,
    compact: int,
    out: list,
    expand: tuple[str, ...],
    shown: dict[str, Text],
) -> None:
    tail = "," if comma else ""
    if path not in shown and (
        isinstance(value, (dict, list))
        and value
        and (indent == 0 or _short_len(value, compact) > compact or any(path_covers(path, t) for t in expand))
    ):
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        line = _head(indent, key)
        line.append(opening, PUNCT)
        out.append((path, line))
        items: Iterable = value.items() if isinstance(value, dict) else enumerate(value)
        n = len(value)
        for i, (k, v) in enumerate(items):
            _emit(
                v,
                join_path(path, k),
                k if isinstance(value, dict) else MISSING,
                indent + 1,
                i < n - 1,
                compact,
                out,
                expand,
                shown,
            )
        end = Text("  " * indent)
        end.append(closing + tail, PUNCT)
        out.append((path, end))
        return
    line = _head(indent, key)
    line.append_text(shown[path] if path in shown else value_text(value))
    if tail:
        line.append(tail, PUNCT)
    out.append((path, line))


def path_covers(line_path: str, target: str) -> bool:
    """Whether the line for ``line_path`` shows (part of) the value at ``target``."""
    if not line_path:
        return True
    if not target.startswith(line_path):
        return False
    return len(target) == len(line_path) or target[len(line_path)] in ".["


def best_line(lines: list[tuple[str, Text]], target: str) -> int | None:
    """Index of the line showing ``target`` most precisely (longest covering path)."""
    best, best_len = None, -1
    for i, (p, _) in enumerate(lines):
        if p and path_covers(p, target) and len(p) > best_len:
            best, best_len = i, len(p)
    return best


def styled(text: str, style: Any = "") -> Text:
    """``Text`` whose style covers only this text, so later appends keep their own style."""
    out = Text()
    out.append(text, style)
    return out


def count(n: int, word: str) -> str:
    """``1 message``, ``2 messages``: a number and its noun agreeing in number."""
    return f"{n} {word if n == 1 else word + 's'}"
