"""Splitting a capture line around its request, and proving the request by its bytes."""

from __future__ import annotations

import random

import orjson
import pytest

from invariants.model.jsonvalue import MAX_DEPTH, orjson_depth
from invariants.read.capture_splice import split_capture
from invariants.replay.compare import request_bytes_at

REQUEST = b'{"model":"m","messages":[{"role":"user","content":"a}b"}],"temperature":0.5}'


def _split(line: bytes) -> tuple[dict, bytes] | None:
    got = split_capture(line)
    return None if got is None else (got[0], line[got[1] : got[2]])


@pytest.mark.parametrize(
    "line, values",
    [
        (b'{"sessionId":"s","logLength":4,"turn":1,"step":1,"loopBuilt":true,"request":' + REQUEST + b"}", None),
        (b'{"request":' + REQUEST + b',"origin":"loop","verdict":"said \\"x}\\" {","test":null}', None),
        (b'{"time":1.5e3,"request":' + REQUEST + b',"sessionId":"s\xc3\xa9","turn":-0}', None),
        (b'{"request":5,"step":2,"request":' + REQUEST + b"}", {"step": 2}),  # the last request key wins
    ],
)
def test_a_plain_line_splits_into_its_envelope_and_the_request_span(line, values):
    got = _split(line)
    assert got is not None
    envelope, request = got
    assert request == REQUEST
    whole = orjson.loads(line)
    assert whole.pop("request") == orjson.loads(REQUEST)
    assert envelope == (values if values is not None else whole)
    assert list(envelope) == list(values or whole)  # in line order


@pytest.mark.parametrize(
    "line",
    [
        b' {"request":' + REQUEST + b"}",  # whitespace: not the compact layout
        b'{"request": ' + REQUEST + b"}",
        b'{"request":' + REQUEST + b"}\r",
        b'{"request":' + REQUEST + b',"requ\\u0065st":1}',  # a second request key after it would win
        b'{"request":' + REQUEST + b',"request":1}',
        b'{"\\u0072equest":' + REQUEST + b"}",
        b'{"turn":{"n":1},"request":' + REQUEST + b"}",  # an envelope value that is not a scalar
        b'{"request":' + REQUEST + b',"test":[1]}',
        b'{"sessionId":"a\x01b","request":' + REQUEST + b"}",  # a raw control character: not JSON
        b'{"sessionId":"\xff","request":' + REQUEST + b"}",  # not UTF-8
        b'{"turn":01,"request":' + REQUEST + b"}",
        b'{"turn":12345678901234567890,"request":' + REQUEST + b"}",  # an integer orjson may not read exactly
        b'{"request":[1]}',
        b'{"request":' + REQUEST,
        b'{"request":' + REQUEST + b',"v":"}}}}}"}',  # more braces in the tail's strings than are tried
    ],
)
def test_anything_else_is_left_to_the_readers(line):
    assert split_capture(line) is None


TRICKY = [
    b'{"request":' + REQUEST + b',"request":{}}',  # the span runs over both: no encoding of one request is it
    b'{"request":' + REQUEST + b',"x":"},\\"request\\":{}"}',
    b'{"request":' + REQUEST + b',"x":"\\\\"}',
    b'{"a":"\\"request\\":","request":' + REQUEST + b"}",
    b'{"a":"x\\\\","request":' + REQUEST + b"}",
    b'{"request":{"messages":[]},"v":"},\\"w\\":1}"}',
]


def _sound(line: bytes) -> None:
    """If the line splits and its span is a JSON value, the line is JSON: that value as its request."""
    got = split_capture(line)
    if got is None:
        return
    values, start, end = got
    try:
        request = orjson.loads(line[start:end])
    except orjson.JSONDecodeError:
        return
    whole = orjson.loads(line)  # raises if the split vouched for a line that is not JSON
    assert whole.pop("request") == request
    assert list(whole.items()) == list(values.items())


@pytest.mark.parametrize("line", TRICKY)
def test_a_span_that_is_a_json_value_makes_the_line_that_json(line):
    _sound(line)


@pytest.mark.parametrize("seed", range(20))
def test_splits_of_mutated_lines_are_sound(seed):
    rng = random.Random(seed)
    bits = [b"}", b"{", b'"', b"\\", b",", b":", b'"request":', b',"request":{}', b"1", b" ", b"]"]
    for base in TRICKY + [b'{"turn":1,"request":' + REQUEST + b',"verdict":"ok"}']:
        for _ in range(200):
            line = bytearray(base)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(line) + 1)
                if rng.random() < 0.3 and len(line) > 2:
                    del line[at : at + rng.randint(1, 3)]
                else:
                    line[at:at] = rng.choice(bits)
            _sound(bytes(line))


def test_a_damaged_request_still_splits_for_the_bytes_to_decide():
    # the split does not read the request: a request that is not JSON is refused by the proof
    line = b'{"turn":1,"request":{"model":"m","messages":[{"role":}]}}'
    _, start, end = split_capture(line) or (None, 0, 0)
    assert line[start:end] == b'{"model":"m","messages":[{"role":}]}'
    assert not request_bytes_at({"model": "m", "messages": [{"role": None}]}, line, start, end)


def _line_with(request: dict) -> tuple[bytes, int, int]:
    body = orjson.dumps(request)
    line = b'{"turn":1,"request":' + body + b',"verdict":"ok"}'
    return line, len(b'{"turn":1,"request":'), len(b'{"turn":1,"request":') + len(body)


def test_a_request_is_proved_by_its_exact_bytes_only():
    request = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}], "maxTokens": 9}
    line, start, end = _line_with(request)
    assert request_bytes_at(request, line, start, end)
    assert not request_bytes_at({**request, "maxTokens": 8}, line, start, end)
    reordered = {"system": "s", "model": "m", "messages": request["messages"], "maxTokens": 9}
    assert not request_bytes_at(reordered, line, start, end)  # same content, other bytes
    assert not request_bytes_at({k: v for k, v in request.items() if k != "maxTokens"}, line, start, end)
    assert not request_bytes_at(request, line, start, end - 1)
    spaced = line[:start] + line[start:end].replace(b",", b", ") + line[end:]
    assert not request_bytes_at(request, spaced, start, end + line[start:end].count(b","))
    assert not request_bytes_at({"model": "m", "messages": [{"n": 2**70}]}, line, start, end)  # orjson cannot say


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_orjson_depth_is_what_the_installed_orjson_encodes():
    depth = orjson_depth()
    assert orjson.loads(orjson.dumps(_nested(depth))) == _nested(depth)
    if depth <= MAX_DEPTH:
        with pytest.raises(TypeError):
            orjson.dumps(_nested(depth + 1))


@pytest.mark.parametrize("depth", [1, 2, 3, 64, 200, 253, 254, 255, 256, 300, MAX_DEPTH - 3, MAX_DEPTH - 2])
def test_a_message_is_proved_by_its_bytes_only_within_both_limits(depth):
    # a message sits under line, request and messages: it is proved by its bytes when orjson
    # encodes it and the line is not too deep to read; deeper ones are left to the readers
    body = b'{"model":"m","messages":[' + b"[" * depth + b"]" * depth + b"]}"
    line = b'{"request":' + body + b"}"
    proved = depth <= min(orjson_depth(), MAX_DEPTH - 3)
    assert request_bytes_at({"model": "m", "messages": [_nested(depth)]}, line, 11, 11 + len(body)) is proved
