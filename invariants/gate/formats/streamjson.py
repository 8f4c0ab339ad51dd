"""A JSON document written with its long arrays streamed in, byte for byte what encoding it whole gives.

The document is encoded once with a marker string where each long array
goes; the text is cut at each marker and the array's items are encoded one
by one at the marker's depth.  ``orjson``'s two-space indentation nests
predictably (an item at depth d is its own indented text with every line
shifted by d levels), so the result equals :func:`~invariants.gate.report.dumps_json`
of the whole document.  When any value needs the ``json`` module's
``ensure_ascii`` fallback, the whole document is written that way, as the
whole-document encoder would.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

import orjson

from invariants.gate.report import dumps_json


def marker(name: str) -> str:
    return f"\x1e\x1einspector-stream-{name}\x1e\x1e"


def encodes(value: Any) -> bool:
    """Whether orjson encodes ``value`` (else the document falls back to ``json``'s ``ensure_ascii``)."""
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


def dump(value: Any, indent: bool, ascii_only: bool) -> str:
    if ascii_only:
        return json.dumps(value, indent=2 if indent else None, ensure_ascii=True)
    return dumps_json(value, indent=indent)


def write_document(
    doc: Any,
    arrays: list[tuple[str, Iterable[Any]]],
    out: Callable[[str], Any],
    ascii_only: bool,
) -> None:
    """``doc`` (indented), each ``(name, items)`` of ``arrays`` streamed where ``doc`` holds ``marker(name)``
    (in document order), then a newline."""
    text = dump(doc, True, ascii_only or not encodes(doc))
    for name, items in arrays:
        quoted = dump(marker(name), False, ascii_only)
        head, text = text.split(quoted, 1)
        out(head)
        last = head.rpartition("\n")[2]  # '    "name": ' : the array's key at its depth
        line_indent = len(last) - len(last.lstrip(" "))
        pad = "\n" + " " * (line_indent + 2)
        first = True
        for item in items:
            out(("[" if first else ",") + pad + dump(item, True, ascii_only).replace("\n", pad))
            first = False
        out("[]" if first else "\n" + " " * line_indent + "]")
    out(text + "\n")
