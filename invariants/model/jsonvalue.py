"""JSON values as the harness sees them.

The harness compares headers and message arrays by ``JSON.stringify`` text,
so key order matters there, while our structural verdict must not depend on
it.  These helpers give both views over plain parsed JSON (dicts keep the
order they were logged in): a type-strict structural walk that finds the first
differing path, and a key-order walk for differences that only change bytes.
"""

from __future__ import annotations

import json
from functools import cache
from itertools import accumulate
from typing import Any, TypeGuard

import orjson

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<absent>", "__bool__": lambda self: False})()
"""Stands for an absent key; distinct from ``None`` (JSON null) and from ``[]``."""


def kind(value: Any) -> str:
    """The JSON kind of a value, separating booleans from numbers as JS does."""
    if value is MISSING:
        return "absent"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def join_path(base: str, key: Any) -> str:
    """Extend a display path: ``messages[3].content[0].text``."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if isinstance(key, str) and key.isidentifier():
        return f"{base}.{key}" if base else key
    return f"{base}[{json.dumps(key, ensure_ascii=False)}]"


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Path of the first structural difference between two JSON values, or None.

    Objects compare as key sets (order ignored), arrays by position, numbers by
    value (``1 == 1.0`` as in JS) but never equal to booleans.  The same object
    on both sides is equal without a walk (a header fold shares what a delta
    did not touch), and the path is built only for the difference found.
    """
    keys = _difference(a, b)
    if keys is None:
        return None
    for key in reversed(keys):
        path = join_path(path, key)
    return path


def _difference(a: Any, b: Any) -> list | None:
    """Keys from the first difference up to the root (innermost first), or None when equal."""
    if a is b:
        return None
    ka, kb = kind(a), kind(b)
    if ka != kb:
        return []
    if ka == "object":
        for key in a:
            if key not in b:
                return [key]
            va, vb = a[key], b[key]
            if va is not vb:
                sub = _difference(va, vb)
                if sub is not None:
                    sub.append(key)
                    return sub
        for key in b:
            if key not in a:
                return [key]
        return None
    if ka == "array":
        for i, (x, y) in enumerate(zip(a, b)):
            if x is not y:
                sub = _difference(x, y)
                if sub is not None:
                    sub.append(i)
                    return sub
        if len(a) != len(b):
            return [min(len(a), len(b))]
        return None
    return None if a == b else []


def key_order_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Path of the first object whose keys are the same but ordered differently.

    Call only on structurally equal values.
    """
    if a is b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return path or "(root)"
        for key in a:
            sub = key_order_difference(a[key], b[key], join_path(path, key))
            if sub is not None:
                return sub
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            sub = key_order_difference(x, y, join_path(path, i))
            if sub is not None:
                return sub
    return None


def exact_bytes(value: Any) -> bytes | None:
    """Compact JSON bytes in key order, or None when orjson cannot encode the value."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return None


def kept(data: bytes) -> bytes:
    """A copy of ``data`` for an encoding held after the moment it was made.  With orjson 3.13 every
    result took a page of memory or more however short it was: 20,000 message encodings held took
    78 MB of RSS, their copies 2 MB."""
    return bytes(memoryview(data))


def js_equal(a: Any, b: Any) -> bool:
    """``JSON.stringify(a) === JSON.stringify(b)`` for values parsed from JSON."""
    if a is b:
        return True
    if isinstance(a, list) and isinstance(b, list) and len(a) != len(b):
        return False
    ba = exact_bytes(a)
    if ba is not None and ba == exact_bytes(b):
        return True  # identical bytes: the common case, decided at C speed
    return first_difference(a, b) is None and key_order_difference(a, b) is None


def get_path(value: Any, path: str | None) -> Any:
    """Resolve a path made by :func:`join_path`; MISSING when it does not exist (no path: the value)."""
    if not path or path == "(root)":
        return value
    import re

    for m in re.finditer(r'\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]|\.?([A-Za-z_][A-Za-z0-9_]*)', path):
        idx, quoted, name = m.groups()
        if idx is not None:
            if not isinstance(value, list) or int(idx) >= len(value):
                return MISSING
            value = value[int(idx)]
        else:
            key = json.loads(quoted) if quoted is not None else name
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
    return value


def dumps(value: Any) -> str:
    """Compact JSON text keeping key order, tolerant of values orjson refuses."""
    if value is MISSING:
        return "<absent>"
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def shorten(value: Any, limit: int = 160) -> str:
    """A one-line preview of a value for messages and reports."""
    text = dumps(value)
    if len(text) <= limit:
        return text
    return text[: limit - 12] + f"…(+{len(text) - limit + 12} chars)"


def map_key(value: Any) -> Any:
    """A JSON value as a dict key, compared the way a JS ``Map`` compares keys: strings and
    null by value, numbers and booleans by value and kind (``true`` is not ``1``), an object
    or array by identity, so it matches nothing (and never needs hashing)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    return object()


def is_safe_int(value: Any) -> TypeGuard[int]:
    """An integer JS can represent exactly (``Number.isSafeInteger``)."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**53 - 1) <= value <= 2**53 - 1


# -- nesting depth of JSON text ----------------------------------------------------

MAX_DEPTH = 512
"""Deepest JSON nesting the tool parses.  A log line nested deeper is reported, not
parsed: orjson recurses while it builds Python values (100,000 nested objects
overflow the C stack and kill the process), and every walker of a parsed value
(diff, canonical form, rendering) is recursive too.  Real logs nest a few dozen
levels; orjson's own encoder stops earlier (:func:`orjson_depth`)."""

_DEPTH_KEEP = bytes(c for c in range(256) if c not in b'"[]{}')
_DEPTH_SIGN = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_DEPTH_PAIR = bytes.maketrans(b"[{]}", b"(())")
_DEPTH_PASSES = 16


def _structure(data: bytes) -> bytes:
    """The brackets of JSON text outside strings, in order: escaped backslashes, then escaped
    quotes are dropped, then everything but quotes and brackets, then what lies between
    quote pairs (to the end after an odd quote)."""
    if b"\\\\" in data:
        data = data.replace(b"\\\\", b"")
    if b'\\"' in data:
        data = data.replace(b'\\"', b"")
    return b"".join(data.translate(None, _DEPTH_KEEP).split(b'"')[::2])


def nesting_depth(data: bytes) -> int:
    """Structural nesting depth of JSON text, ignoring brackets inside strings.

    Linear time: the brackets outside strings (:func:`_structure`) summed as
    +1/-1, the highest running sum.  For invalid JSON the number is only an
    estimate (the parser refuses it).
    """
    return max(accumulate(memoryview(_structure(data).translate(_DEPTH_SIGN)).cast("b")), default=0)


@cache
def orjson_depth() -> int:
    """The deepest nesting the installed orjson encodes, capped at ``MAX_DEPTH + 1``.

    Found by asking orjson, not written down: its limit is not part of its interface and has
    moved between releases (255 before 3.12, 254 since).  A bisection of nested lists, once."""
    low, high = 1, MAX_DEPTH + 1  # encodes ``low`` levels; ``high`` is the cap, or one it refused
    if _orjson_encodes(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _orjson_encodes(middle) else (low, middle)
    return low


def _orjson_encodes(depth: int) -> bool:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 (ASCII decided in one C pass). msgspec does not check the UTF-8
    of the text it skips, so its typed readers ask this first."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``nesting_depth(data) > limit``, at C speed for ordinary lines.

    The depth is at most the number of opening brackets, so a line with few
    is decided by two counts.  Otherwise matched pairs ``()`` are removed a
    few times over: each pass lowers the highest running sum by at most one,
    so if what remains has at most ``limit - passes`` opening brackets the
    line cannot be deeper than ``limit`` (ordinary JSON, a few dozen levels
    deep, is gone after those passes).  Only a line still that deep is summed
    bracket by bracket.
    """
    if len(data) <= limit or data.count(b"[") + data.count(b"{") <= limit:
        return False
    brackets = _structure(data)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    pairs = brackets.translate(_DEPTH_PAIR)
    for passes in range(1, _DEPTH_PASSES + 1):
        shorter = pairs.replace(b"()", b"")
        if len(shorter) == len(pairs):
            break
        pairs = shorter
        if pairs.count(b"(") + passes <= limit:
            return False
    return max(accumulate(memoryview(brackets.translate(_DEPTH_SIGN)).cast("b")), default=0) > limit
