"""A capture line read without building its request.

A recorded request is mostly a message history the log already holds, and
when it is what the loop should have sent, its bytes are the rebuilt
request's bytes.  So a line is split (msgspec, no Python objects for the
history) into its small envelope values, parsed as the general reader would,
and the request's fields and messages as raw JSON; the comparison checks the
bytes and parses the request only when they differ (``Recorded.request``).

The split accepts only what the general reader accepts with the same values:
valid UTF-8, valid JSON, nested at most ``MAX_DEPTH`` deep (decided value by
value and message by message, which for valid JSON is the whole line's
depth), an object with a ``request`` object whose fields are the known ones
and whose ``messages`` is an array, envelope values orjson parses (for an
integer orjson 3.8 would turn into a float, or a number it refuses, the
general reader decides).  Anything else returns None and is read by the
general reader, which reports it.
"""

from __future__ import annotations

import json
from itertools import chain, compress, repeat
from operator import ne
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType

from invariants.model.jsonvalue import MAX_DEPTH, is_utf8, too_deep


class _Request(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    messages: list[Raw]
    model: Raw | UnsetType = UNSET
    system: Raw | UnsetType = UNSET
    tools: Raw | UnsetType = UNSET
    temperature: Raw | UnsetType = UNSET
    maxTokens: Raw | UnsetType = UNSET
    stop: Raw | UnsetType = UNSET
    provider: Raw | UnsetType = UNSET
    reasoningEffort: Raw | UnsetType = UNSET


class _Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A line with the CAPTURE-FORMAT fields only: split in one pass (else by the two below)."""

    request: _Request
    sessionId: Raw | UnsetType = UNSET
    sessionFile: Raw | UnsetType = UNSET
    logLength: Raw | UnsetType = UNSET
    turn: Raw | UnsetType = UNSET
    step: Raw | UnsetType = UNSET
    loopBuilt: Raw | UnsetType = UNSET
    time: Raw | UnsetType = UNSET
    verdict: Raw | UnsetType = UNSET
    shadowVerdict: Raw | UnsetType = UNSET
    origin: Raw | UnsetType = UNSET
    test: Raw | UnsetType = UNSET
    dispatchError: Raw | UnsetType = UNSET


REQUEST_FIELDS = _Request.__struct_fields__
LINE_FIELDS = tuple(f for f in _Line.__struct_fields__ if f != "request")
ORDERED = frozenset({"verdict", "shadowVerdict", "origin", "test", "dispatchError"})  # Recorded.extra keeps their order
_line = msgspec.json.Decoder(_Line).decode
_envelope = msgspec.json.Decoder(dict[str, Raw]).decode
_request = msgspec.json.Decoder(_Request).decode
_SCALARS = (str, bool, type(None))


class Cleared:
    """The long raw values of a file's last typed line, found not too deep.  A capture line
    repeats most of the history of the line before it, message for message: an equal value
    (``Raw == Raw`` compares bytes at memcmp speed) needs no second depth scan."""

    __slots__ = ("messages", "fields")

    def __init__(self) -> None:
        self.messages: list[Raw] = []
        self.fields: dict[str, Raw] = {}


def decode_capture(data: bytes, cleared: Cleared | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(envelope values, request fields)`` of a capture line, or None for the general reader.

    The envelope values are every top-level key but ``request``, in line order;
    the request fields are raw JSON, ``messages`` a list of raw messages.  ``cleared``
    carries the depth verdicts from one line of a file to the next.
    """
    if cleared is None:
        cleared = Cleared()
    if not is_utf8(data):
        return None  # msgspec does not check the UTF-8 of what it skips
    try:
        line = _line(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    except msgspec.ValidationError:  # another top-level key, or a field the general reader refuses
        line = None
    envelope: dict[str, Raw] = {}
    if line is not None:
        envelope = {name: getattr(line, name) for name in LINE_FIELDS if getattr(line, name) is not UNSET}
        request = line.request
    if line is None or len(ORDERED.intersection(envelope)) > 1:  # the keys in line order
        try:
            envelope = _envelope(data)
            request = _request(envelope.pop("request"))
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, KeyError):
            return None
    if any(_too_deep(raw, MAX_DEPTH - 1) for raw in envelope.values()):
        return None
    try:  # one parse for all the (small) envelope values; a value orjson refuses sends the line on
        parsed = orjson.loads(b"[" + b",".join(envelope.values()) + b"]")
    except orjson.JSONDecodeError:
        return None
    values: dict[str, Any] = {}
    for (key, raw), value in zip(envelope.items(), parsed):
        if not (type(value) is int or isinstance(value, _SCALARS)):
            value = _value(bytes(raw))  # a float or a container: decided value by value
            if value is UNSET:
                return None
        values[key] = value
    fields = {name: getattr(request, name) for name in REQUEST_FIELDS if getattr(request, name) is not UNSET}
    known = cleared.fields
    if any(
        _too_deep(raw, MAX_DEPTH - 2) for name, raw in fields.items() if name != "messages" and raw != known.get(name)
    ):
        return None
    cleared.fields = fields
    limit = MAX_DEPTH - 3
    messages = request.messages
    if messages and max(map(len, messages)) > 2 * limit:  # else none can be that deep
        before = cleared.messages
        if any(
            too_deep(bytes(raw), limit)
            for raw in compress(messages, map(ne, messages, chain(before, repeat(None, len(messages)))))
            if len(raw) > 2 * limit
        ):
            return None
    cleared.messages = messages
    return values, fields


def _too_deep(raw: Raw, limit: int) -> bool:
    """``too_deep`` for a value msgspec found valid: nesting n levels deep takes 2n bytes."""
    return len(raw) > 2 * limit and too_deep(bytes(raw), limit)


def _value(text: bytes) -> Any:
    """An envelope value as the general reader has it, or UNSET when only it can tell."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return UNSET  # the whole line then falls back to json in the general reader
    if type(value) is int or isinstance(value, _SCALARS):
        return value
    if type(value) is float and (b"." in text or b"e" in text or b"E" in text):
        return value
    # An integer past 64 bits (orjson 3.8 makes it a float), or a container that may hold one:
    # the general reader keeps orjson's value only if orjson takes the whole line, else json's.
    try:
        same = orjson.dumps(value) == orjson.dumps(json.loads(text))
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        same = False
    return value if same else UNSET
