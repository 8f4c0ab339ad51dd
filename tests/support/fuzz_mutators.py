"""Mutators: each damages a log's bytes or one of its JSON lines in one way, seeded by an rng."""

from __future__ import annotations

import json
import random
from typing import Any, Callable

import orjson

from tests.support.fuzz_inputs import HOSTILE_TEXTS, SEQ_VALUES, WRONG_VALUES, deep_json

# Each takes (rng, data) and returns new bytes.  They work on the log's bytes
# or on its lines; the JSON-level ones parse one line and damage one field.


def split_lines(data: bytes) -> tuple[list[bytes], bool]:
    ends = data.endswith(b"\n")
    lines = data.split(b"\n")
    if ends:
        lines.pop()
    return lines, ends


def join_lines(lines: list[bytes], ends: bool = True) -> bytes:
    return b"\n".join(lines) + (b"\n" if ends and lines else b"")


def m_truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def m_bitflip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 8))):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


_BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\xe2\x82", b"\xc0\xaf", b"\x80"]


def m_bad_utf8(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_BAD_UTF8) + data[i:]


def m_nul(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"\x00" * rng.choice((1, 1, 4, 1024)) + data[i:]


def m_blank_lines(rng: random.Random, data: bytes) -> bytes:
    lines, ends = split_lines(data)
    i = rng.randrange(len(lines) + 1)
    lines[i:i] = [rng.choice((b"", b" ", b"\r", b"\t \t"))] * rng.choice((1, 2))
    return join_lines(lines, ends)


def m_dup_line(rng: random.Random, data: bytes) -> bytes:
    lines, ends = split_lines(data)
    if not lines:
        return data
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return join_lines(lines, ends)


def m_delete_line(rng: random.Random, data: bytes) -> bytes:
    lines, ends = split_lines(data)
    if not lines:
        return data
    del lines[rng.randrange(len(lines))]
    return join_lines(lines, ends)


def m_swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines, ends = split_lines(data)
    if len(lines) < 2:
        return data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return join_lines(lines, ends)


def m_shuffle_block(rng: random.Random, data: bytes) -> bytes:
    lines, ends = split_lines(data)
    if len(lines) < 3:
        return data
    i = rng.randrange(len(lines) - 1)
    j = min(len(lines), i + rng.randrange(2, 12))
    block = lines[i:j]
    rng.shuffle(block)
    lines[i:j] = block
    return join_lines(lines, ends)


def m_crlf(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def json_paths(value: Any, prefix: tuple = (), depth: int = 0, out: list | None = None) -> list[tuple]:
    out = [] if out is None else out
    out.append(prefix)
    if depth > 8:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            json_paths(v, prefix + (k,), depth + 1, out)
    elif isinstance(value, list):
        for i, v in enumerate(value[:6]):
            json_paths(v, prefix + (i,), depth + 1, out)
    return out


def set_path(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    parent = value
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = new
    return value


def dump_json(value: Any) -> bytes:
    """JSON bytes for any value we build, including >64-bit ints and lone surrogates."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def _pick_json_line(rng: random.Random, data: bytes) -> tuple[list[bytes], bool, int, Any] | None:
    lines, ends = split_lines(data)
    order = list(range(len(lines)))
    rng.shuffle(order)
    for i in order[:20]:
        try:
            return lines, ends, i, orjson.loads(lines[i])
        except orjson.JSONDecodeError:
            continue
    return None


def m_wrong_type(rng: random.Random, data: bytes) -> bytes:
    """Replace one field anywhere in one line by a value of another JSON kind."""
    picked = _pick_json_line(rng, data)
    if picked is None:
        return data
    lines, ends, i, obj = picked
    path = rng.choice(json_paths(obj))
    value = rng.choice(WRONG_VALUES + [rng.choice(HOSTILE_TEXTS)])
    lines[i] = dump_json(set_path(obj, path, value))
    return join_lines(lines, ends)


def m_drop_key(rng: random.Random, data: bytes) -> bytes:
    picked = _pick_json_line(rng, data)
    if picked is None:
        return data
    lines, ends, i, obj = picked
    paths = [p for p in json_paths(obj) if p]
    if not paths:
        return data
    path = rng.choice(paths)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    del parent[path[-1]]
    lines[i] = dump_json(obj)
    return join_lines(lines, ends)


def m_numbers(rng: random.Random, data: bytes) -> bytes:
    """Negative, huge or non-integer seq / turn / step / seedLength / logLength / index."""
    picked = _pick_json_line(rng, data)
    if picked is None:
        return data
    lines, ends, i, obj = picked
    keys = (
        "seq",
        "time",
        "turn",
        "step",
        "index",
        "seedLength",
        "logLength",
        "seq0",
        "time0",
        "createdAt",
        "version",
        "start",
        "end",
    )
    paths = [p for p in json_paths(obj) if p and p[-1] in keys]
    if not paths:
        return data
    lines[i] = dump_json(set_path(obj, rng.choice(paths), rng.choice(SEQ_VALUES)))
    return join_lines(lines, ends)


def m_surface_replace(rng: random.Random, data: bytes) -> bytes:
    """Turn one surface event into a replace whose range points nowhere (or backwards)."""
    lines, ends = split_lines(data)
    cands = [i for i, x in enumerate(lines) if b'"surfaceOp"' in x]
    if not cands:
        return data
    i = rng.choice(cands)
    try:
        obj = orjson.loads(lines[i])
    except orjson.JSONDecodeError:
        return data
    seq = obj.get("seq") if isinstance(obj, dict) and isinstance(obj.get("seq"), int) else 0
    start, end = rng.choice(
        [(seq + 5, seq + 9), (seq - 1, 0), (0, 10**6), (-3, 2), (2**53 - 1, 2**53 - 1), (seq, seq), (1, 1)]
    )
    obj["surfaceOp"] = rng.choice(
        [
            {"op": "replace", "start": start, "end": end},
            {"op": "replace", "start": start},
            {"op": "splice", "start": start, "end": end},
            "replace",
            ["append"],
        ]
    )
    if rng.random() < 0.5:
        obj["sourceEventSeqs"] = rng.choice(
            [[start, end], [], "x", [None], list(range(start, start + 3)) if isinstance(start, int) else []]
        )
    lines[i] = dump_json(obj)
    return join_lines(lines, ends)


def m_delta_arms(rng: random.Random, data: bytes) -> bytes:
    """Give a request/header-delta (or snapshot) arms of the wrong shape."""
    lines, ends = split_lines(data)
    cands = [i for i, x in enumerate(lines) if b'"request/header' in x]
    if not cands:
        # make one: insert a delta after a step/start
        starts = [i for i, x in enumerate(lines) if b'"step/start"' in x]
        if not starts:
            return data
        i = rng.choice(starts)
        seq = _seq_of(lines[i])
        lines.insert(i + 1, dump_json({"type": "request/header-delta", "seq": seq + 1, "time": 0, "data": {}}))
        cands = [i + 1]
    i = rng.choice(cands)
    try:
        obj = orjson.loads(lines[i])
    except orjson.JSONDecodeError:
        return data
    arm_keys = [
        "system",
        "tools",
        "config",
        "messagePrefix",
        "messageSuffix",
        "header",
        "reason",
        "delta",
        "set",
        "remove",
        "add",
        "edits",
        "patch",
        "ops",
        "changes",
    ]
    arm_values = WRONG_VALUES + [
        [{"op": "replace", "from": 10**9, "to": -5, "lines": None}],
        {"add": [{"index": -1}], "remove": ["nope", 7], "set": {"x": None}},
        {"edits": [{"start": 99, "end": 1, "text": 5}]},
        [{"name": None}, {"name": "dup"}, {"name": "dup"}],
        {"insert": {"at": 10**18, "value": []}},
    ]
    d = obj.get("data") if isinstance(obj, dict) else None
    if not isinstance(d, dict):
        obj["data"] = d = {}
    target = d.get("header") if isinstance(d.get("header"), dict) and rng.random() < 0.5 else d
    for _ in range(rng.randrange(1, 4)):
        target[rng.choice(arm_keys)] = rng.choice(arm_values)
    lines[i] = dump_json(obj)
    return join_lines(lines, ends)


def _seq_of(line: bytes) -> int:
    try:
        v = orjson.loads(line).get("seq")
        return v if isinstance(v, int) else 0
    except Exception:
        return 0


def m_deep_nesting(rng: random.Random, data: bytes) -> bytes:
    """A line (or a field) nested far beyond any parser's recursion limit, or just under it."""
    lines, ends = split_lines(data)
    depth = rng.choice((100_000, 1_100, 1_023, 900, 300, 254, 256))
    kind = rng.choice(("array", "object"))
    i = rng.randrange(1, len(lines) + 1) if lines else 0
    if rng.random() < 0.5 or not lines:
        lines.insert(i, deep_json(depth, kind))
    else:
        picked = _pick_json_line(rng, data)
        if picked is None:
            return data
        lines, ends, j, obj = picked
        paths = json_paths(obj)
        path = rng.choice(paths)
        marker = "__DEEP__"
        raw = dump_json(set_path(obj, path, marker))
        lines[j] = raw.replace(b'"__DEEP__"', deep_json(depth, kind), 1)
    return join_lines(lines, ends)


def m_hostile_text(rng: random.Random, data: bytes) -> bytes:
    """Put escape sequences and markup into a string field (text, ids, types, names)."""
    picked = _pick_json_line(rng, data)
    if picked is None:
        return data
    lines, ends, i, obj = picked
    strings = [p for p in json_paths(obj) if p and get_path(obj, p).__class__ is str]
    if not strings:
        return data
    p = rng.choice(strings)
    lines[i] = dump_json(set_path(obj, p, get_path(obj, p) + rng.choice(HOSTILE_TEXTS)))
    return join_lines(lines, ends)


def get_path(value: Any, path: tuple) -> Any:
    for k in path:
        value = value[k]
    return value


def m_foreign_line(rng: random.Random, data: bytes) -> bytes:
    """Insert a line that is valid JSON but not an object, or an object of a strange kind."""
    lines, ends = split_lines(data)
    junk = rng.choice(
        [
            b"null",
            b"1",
            b"[]",
            b'"str"',
            b"true",
            b"{}",
            b"-0",
            b"1e999",
            b"NaN",
            b"Infinity",
            b'{"type":"session","version":0,"id":"again","createdAt":1}',
            b'{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,2],"texts":["a"]}}',
            b'{"type":"tool-call-chunks","seq0":5,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":7,"dt":[],"args":["{"]}}',
            b'{"type":"text-chunks","seq0":9007199254740991,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}',
            b'{"a":1,"a":2}',
            b"\xef\xbb\xbf{}",
            '{"type":"\u2028"}'.encode(),
        ]
    )
    lines.insert(rng.randrange(len(lines) + 1), junk)
    return join_lines(lines, ends)


def m_splice_seeds(rng: random.Random, data: bytes) -> bytes:
    """Concatenate the log with a copy of itself (duplicated header, seqs restart)."""
    lines, ends = split_lines(data)
    cut = rng.randrange(len(lines) + 1)
    return join_lines(lines + lines[:cut], ends)


MUTATORS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "truncate": m_truncate,
    "bitflip": m_bitflip,
    "bad-utf8": m_bad_utf8,
    "nul": m_nul,
    "blank-lines": m_blank_lines,
    "dup-line": m_dup_line,
    "delete-line": m_delete_line,
    "swap-lines": m_swap_lines,
    "shuffle-block": m_shuffle_block,
    "crlf": m_crlf,
    "wrong-type": m_wrong_type,
    "drop-key": m_drop_key,
    "numbers": m_numbers,
    "surface-replace": m_surface_replace,
    "delta-arms": m_delta_arms,
    "deep-nesting": m_deep_nesting,
    "hostile-text": m_hostile_text,
    "foreign-line": m_foreign_line,
    "splice": m_splice_seeds,
}
# Mutators a case may stack (the expensive deep one at most once).
STACKABLE = [k for k in MUTATORS if k not in ("deep-nesting", "crlf", "splice")]


def mutate(rng: random.Random, data: bytes, names: list[str]) -> bytes:
    for name in names:
        data = MUTATORS[name](rng, data)
    return data


def capture_mutate(rng: random.Random, data: bytes) -> bytes:
    """Damage a capture: lines that are not objects, wrong types, bad logLength/sessionId/sessionFile."""
    lines, ends = split_lines(data)
    choice = rng.randrange(6)
    if choice == 0:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"[]", b"1", b"null", b'"request"', b"[{}]", b"true"]))
    elif choice == 1 and lines:
        i = rng.randrange(len(lines))
        try:
            obj = orjson.loads(lines[i])
        except orjson.JSONDecodeError:
            return data
        if isinstance(obj, dict):
            key = rng.choice(
                ["sessionId", "sessionFile", "logLength", "turn", "step", "loopBuilt", "request", "time", "verdict"]
            )
            obj[key] = rng.choice(
                WRONG_VALUES + SEQ_VALUES + ["../" * 8 + "etc/passwd", "/etc/passwd", "..", "sub/../x.jsonl"]
            )
            lines[i] = dump_json(obj)
    elif choice == 2:
        return m_wrong_type(rng, data)
    elif choice == 3:
        return m_truncate(rng, data)
    elif choice == 4:
        return m_deep_nesting(rng, data)
    else:
        return m_bitflip(rng, data)
    return join_lines(lines, ends)
