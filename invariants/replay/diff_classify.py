"""Differences described as a person would: what is missing, extra, moved or changed.

A path diff (``messages[0].content[0].text: expected "catalog", recorded
"hi"``) says where two lists first disagree, not how: a dropped message and a
reordered one read the same.  :func:`classify_list` looks at the two lists
from their first differing index and names the edit: a run of items missing
from the recorded side, a run of extra ones, a run moved past others, or (when
none of these explains it) an item changed in place, which the caller then
describes by its path.  :func:`window_pair` shows two long strings around
their first differing character on both sides, so a summary never shows two
identical-looking prefixes.

Items are compared by structure (key order ignored), as the comparison
decides; the work is bounded (see :func:`classify_list`) and only done once a
difference exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from invariants.model.jsonvalue import dumps, shorten
from invariants.model.textdiff import common_prefix


@dataclass(frozen=True)
class ListEdit:
    """How two lists differ from their first differing index on.

    ``kind`` is ``missing`` (expected[exp_index:exp_index+count] are not in the recorded list),
    ``extra`` (recorded[rec_index:rec_index+count] are not in the expected list), ``moved``
    (expected[exp_index:exp_index+count] stand at recorded[rec_index:...], past ``past`` items
    that follow them in the expected list) or ``changed`` (expected[exp_index] and
    recorded[rec_index] differ in place).
    """

    kind: str
    exp_index: int
    rec_index: int
    count: int = 1
    past: int = 0  # moved: how many expected items the run moved past (after exp_index + count)


def _key(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, default=repr).encode()


REACH = 256  # expected items looked at beyond the recorded list's length (the expected side is a whole history)


def classify_list(expected: list, recorded: list, start: int) -> ListEdit:
    """The edit that turns ``expected`` into ``recorded``, both equal before ``start``.

    The work is bounded by the recorded list (which the capture line carried anyway) plus
    :data:`REACH` expected items, so a short recorded request against a long history stays cheap;
    an edit that reaches further reads as ``changed``."""
    if start >= len(recorded):
        return ListEdit("missing", start, start, len(expected) - start)
    if start >= len(expected):
        return ListEdit("extra", start, start, len(recorded) - start)
    rk = [_key(v) for v in recorded[start:]]
    ek = [_key(v) for v in expected[start : start + len(rk) + REACH]]
    in_rec, in_exp = set(rk), set(ek)
    if ek and ek[0] not in in_rec:
        n = _run(ek, in_rec)
        if not rk or (n < len(ek) and ek[n] == rk[0]):
            return ListEdit("missing", start, start, n)
    if rk and rk[0] not in in_exp:
        n = _run(rk, in_exp)
        if not ek or (n < len(rk) and rk[n] == ek[0]):
            return ListEdit("extra", start, start, n)
    if ek and rk:
        # Either the run at the head of expected stands later, or a later run of expected stands at the
        # head of recorded; the shorter run is the one that moved ([p, a, b] -> [a, b, p]: p, not a, b).
        moves = []
        later = _moved(ek, rk)
        if later is not None:
            j, n = later
            moves.append(ListEdit("moved", start, start + j, n, past=j))
        earlier = _moved(rk, ek)
        if earlier is not None:
            j, n = earlier
            moves.append(ListEdit("moved", start + j, start, n, past=-j))
        if moves:
            return min(moves, key=lambda m: m.count)
    return ListEdit("changed", start, start)


def _run(keys: list[bytes], other: set[bytes]) -> int:
    n = 1
    while n < len(keys) and keys[n] not in other:
        n += 1
    return n


def _moved(a: list[bytes], b: list[bytes]) -> tuple[int, int] | None:
    """Where the run at the head of ``a`` stands in ``b`` (offset, length), when what ``b`` has before it
    is what ``a`` has after it: ``a = R X``, ``b = X R``."""
    try:
        j = b.index(a[0])
    except ValueError:
        return None
    n = 1
    while n < len(a) and j + n < len(b) and a[n] == b[j + n]:
        n += 1
    return (j, n) if b[:j] == a[n : n + j] else None


def window_pair(expected: Any, recorded: Any, limit: int) -> tuple[str, str]:
    """Previews of two values within ``limit`` characters; two strings are windowed around their first
    differing character on both sides (``"…dog sat…" (chars 120-200 of 536)``)."""
    if not (isinstance(expected, str) and isinstance(recorded, str)):
        return shorten(expected, limit), shorten(recorded, limit)
    if len(dumps(expected)) <= limit and len(dumps(recorded)) <= limit:
        return dumps(expected), dumps(recorded)
    k = common_prefix(expected, recorded)
    span = max(8, limit - 24)  # room for the quotes, the ellipses and the "(chars a-b of n)" note
    lead = span // 4
    return _window(expected, k, lead, span), _window(recorded, k, lead, span)


def _window(text: str, at: int, lead: int, span: int) -> str:
    start = max(0, min(at - lead, len(text) - span))
    end = min(len(text), start + span)
    body = dumps(text[start:end])[1:-1]
    # Escapes can make the body longer than the characters it shows; cut it back to the span.
    if len(body) > span:
        body = body[:span]
        cut = body.rfind("\\", max(0, span - 6))
        if cut >= 0:  # never end inside an escape sequence
            body = body[:cut]
    left = "…" if start > 0 else ""
    right = "…" if end < len(text) else ""
    if not left and not right:
        return f'"{body}"'
    return f'"{left}{body}{right}" (chars {start}-{end} of {len(text)})'
