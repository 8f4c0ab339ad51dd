"""A capture line split around its request, the request left unread.

A recorded request that is what the loop should have sent is, byte for byte,
the rebuilt request's encoding; proving that equality proves the request
valid JSON too, so its bytes (most of a capture) need not be parsed or even
scanned for syntax first.  This module finds where the request sits in a line
and reads everything else: the envelope values around it.

It takes only the plain layout, compact as the harness writes it: an object
whose top-level values are all scalars, but for one ``request`` whose value
starts with ``{``.  The split is proved, not guessed: the text before the
request matches the grammar of an object's opening pairs up to the key
``request``, the text after it the grammar of its closing pairs (with no
second ``request`` key, which would win), and orjson parses the envelope with
``null`` in the request's place.  Then the line is valid JSON with that request
if and only if the bytes between are a JSON value, which the comparison
decides by equality with a valid encoding.  Anything else returns None and is
read by the typed or general reader, as before.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'  # its boundaries; orjson checks its escapes and UTF-8
_KEY = rb'"[^"\\]*"'  # no escapes: a key spelled ``"request"`` is the only way to name it
_NUMBER = rb"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"  # integers orjson reads exactly
_SCALAR = rb"(?:" + _STRING + rb"|" + _NUMBER + rb"|true|false|null)"
_HEAD = re.compile(rb"\{(?:" + _KEY + rb":" + _SCALAR + rb",)*\"request\":(?=\{)", re.DOTALL)
_TAIL = re.compile(rb"(?:,(?!\"request\")" + _KEY + rb":" + _SCALAR + rb")*\}", re.DOTALL)
_TRIES = 4  # closing braces inside the tail's strings tried before the line goes the usual way


def split_capture(data: bytes) -> tuple[dict[str, Any], int, int] | None:
    """``(envelope values, start, end)``: the line's top-level values but ``request``, in line
    order, and the span ``data[start:end]`` its request would fill; None when the line is not
    the plain layout (see the module docstring)."""
    head = _HEAD.match(data)
    if head is None or data[-1:] != b"}":
        return None
    start = head.end()
    end = len(data) - 1
    for _ in range(_TRIES):
        end = data.rfind(b"}", start, end)  # the request's closing brace, or one in a tail string
        if end < 0:
            return None
        if _TAIL.fullmatch(data, end + 1):
            break
    else:
        return None
    end += 1
    try:
        values = orjson.loads(data[:start] + b"null" + data[end:])
    except orjson.JSONDecodeError:
        return None
    values.pop("request")
    return values, start, end
