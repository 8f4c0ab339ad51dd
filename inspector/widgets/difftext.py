"""Line diffs and message bodies as inert ``Text``: shared by the request, diff, header and prefix views."""

from __future__ import annotations

import difflib
from typing import Any

from rich.text import Text

from inspector.widgets.jsontext import PUNCT, literal, plain, safe, value_text
from invariants.model.textdiff import CHANGED, CUT, Piece, cut_label

ADDED = "#9ece6a"
REMOVED = "#f7768e"
ADDED_BG = "on #1f3a24"
REMOVED_BG = "on #4a1f26"
# a changed run inside a differing string: dark text on a light mark reads on dark and light themes
EXPECTED_MARK = "bold #1a1b26 on #9ece6a"
RECORDED_MARK = "bold #1a1b26 on #f7768e"
CUT_STYLE = "italic dim"
MAX_PART = 3000  # characters of one message part shown before cutting
MAX_LINE = 2000  # characters of one line of a string shown line by line


def clip(line: str, limit: int = MAX_LINE) -> str:
    """One line of untrusted text, made visible-safe and cut to ``limit`` characters."""
    return safe(line) if len(line) <= limit else safe(line[:limit]) + f"…(+{len(line) - limit} chars)"


def value_as_lines(value: Any) -> list[str]:
    """A value as the lines a diff should compare.

    A string is split into its own lines; anything else is pretty JSON in which
    a string holding newlines is written one line per line (``│``-marked), so
    a diff of a long prompt or skills catalog shows only the lines that moved.
    """
    if isinstance(value, str):
        return [clip(line) for line in value.split("\n")]
    out: list[str] = []
    _lines(value, 0, "", False, out)
    return out


def _lines(value: Any, indent: int, key: str, comma: bool, out: list[str]) -> None:
    pad = "  " * indent
    tail = "," if comma else ""
    if isinstance(value, dict) and value:
        out.append(f"{pad}{key}{{")
        items = list(value.items())
        for i, (k, v) in enumerate(items):
            _lines(v, indent + 1, literal(k) + ": ", i < len(items) - 1, out)
        out.append(f"{pad}}}{tail}")
    elif isinstance(value, list) and value:
        out.append(f"{pad}{key}[")
        for i, v in enumerate(value):
            _lines(v, indent + 1, "", i < len(value) - 1, out)
        out.append(f"{pad}]{tail}")
    elif isinstance(value, str) and "\n" in value:
        out.append(f'{pad}{key}"""')
        out.extend(f"{pad}  │ {clip(line)}" for line in value.split("\n"))
        out.append(f'{pad}"""{tail}')
    else:
        out.append(f"{pad}{key}{literal(value)}{tail}")


def unified(old: list[str], new: list[str], context: int = 2, limit: int = 400) -> list[Text]:
    """A unified diff (old → new) as styled lines; [] when equal."""
    out: list[Text] = []
    for line in difflib.unified_diff(old, new, "before", "after", n=context, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            out.append(Text(line, style="dim cyan"))
        elif line.startswith("+"):
            out.append(Text(line, style=ADDED))
        elif line.startswith("-"):
            out.append(Text(line, style=REMOVED))
        else:
            out.append(Text(line, style="dim"))
        if len(out) >= limit:
            out.append(Text(f"… diff cut at {limit} lines", style="italic dim"))
            break
    return out


def pieces_text(pieces: tuple[Piece, ...] | list[Piece], mark: str, style: str = "") -> Text:
    """One side of a :func:`~invariants.model.textdiff.diff_text` as inert ``Text``: changed runs marked, cuts dim."""
    out = Text()
    for p in pieces:
        if p.kind == CUT:
            out.append(cut_label(p.omitted), CUT_STYLE)
        else:
            out.append(safe(p.text), mark if p.kind == CHANGED else style)
    return out


def join_lines(lines: list[Text], indent: str = "") -> Text:
    out = Text()
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        if indent:
            out.append(indent)
        out.append_text(line)
    return out


def _cut(text: str, limit: int = MAX_PART) -> tuple[str, int]:
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _text_part(out: Text, text: Any, style: str = "") -> None:
    if not isinstance(text, str):
        out.append_text(value_text(text))
        return
    shown, left = _cut(text)
    out.append_text(plain(shown.replace("\t", "    "), style, keep_newlines=True))
    if left:
        out.append(f" … (+{left} chars)", "italic dim")


def message_body(msg: Any) -> Text:
    """A request message as readable text: text parts as text, tool calls and results labelled."""
    out = Text()
    if not isinstance(msg, dict):
        out.append_text(value_text(msg))
        return out
    content = msg.get("content")
    if isinstance(content, str):
        _text_part(out, content)
    elif isinstance(content, list):
        for i, part in enumerate(content):
            if i:
                out.append("\n")
            _part(out, part)
    elif content is not None:
        out.append_text(value_text(content))
    extra = [k for k in msg if k not in ("role", "content")]
    for k in extra:
        out.append("\n")
        out.append(safe(k) + ": ", PUNCT)
        out.append_text(value_text(msg[k], 400))
    return out


def _part(out: Text, part: Any) -> None:
    if not isinstance(part, dict):
        out.append_text(value_text(part, 400))
        return
    kind = part.get("type")
    if kind == "text":
        _text_part(out, part.get("text"))
    elif kind == "reasoning":
        out.append("(reasoning) ", "italic #787c99")
        _text_part(out, part.get("text"), "italic #a9b1d6")
    elif kind == "tool-call":
        out.append("→ tool-call ", "bold #7dcfff")
        out.append(safe(part.get("name")), "bold")
        out.append(f" {safe(part.get('id'))} ", "dim")
        _text_part(
            out, part.get("arguments") if isinstance(part.get("arguments"), str) else safe(part.get("arguments"))
        )
    elif kind == "tool-result":
        out.append("← tool-result ", "bold #7dcfff")
        out.append(safe(part.get("toolCallId")), "dim")
        if part.get("isError"):
            out.append(" error", "bold red")
        inner = part.get("content")
        if isinstance(inner, list):
            for p in inner:
                out.append("\n")
                _part(out, p)
        elif inner is not None:
            out.append("\n")
            _text_part(out, inner if isinstance(inner, str) else safe(inner))
    else:
        out.append_text(value_text(part, 400))


def value_block(value: Any, indent: str = "  ", limit: int = 60) -> Text:
    """A value as readable lines (strings with newlines written line by line), cut at ``limit`` lines."""
    lines = value_as_lines(value)
    shown = lines[:limit]
    out = join_lines([Text(x) for x in shown], indent)
    if len(lines) > limit:
        out.append(f"\n{indent}… {len(lines) - limit} more lines", "italic dim")
    return out
