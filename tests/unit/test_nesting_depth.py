"""The nesting-depth guard decides exactly as the straightforward bracket sum, at C speed for ordinary lines."""

from __future__ import annotations

import re
from itertools import accumulate

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.model.jsonvalue import MAX_DEPTH, nesting_depth, too_deep

_KEEP = bytes(c for c in range(256) if c not in b'"[]{}')
_SIGN = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_STRING = re.compile(rb'"[^"]*"?')


def reference_depth(data: bytes) -> int:
    """The definition: escapes dropped, strings removed by a regex, brackets summed one by one."""
    reduced = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _KEEP)
    signs = _STRING.sub(b"", reduced).translate(_SIGN)
    return max(accumulate(memoryview(signs).cast("b")), default=0)


# Text made of the bytes that matter (brackets, quotes, backslashes) and a filler, in runs:
# long runs of opening brackets reach past the limit, odd quotes and stray closers make it invalid.
_piece = st.sampled_from([b"[", b"{", b"]", b"}", b'"', b"\\", b'\\"', b"\\\\", b"a", b",", b"[" * 40, b"]" * 40])
texts = st.lists(_piece, max_size=400).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(min_value=0, max_value=40))
def test_too_deep_equals_the_bracket_sum(data, limit):
    assert nesting_depth(data) == reference_depth(data)
    assert too_deep(data, limit) == (reference_depth(data) > limit)


def deep(n: int, wide: int = 1) -> bytes:
    return b"[" + b",".join([b"[" * n + b'"x]"' + b"]" * n] * wide) + b"]"


def test_at_the_limit_and_past_it():
    for n in (MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 5):
        for wide in (1, 3):
            data = deep(n, wide)
            assert too_deep(data) == (reference_depth(data) > MAX_DEPTH) == (n + 1 > MAX_DEPTH)


def test_ordinary_lines_with_many_brackets():
    messages = [{"role": "user", "content": [{"type": "text", "text": 'say "[{" \\ ]'}]} for _ in range(400)]
    line = orjson.dumps({"request": {"messages": messages}})
    assert not too_deep(line) and reference_depth(line) == 6
    unbalanced = b"[" * 600 + b"]" * 10  # invalid JSON: the estimate decides, as before
    assert too_deep(unbalanced) == (reference_depth(unbalanced) > MAX_DEPTH)
