"""Compare a recorded request with its reconstruction.

The walk stops at the first difference per part (messages, then each header
field) and names its JSON path and region (prefix, derived history, suffix).
Structural equality decides; a difference only in key order is reported
apart, because it changes the bytes and busts provider prefix caches.
deepdiff is asked for the full picture only once a difference exists.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from itertools import compress, count, islice
from operator import is_not
from typing import TYPE_CHECKING, Any, Callable

import orjson

from invariants.model.jsonvalue import (
    MAX_DEPTH,
    MISSING,
    exact_bytes,
    first_difference,
    get_path,
    join_path,
    kept,
    key_order_difference,
    orjson_depth,
    shorten,
    too_deep,
)
from invariants.read.capture import Recorded
from invariants.replay.diff_words import describe_field, describe_messages, detail_previews, with_source
from invariants.replay.model import RebuiltRequest
from invariants.replay.provenance import Source, field_source, message_source

if TYPE_CHECKING:
    import logging

HEADER_FIELDS = ("model", "system", "tools", "temperature", "maxTokens", "stop")
# Spread from the header config into the late-era request, but not in the harness's comparison list
# (agent-loop invariant.ts): a request without them, or with other values, is not a difference.
SPREAD_FIELDS = ("provider", "reasoningEffort")
KNOWN_FIELDS = frozenset({"messages", *HEADER_FIELDS, *SPREAD_FIELDS})


@dataclass(slots=True)
class Difference:
    code: str  # DIV001 | DIV002 | DIV010 | DIV011
    path: str
    message: str
    detail: dict = field(default_factory=dict)
    place_seq: int | None = None  # the event the finding is placed at, when not the step's start


def _absent_as_empty(value: Any, empty: Any) -> Any:
    return empty if value is MISSING else value


def _field_sides(name: str, expected: Any, recorded: Any) -> tuple[Any, Any]:
    """The two sides of a header field as upstream compares them (an absent list or prompt is empty)."""
    if name == "tools":
        return _absent_as_empty(expected, []), _absent_as_empty(recorded, [])
    if name == "system":
        return _absent_as_empty(expected, ""), _absent_as_empty(recorded, "")
    return expected, recorded


def _field_difference(name: str, expected: Any, recorded: Any) -> str | None:
    """Path of a structural header-field difference, following upstream's absent rules."""
    if name == "tools":
        return first_difference(_absent_as_empty(expected, []), _absent_as_empty(recorded, []), "tools")
    if name == "system":
        e, r = _absent_as_empty(expected, ""), _absent_as_empty(recorded, "")
        return first_difference(e, r, "system")
    # model, temperature, maxTokens, stop: absent equals only absent.
    return first_difference(expected, recorded, name)


DEEP_WINDOW = 16  # messages from the first difference on that deepdiff looks at
DEEP_MAX_DIFFS = 200  # ...and the differences after which it stops


SUMMARIES_KEPT = 64  # deep_summary's results remembered, by a digest of what was compared


def deep_summary(expected: Any, recorded: Any, limit: int = 8, start: int = 0) -> dict:
    """A compact deepdiff report: counts per change kind and the first few paths.

    Bounded whatever the input: for message lists only ``DEEP_WINDOW`` messages
    from ``start`` (the first differing one) are compared, and deepdiff stops
    after ``DEEP_MAX_DIFFS`` differences (``truncated_after`` then says so; its
    own warning about it is kept off stderr).  (Unbounded, a capture of 2,000
    one-line requests against a 2,000-message history took 133 s and 12 GB.)

    The requests after a divergence usually diverge the same way (the same
    windows of messages), and deepdiff costs about a millisecond a call: the last
    :data:`SUMMARIES_KEPT` results are remembered by a digest of the JSON bytes
    of the two sides (never the sides: a window of long messages is megabytes),
    so a capture of thousands of such lines pays it once.
    """
    window = None
    if isinstance(expected, list) and isinstance(recorded, list) and max(len(expected), len(recorded)) > DEEP_WINDOW:
        start = max(0, min(start, len(expected), len(recorded)))
        window = [start, start + DEEP_WINDOW]
        expected, recorded = expected[start : start + DEEP_WINDOW], recorded[start : start + DEEP_WINDOW]
    from hashlib import blake2b  # deferred: hashlib loads OpenSSL (~4 MB), and a clean run diffs nothing

    try:  # equal JSON bytes are equal values, types and key order included; kept as a digest
        left = orjson.dumps(expected)
        sides = blake2b(left, digest_size=16)
        sides.update(orjson.dumps(recorded))
        key: tuple | None = (sides.digest(), len(left), limit, window[0] if window else None)  # 1|23 is not 12|3
    except (TypeError, orjson.JSONEncodeError):  # not JSON orjson encodes (MISSING, a lone surrogate)
        key = None
    kept_summary = _SUMMARIES.get(key) if key is not None else None
    if kept_summary is not None:
        return orjson.loads(kept_summary)  # a copy: a finding's detail is its own
    out = _deep_summary(expected, recorded, limit, window)
    if key is not None:
        if len(_SUMMARIES) >= SUMMARIES_KEPT:
            _SUMMARIES.clear()
        with suppress(TypeError):  # (a summary is strings and counts: always encoded, but never a traceback)
            _SUMMARIES[key] = orjson.dumps(out)
    return out


_SUMMARIES: dict[tuple, bytes] = {}


def _deep_summary(expected: Any, recorded: Any, limit: int, window: list[int] | None) -> dict:
    from deepdiff import DeepDiff  # deferred: only paid for when a difference exists

    _quiet_deepdiff()
    try:
        diff = DeepDiff(
            expected,
            recorded,
            verbose_level=1,
            ignore_order=False,
            cutoff_intersection_for_pairs=1,
            max_diffs=DEEP_MAX_DIFFS,
        )
    except Exception as exc:  # deepdiff on hostile data must not take the report down
        return {"error": f"deepdiff failed: {type(exc).__name__}"}
    out: dict = {}
    for kind, entries in diff.items():
        items = list(entries.items()) if isinstance(entries, dict) else [(e, None) for e in entries]
        out[kind] = {
            "count": len(items),
            "paths": [_rebase(str(k).replace("root", "", 1), window) for k, _ in items[:limit]],
        }
    if window is not None:
        out["window"] = window
    if diff.get_stats().get("MAX DIFF LIMIT REACHED"):
        out["truncated_after"] = DEEP_MAX_DIFFS  # the counts above stop there
    del diff
    _collect_young()
    return out


def _quiet_deepdiff() -> None:
    """deepdiff logs a warning when it stops at ``max_diffs``; without a handler Python prints it on
    stderr, in the middle of a report.  The summary says so instead (``truncated_after``)."""
    import logging

    logger = logging.getLogger("deepdiff.diff")
    if not any(isinstance(f, _LimitNotice) for f in logger.filters):
        logger.addFilter(_LimitNotice())


class _LimitNotice:
    """Drops deepdiff's "has reached the max number of ..." warnings (a ``logging`` filter)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "has reached the max number of" not in record.getMessage()


def _collect_young() -> None:
    """deepdiff's result tree is full of reference cycles; a check runs with the cyclic
    collector paused (parsed JSON has none), so without this every diverging request
    left its tree behind.  A young-generation pass only visits what was allocated since
    the last one, so calling it per report stays linear overall."""
    import gc

    if not gc.isenabled():
        gc.collect(0)


def _rebase(path: str, window: list[int] | None) -> str:
    """A path inside the window as a path in the whole list (``[3]...`` -> ``[start + 3]...``)."""
    if window is None or not path.startswith("["):
        return path
    end = path.find("]")
    head = path[1:end]
    return f"[{int(head) + window[0]}]{path[end + 1 :]}" if head.isdigit() else path


def compare(expected: RebuiltRequest, recorded: dict | Recorded) -> list[Difference]:
    """The differences between a rebuilt request and a recorded one (a request dict or a capture record).

    A record read typed whose fields are byte for byte the rebuilt request's
    has none, and is decided without parsing it.
    """
    if isinstance(recorded, Recorded):
        if recorded.parsed is expected.request or _byte_identical(expected.request, recorded):
            return []  # proved byte for byte as it was read, or now
        recorded = recorded.request
    out: list[Difference] = []
    exp_msgs = expected.request["messages"]
    rec_msgs = recorded.get("messages", MISSING)
    same = _same_bytes(exp_msgs, rec_msgs)
    path = None if same else first_difference(exp_msgs, rec_msgs, "messages")
    if same:
        pass
    elif path is not None:
        index = _message_index(path)
        region = expected.region(index) if index is not None else "messages"
        origin = None
        if region == "derived" and index is not None and index - expected.prefix_len < len(expected.origins):
            origin = expected.origins[index - expected.prefix_len]
        source: Source | None = None
        said = None
        if index is not None and isinstance(rec_msgs, list):
            said = describe_messages(expected, exp_msgs, rec_msgs, index, path)
            source, msg = said.source, said.message
            e_prev, r_prev = detail_previews(exp_msgs, rec_msgs, path, "messages")
        else:
            e_val, r_val = get_path({"messages": exp_msgs}, path), get_path({"messages": rec_msgs}, path)
            msg = f"messages diverge from the log's reconstruction at {path}: expected {shorten(e_val, 80)}, "
            msg += f"recorded {shorten(r_val, 80)}"
            e_prev, r_prev = shorten(e_val, 400), shorten(r_val, 400)
        out.append(
            Difference(
                "DIV001",
                said.path if said is not None else path,
                msg,
                {
                    "region": region,
                    "message_index": index,
                    **(source.detail() if source is not None else {"source_seq": None}),
                    "expected": e_prev,
                    "recorded": r_prev,
                    "expected_count": len(exp_msgs),
                    "recorded_count": len(rec_msgs) if isinstance(rec_msgs, list) else None,
                    "deepdiff": deep_summary(exp_msgs, rec_msgs, start=index or 0),
                    **(said.detail if said is not None else {}),
                },
                place_seq=origin,
            )
        )
    else:
        order = key_order_difference(exp_msgs, rec_msgs, "messages")
        if order is not None:
            at = _message_index(order)
            src = message_source(expected, at) if at is not None and at < len(exp_msgs) else None
            out.append(_order_difference(order, exp_msgs, rec_msgs, "messages", src))
    for name in HEADER_FIELDS:
        e, r = expected.request.get(name, MISSING), recorded.get(name, MISSING)
        if e is not MISSING and _same_bytes(e, r):
            continue
        p = _field_difference(name, e, r)
        if p is not None:
            e, r = _field_sides(name, e, r)
            said = describe_field(expected, name, e, r, p)
            e_prev, r_prev = detail_previews(e, r, p, name)
            named = said.source.detail() if said.source is not None else {"source_seq": None}
            detail = {"field": name, **named, "expected": e_prev, "recorded": r_prev, **said.detail}
            out.append(Difference("DIV010", said.path, said.message, detail))
        elif name == "tools" and e is not MISSING and r is not MISSING:
            order = key_order_difference(e, r, "tools")
            if order is not None:
                out.append(_order_difference(order, e, r, "tools", field_source(expected, "tools")))
    for name in recorded:
        if name not in KNOWN_FIELDS:
            out.append(
                Difference(
                    "DIV011",
                    join_path("", name),
                    f"recorded request carries {name}={shorten(recorded[name], 60)}, which the log has no account of",
                    {"field": name},
                )
            )
    return out


def _byte_identical(request: dict, recorded: Recorded) -> bool:
    """Whether a typed record has exactly the request's fields, each with the bytes orjson
    gives the rebuilt value (messages compared one by one, whitespace between them aside).

    The recorded values are msgspec ``Raw`` (the record was read typed, so msgspec is
    loaded): ``Raw == Raw`` compares bytes at memcmp speed, where a memoryview compares
    item by item."""
    raw = recorded.raw_fields
    if raw is None or raw.keys() != request.keys() or len(raw["messages"]) != len(request["messages"]):
        return False
    from msgspec import Raw

    def as_raw(value: Any) -> Raw | None:
        data = exact_bytes(value)
        return None if data is None else Raw(kept(data))

    global _last_raws
    for name, value in request.items():
        if name == "messages":
            reused = _reused(_last_raws, value, as_raw)
            if reused is None:
                return False
            _last_raws = reused
            if reused[1] != raw[name]:
                return False
            continue
        want = _field_encoding(_raw_fields, name, value, as_raw)
        if want is None or want != raw[name]:
            return False
    return True


def request_bytes_at(request: dict, text: bytes, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is orjson's encoding of ``request`` (its keys in order).

    A capture line split around its request (:mod:`invariants.read.capture_splice`) holds a valid
    request exactly when these bytes are a JSON value: equality with a valid encoding proves it,
    so the recorded request is neither parsed nor scanned first.  Nor is it too deep for a line
    while the installed orjson encodes nothing deeper than the ``MAX_DEPTH - 3`` levels a message
    may nest inside ``line.request.messages`` (:func:`orjson_depth`, asked once); an orjson that
    encodes deeper values has the bytes scanned for depth."""
    global _last_bytes
    before: list[bytes] = []  # "key":value of the fields before the messages, then '"messages":['
    after: list[bytes] = []
    messages: bytes | None = None
    for name, value in request.items():
        key = _KEYS.get(name) or _KEYS.setdefault(name, orjson.dumps(name) + b":")
        if name == "messages":
            if 2 * len(value) > end - start:
                return False  # each message takes a byte and a comma at least: not without a look at each
            reused = _reused(_last_bytes, value, _kept_bytes)
            if reused is None:
                return False
            _last_bytes = reused
            messages = b",".join(reused[1])
            before.append(key + b"[")
            continue
        field = _field_encoding(_byte_fields, name, value, exact_bytes)
        if field is None:
            return False
        (before if messages is None else after).append(key + field)
    if messages is None:
        return False
    first = b"{" + b",".join(before)
    last = b"]" + b"".join(b"," + part for part in after) + b"}"
    if len(first) + len(messages) + len(last) != end - start:
        return False
    middle = start + len(first)
    return (
        text.startswith(first, start)
        and text.startswith(messages, middle)
        and text.startswith(last, middle + len(messages))
        and (orjson_depth() <= MAX_DEPTH - 3 or not too_deep(text[start:end], MAX_DEPTH - 1))
    )


_last_raws: tuple[list, list] = ([], [])
_last_bytes: tuple[list, list] = ([], [])
_raw_fields: dict[str, tuple[Any, Any]] = {}
_byte_fields: dict[str, tuple[Any, Any]] = {}
_KEYS: dict[str, bytes] = {}


def _reused(last: tuple[list, list], messages: list, encode: Callable[[Any], Any]) -> tuple[list, list] | None:
    """``(messages, each one encoded)``, or None when one cannot be.  Consecutive requests of a
    session share most of their history (the same objects at the same places), so what ``last``
    (the previous call's pair) encoded is reused up to the first message that is not the same
    object: a session's histories are encoded about once, not once per request.  The caller
    keeps the new pair in one assignment (another thread may read the old one meanwhile)."""
    before, encoded = last
    same = next(compress(count(), map(is_not, before, messages)), min(len(before), len(messages)))
    out = encoded[:same]
    for message in islice(messages, same, None):
        item = encode(message)
        if item is None:
            return None
        out.append(item)
    return messages, out


def _kept_bytes(value: Any) -> bytes | None:
    """:func:`exact_bytes` of a message, as :func:`_reused` keeps it until the next request (:func:`kept`)."""
    data = exact_bytes(value)
    return None if data is None else kept(data)


def _field_encoding(cache: dict[str, tuple[Any, Any]], name: str, value: Any, encode: Callable[[Any], Any]) -> Any:
    """A field's encoding by ``encode``; the requests of one header version share the value
    (a system prompt, a tool list), encoded once for all of them."""
    last = cache.get(name)  # one read: another thread may replace it
    if last is not None and last[0] is value:
        return last[1]
    out = encode(value)
    cache[name] = (value, out)
    return out


def _same_bytes(a: Any, b: Any) -> bool:
    """Byte-identical JSON: equal in content and key order; decided without a Python walk."""
    if b is MISSING:
        return False
    if isinstance(a, list) and (not isinstance(b, list) or len(a) != len(b)):
        return False  # without encoding a whole history to learn it
    ba = exact_bytes(a)
    return ba is not None and ba == exact_bytes(b)


def _order_difference(path: str, expected: Any, recorded: Any, root: str, source: Source | None) -> Difference:
    e, r = get_path({root: expected}, path), get_path({root: recorded}, path)
    ek = list(e) if isinstance(e, dict) else []
    rk = list(r) if isinstance(r, dict) else []
    return Difference(
        "DIV002",
        path,
        f"same content, different key order at {path}{with_source(source)}: expected keys {ek}, recorded {rk} "
        "(bytes differ; provider prefix caches miss)",
        {"expected_keys": ek, "recorded_keys": rk, **(source.detail() if source is not None else {})},
    )


def _message_index(path: str) -> int | None:
    if not path.startswith("messages["):
        return None
    try:
        return int(path[len("messages[") : path.index("]")])
    except ValueError:
        return None
