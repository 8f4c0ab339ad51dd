"""Hostile-input fuzzing: seeds, mutators, hypothesis strategies and the case runner.

Shared by the CI slice (``tests/test_fuzz*.py``) and the long run
(``benchmarks/fuzz_long.py``).  A *case* is a small folder of files (a log,
maybe a capture beside it) plus the command line that checks it.  The runner
drives the real CLI in-process (``inspector.cli.main``), with a hang guard,
and :func:`verdict` says whether the outcome keeps the promises of
SECURITY.md: exit 0, 1 or 2; no traceback; no raw terminal control bytes in
text output; findings that name their file (and a line where one exists);
time proportional to the input size.

Failure modes are named by :func:`failure_mode` from the exception type and
the innermost frame in our code, so a long run can count *distinct* bugs
rather than cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
CORPUS = ROOT.parent / "shared" / "corpus"

# -- hostile material ------------------------------------------------------------

OSC52 = "\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07"
HOSTILE_TEXTS = [
    OSC52,
    "\x1b[2J\x1b[H",  # clear screen, cursor home
    "\x1b]0;pwned title\x1b\\",  # set window title, ST-terminated
    "\x07\x07bell",
    "[bold]markup[/bold]",
    "[link=https://evil.example]click[/link]",
    "[/]",  # closing tag with nothing open: MarkupError if interpreted
    "[@click=app.quit]x[/]",  # Textual action markup
    "\x9b31m",  # 8-bit CSI
    "\u202eevil\u202c",  # bidi override
    "\ud800",  # lone surrogate (only reachable through json escapes)
    "\x00nul",
    "line\r\nbreak\rreturn",
    "{{system}}",
]

# Values of every JSON kind (and some that are only nearly JSON-safe), to put
# where a field of another type is expected.
WRONG_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    -(2**53),
    2**53,
    2**64,
    10**30,
    -(10**30),
    0.5,
    -0.0,
    1e308,
    1.0,
    "",
    "x",
    "..",
    "/etc/passwd",
    "../../../etc/passwd",
    "append",
    "replace",
    OSC52,
    "[bold]x[/bold]",
    [],
    [None],
    [1, "a"],
    [[]],
    {},
    {"op": "replace"},
    {"a": {"b": {"c": []}}},
    {"type": 1},
    {"op": "replace", "start": -1, "end": 2**60},
    {"op": "replace", "start": "0", "end": 1},
]

SEQ_VALUES: list[Any] = [-1, -(2**63), 2**53, 2**53 - 1, 2**64, 10**400, 1.5, 3.0, "3", None, True, [], {}]


def deep_json(depth: int, kind: str = "array") -> bytes:
    """A JSON value nested ``depth`` levels deep."""
    if kind == "array":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


# -- seeds --------------------------------------------------------------------------


@dataclass
class Seed:
    """A log to mutate, with the capture that sits beside it (if any)."""

    name: str
    log: bytes
    log_name: str = "s.jsonl"
    capture: bytes | None = None
    others: dict[str, bytes] = field(default_factory=dict)  # extra files in the folder (fork parent)


def sample_seeds() -> list[Seed]:
    """The sample logs (seed era) with their captures, the fork pair, and late-era variants."""
    out: list[Seed] = []
    for log in sorted(SAMPLES.glob("*.jsonl")):
        if log.name.endswith(".requests.jsonl"):
            continue
        cap = log.with_name(log.name[: -len(".jsonl")] + ".requests.jsonl")
        out.append(Seed(log.stem, log.read_bytes(), log.name, cap.read_bytes() if cap.exists() else None))
    fork = SAMPLES / "fork"
    if fork.is_dir():
        logs = sorted(p for p in fork.glob("*.jsonl") if p.name != "requests.jsonl")
        if len(logs) == 2:
            child = [p for p in logs if b"parentSession" in p.read_bytes().split(b"\n", 1)[0]]
            if child:
                parent = [p for p in logs if p != child[0]][0]
                req = fork / "requests.jsonl"
                out.append(
                    Seed(
                        "fork-child",
                        child[0].read_bytes(),
                        child[0].name,
                        None,
                        {parent.name: parent.read_bytes(), "requests.jsonl": req.read_bytes() if req.exists() else b""},
                    )
                )
    out.append(packed_seed(out[0]) if out else None)
    return [s for s in out if s is not None]


def packed_seed(seed: Seed) -> Seed:
    """A late-era shape of a seed: chunk runs packed into chunk rows."""
    from invariants.read.chunk_rows import pack_events

    lines = seed.log.rstrip(b"\n").split(b"\n")
    events = [orjson.loads(x) for x in lines[1:]]
    packed = pack_events(events)
    body = b"\n".join([lines[0]] + [orjson.dumps(e) for e in packed]) + b"\n"
    return Seed(seed.name + "-packed", body, seed.log_name, seed.capture)


def corpus_seeds(limit: int = 12, max_bytes: int = 40_000) -> list[Seed]:
    """Small late-era logs from the conformance corpus, when it is present."""
    folder = CORPUS / "fixtures-late-era"
    if not folder.is_dir():
        return []
    files = sorted(p for p in folder.glob("*.jsonl") if p.stat().st_size <= max_bytes)
    step = max(1, len(files) // limit)
    return [Seed("corpus:" + p.stem, p.read_bytes(), "session.jsonl") for p in files[::step][:limit]]


# -- zstd ---------------------------------------------------------------------------


def to_zstd(data: bytes, batch: int = 7) -> bytes:
    """Frame a plain log the harness way: header line alone, then batches of lines."""
    from invariants.read.zstdio import write_frames

    lines = data.split(b"\n")
    tail = lines.pop()  # b"" for a file that ends in a newline
    batches = [lines[0] + b"\n"] if lines else []
    rest = lines[1:]
    for i in range(0, len(rest), batch):
        batches.append(b"".join(x + b"\n" for x in rest[i : i + batch]))
    if tail:
        batches.append(tail)
    buf = io.BytesIO()
    write_frames(buf, batches)
    return buf.getvalue()


_BOMB: list[bytes] = []


def zstd_bomb() -> bytes:
    """One checksummed frame of ~60 KB that expands to 2 GiB (computed once)."""
    if not _BOMB:
        import zstandard

        w = zstandard.ZstdCompressor(level=1, write_checksum=True).compressobj()
        chunk = b"a" * (1 << 24)
        _BOMB.append(b"".join([*(w.compress(chunk) for _ in range(128)), w.compress(b"\n"), w.flush()]))
    return _BOMB[0]


# -- mutators -----------------------------------------------------------------------
# Each takes (rng, data) and returns new bytes.  They work on the log's bytes
# or on its lines; the JSON-level ones parse one line and damage one field.


def _lines(data: bytes) -> tuple[list[bytes], bool]:
    ends = data.endswith(b"\n")
    lines = data.split(b"\n")
    if ends:
        lines.pop()
    return lines, ends


def _join(lines: list[bytes], ends: bool = True) -> bytes:
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
    lines, ends = _lines(data)
    i = rng.randrange(len(lines) + 1)
    lines[i:i] = [rng.choice((b"", b" ", b"\r", b"\t \t"))] * rng.choice((1, 2))
    return _join(lines, ends)


def m_dup_line(rng: random.Random, data: bytes) -> bytes:
    lines, ends = _lines(data)
    if not lines:
        return data
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return _join(lines, ends)


def m_delete_line(rng: random.Random, data: bytes) -> bytes:
    lines, ends = _lines(data)
    if not lines:
        return data
    del lines[rng.randrange(len(lines))]
    return _join(lines, ends)


def m_swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines, ends = _lines(data)
    if len(lines) < 2:
        return data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return _join(lines, ends)


def m_shuffle_block(rng: random.Random, data: bytes) -> bytes:
    lines, ends = _lines(data)
    if len(lines) < 3:
        return data
    i = rng.randrange(len(lines) - 1)
    j = min(len(lines), i + rng.randrange(2, 12))
    block = lines[i:j]
    rng.shuffle(block)
    lines[i:j] = block
    return _join(lines, ends)


def m_crlf(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _json_paths(value: Any, prefix: tuple = (), depth: int = 0, out: list | None = None) -> list[tuple]:
    out = [] if out is None else out
    out.append(prefix)
    if depth > 8:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            _json_paths(v, prefix + (k,), depth + 1, out)
    elif isinstance(value, list):
        for i, v in enumerate(value[:6]):
            _json_paths(v, prefix + (i,), depth + 1, out)
    return out


def _set_path(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    parent = value
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = new
    return value


def _dump(value: Any) -> bytes:
    """JSON bytes for any value we build, including >64-bit ints and lone surrogates."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def _pick_json_line(rng: random.Random, data: bytes) -> tuple[list[bytes], bool, int, Any] | None:
    lines, ends = _lines(data)
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
    path = rng.choice(_json_paths(obj))
    value = rng.choice(WRONG_VALUES + [rng.choice(HOSTILE_TEXTS)])
    lines[i] = _dump(_set_path(obj, path, value))
    return _join(lines, ends)


def m_drop_key(rng: random.Random, data: bytes) -> bytes:
    picked = _pick_json_line(rng, data)
    if picked is None:
        return data
    lines, ends, i, obj = picked
    paths = [p for p in _json_paths(obj) if p]
    if not paths:
        return data
    path = rng.choice(paths)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    del parent[path[-1]]
    lines[i] = _dump(obj)
    return _join(lines, ends)


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
    paths = [p for p in _json_paths(obj) if p and p[-1] in keys]
    if not paths:
        return data
    lines[i] = _dump(_set_path(obj, rng.choice(paths), rng.choice(SEQ_VALUES)))
    return _join(lines, ends)


def m_surface_replace(rng: random.Random, data: bytes) -> bytes:
    """Turn one surface event into a replace whose range points nowhere (or backwards)."""
    lines, ends = _lines(data)
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
    lines[i] = _dump(obj)
    return _join(lines, ends)


def m_delta_arms(rng: random.Random, data: bytes) -> bytes:
    """Give a request/header-delta (or snapshot) arms of the wrong shape."""
    lines, ends = _lines(data)
    cands = [i for i, x in enumerate(lines) if b'"request/header' in x]
    if not cands:
        # make one: insert a delta after a step/start
        starts = [i for i, x in enumerate(lines) if b'"step/start"' in x]
        if not starts:
            return data
        i = rng.choice(starts)
        seq = _seq_of(lines[i])
        lines.insert(i + 1, _dump({"type": "request/header-delta", "seq": seq + 1, "time": 0, "data": {}}))
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
    lines[i] = _dump(obj)
    return _join(lines, ends)


def _seq_of(line: bytes) -> int:
    try:
        v = orjson.loads(line).get("seq")
        return v if isinstance(v, int) else 0
    except Exception:
        return 0


def m_deep_nesting(rng: random.Random, data: bytes) -> bytes:
    """A line (or a field) nested far beyond any parser's recursion limit, or just under it."""
    lines, ends = _lines(data)
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
        paths = _json_paths(obj)
        path = rng.choice(paths)
        marker = "__DEEP__"
        raw = _dump(_set_path(obj, path, marker))
        lines[j] = raw.replace(b'"__DEEP__"', deep_json(depth, kind), 1)
    return _join(lines, ends)


def m_hostile_text(rng: random.Random, data: bytes) -> bytes:
    """Put escape sequences and markup into a string field (text, ids, types, names)."""
    picked = _pick_json_line(rng, data)
    if picked is None:
        return data
    lines, ends, i, obj = picked
    strings = [p for p in _json_paths(obj) if p and _get(obj, p).__class__ is str]
    if not strings:
        return data
    p = rng.choice(strings)
    lines[i] = _dump(_set_path(obj, p, _get(obj, p) + rng.choice(HOSTILE_TEXTS)))
    return _join(lines, ends)


def _get(value: Any, path: tuple) -> Any:
    for k in path:
        value = value[k]
    return value


def m_foreign_line(rng: random.Random, data: bytes) -> bytes:
    """Insert a line that is valid JSON but not an object, or an object of a strange kind."""
    lines, ends = _lines(data)
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
    return _join(lines, ends)


def m_splice_seeds(rng: random.Random, data: bytes) -> bytes:
    """Concatenate the log with a copy of itself (duplicated header, seqs restart)."""
    lines, ends = _lines(data)
    cut = rng.randrange(len(lines) + 1)
    return _join(lines + lines[:cut], ends)


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
    lines, ends = _lines(data)
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
            lines[i] = _dump(obj)
    elif choice == 2:
        return m_wrong_type(rng, data)
    elif choice == 3:
        return m_truncate(rng, data)
    elif choice == 4:
        return m_deep_nesting(rng, data)
    else:
        return m_bitflip(rng, data)
    return _join(lines, ends)


# -- running a case ---------------------------------------------------------------


class Hang(BaseException):
    """Raised by the hang guard (a BaseException, so no ``except Exception`` in the tool swallows it)."""


@contextlib.contextmanager
def hang_guard(seconds: float):
    """Interrupt the block after ``seconds`` (main thread only; a no-op elsewhere)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"no answer within {seconds:.1f}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def time_budget(nbytes: int) -> float:
    """Generous: a fixed allowance plus 2 s per MB (the checker does ~50 MB/s)."""
    return 10.0 + 2.0 * nbytes / 1_000_000


@dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    seconds: float
    exc: BaseException | None = None
    tb: str = ""


def run_cli(argv: list[str], budget: float) -> Outcome:
    """``inspector.cli.main(argv)`` in-process: its exit code, stdout, stderr; never raises."""
    from inspector.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    exc: BaseException | None = None
    tb = ""
    t0 = time.perf_counter()
    try:
        with hang_guard(budget), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException as e:  # every escape is a failure mode to report
        if isinstance(e, KeyboardInterrupt):
            raise
        exc, tb = e, traceback.format_exc()
    return Outcome(code, out.getvalue(), err.getvalue(), time.perf_counter() - t0, exc, tb)


def check_flags() -> list[str]:
    """Flags that keep a fuzz run hermetic: no config file, no result cache (when the CLI has them)."""
    from inspector.cli import build_parser

    text = build_parser()._subparsers._group_actions[0].choices["check"].format_help()
    return [f for f in ("--no-cache", "--isolated") if f in text]


_ESC_BYTES = ("\x1b", "\x07", "\x9b", "\x9d", "\x90", "\x00", "\u202e", "\u2066")  # + bidi overrides (display spoofing)


def verdict(outcome: Outcome, fmt: str, inputs: list[Path], budget: float) -> str | None:
    """None when the outcome keeps the promises; else a short description of the broken one."""
    if outcome.exc is not None:
        return f"exception: {failure_mode(outcome.exc)}"
    if outcome.code not in (0, 1, 2):
        return f"exit code {outcome.code!r}"
    if "Traceback" in outcome.err or "Traceback" in outcome.out:
        return "traceback printed"
    if outcome.seconds > budget:
        return f"slow: {outcome.seconds:.1f}s > {budget:.1f}s"
    for stream, text in (("stdout", outcome.out), ("stderr", outcome.err)):
        bad = [c for c in _ESC_BYTES if c in text]
        if bad:
            return f"raw control byte(s) {bad!r} on {stream} ({fmt})"
    if outcome.code == 2:
        names = [str(p) for p in inputs]
        if not outcome.err.strip():
            return "exit 2 without a message"
        if not any(n in outcome.err for n in names) and "inspector: error" not in outcome.err:
            return "exit 2 message names no input"
    if fmt == "json" and outcome.out.strip():
        try:
            report = json.loads(outcome.out)
        except ValueError as e:
            return f"json report does not parse ({e})"
        for f in report.get("findings", []):
            if not f.get("file"):
                return f"finding {f.get('rule')} names no file"
            if f.get("rule") in LINE_RULES and not isinstance(f.get("line"), int):
                return f"finding {f.get('rule')} names no line"
    return None


# Findings about a physical line: they must carry it.
LINE_RULES = frozenset({"LOG001", "LOG002", "LOG003", "LOG008", "LOG012", "LOG013"})


def failure_mode(exc: BaseException) -> str:
    """A stable name for a failure: exception type at the innermost frame of our code."""
    if isinstance(exc, Hang):
        return "Hang"
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if ("/invariants/" in f.filename or "/inspector/" in f.filename)]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    loc = f"{Path(where.filename).parent.name}/{Path(where.filename).name}:{where.name}" if where else "?"
    return f"{type(exc).__name__} at {loc}"


@dataclass
class Case:
    """Files to write in a fresh folder, and which of them to name on the command line."""

    files: dict[str, bytes]
    target: str  # the file (or "." for the folder) to check
    fmt: str = "json"
    command: str = "check"
    extra: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.files.values())


def write_case(case: Case, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return folder / case.target if case.target != "." else folder


def argv_for(case: Case, target: Path, flags: list[str]) -> list[str]:
    if case.command == "replay":
        return ["replay", str(target), *case.extra]
    if case.command == "reduce":
        return ["reduce", str(target), "--rule", "RULE", "--output", "repro"]
    return ["check", str(target), "--format", case.fmt, *flags, *case.extra]


INDEX_QUERIES = [
    "select * from sessions",
    "select * from findings",
    "select * from messages limit 50",
    "select * from steps limit 50",
    "select * from headers limit 20",
    "select * from captures",
]


def run_case(case: Case, folder: Path, flags: list[str] | None = None) -> tuple[Outcome, str | None]:
    """Write the case under ``folder``, run it, and judge it.

    ``index`` cases run the postmortem index over the folder (the database
    outside it), then read it back with ``sessions``, ``query`` and
    ``cache-report``; each command is judged on its own.
    """
    if case.command == "reduce" or (case.extra and case.extra[0].startswith("fault:")):
        from tests.support.fuzz_faults import run_fault_case, run_reduce  # reduce and the fault kinds (issue 34)

        return run_reduce(case, folder) if case.command == "reduce" else run_fault_case(case, folder)
    target = write_case(case, folder / "in")
    budget = time_budget(case.size)
    if case.command == "index":
        db = folder / "index" / "x.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        runs = [
            (["index", str(target), "--db", str(db), "-j", "1", "-q"], "text"),
            (["sessions", "--db", str(db)], "text"),
            (["sessions", "--db", str(db), "--format", "json"], "json-any"),
        ]
        runs += [
            (["query", q, "--db", str(db), "--format", case.fmt if case.fmt in ("json",) else "table"], "text")
            for q in INDEX_QUERIES
        ]
        runs += [(["cache-report", str(target)], "text")]
        for argv, fmt in runs:
            outcome = run_cli(argv, budget * 1.5)
            bad = verdict(outcome, fmt, [target, db], budget)
            if bad is not None:
                return outcome, f"{argv[0]}: {bad}"
        return outcome, None
    outcome = run_cli(argv_for(case, target, check_flags() if flags is None else flags), budget * 1.5)
    fmt = case.fmt if case.command == "check" else "replay"
    return outcome, verdict(outcome, fmt, [target], budget)


FORMATS = ("json", "text", "jsonl", "sarif", "junit", "github")
# File names an attacker controls in a sessions root (the last one is two undecodable bytes).
HOSTILE_NAMES = [
    "\x1b]52;c;ZXZpbA==\x07",
    "a\nb\rc",
    "[bold]x[/bold]",
    "\x1b[2J",
    "\u202eevil",
    "-rf",
    "..x",
    "\udcff\udcfe",
]


def _shape(line_obj: Any, path: tuple) -> tuple:
    t = line_obj.get("type") if isinstance(line_obj, dict) else None
    return (t if isinstance(t, str) else "?",) + tuple("[]" if isinstance(k, int) else k for k in path)


def sweep_points(seeds: list[Seed]) -> list[tuple[int, int, tuple]]:
    """Every distinct (event type, field path) of the seed logs, once: (seed index, line index, path).

    Paths whose list indices differ count as one field (``content[0].text`` is ``content[].text``).
    """
    seen: set[tuple] = set()
    out: list[tuple[int, int, tuple]] = []
    for si, seed in enumerate(seeds):
        lines, _ = _lines(seed.log)
        for li, line in enumerate(lines):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for path in _json_paths(obj):
                key = _shape(obj, path)
                if key not in seen:
                    seen.add(key)
                    out.append((si, li, path))
    return out


SWEEP_VALUES: list[Any] = WRONG_VALUES + [v for v in SEQ_VALUES if v not in WRONG_VALUES]


def sweep_case(seeds: list[Seed], point: tuple[int, int, tuple], value_index: int) -> tuple[Case, list[str]]:
    """The seed log with one field replaced by ``SWEEP_VALUES[value_index]`` (or the key removed, at len)."""
    si, li, path = point
    seed = seeds[si]
    lines, ends = _lines(seed.log)
    obj = orjson.loads(lines[li])
    if value_index == len(SWEEP_VALUES):
        if not path:
            return Case({seed.log_name: seed.log}, seed.log_name), ["sweep"]
        parent = _get(obj, path[:-1])
        del parent[path[-1]]
    else:
        obj = _set_path(obj, path, SWEEP_VALUES[value_index])
    lines[li] = _dump(obj)
    files = dict(seed.others)
    files[seed.log_name] = _join(lines, ends)
    if seed.capture is not None:
        files[seed.log_name.split(".jsonl")[0] + ".requests.jsonl"] = seed.capture
    fmt = FORMATS[(li + value_index) % len(FORMATS)]
    return Case(files, seed.log_name, fmt), ["sweep"]


def sweep_size(points: list) -> int:
    return len(points) * (len(SWEEP_VALUES) + 1)


def sweep_case_at(seeds: list[Seed], points: list, i: int) -> tuple[Case, list[str]]:
    return sweep_case(seeds, points[i // (len(SWEEP_VALUES) + 1)], i % (len(SWEEP_VALUES) + 1))


def sqlite_bytes(events_header: dict, events: list, schema: str) -> bytes:
    """A harness SQLite session database holding one session, as bytes."""
    import tempfile

    from invariants.read.sqlite_backend import write_database

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.sqlite"
        write_database(path, [(events_header, events)], schema=schema)
        return path.read_bytes()


def sqlite_case(rng: random.Random, seeds: list[Seed]) -> tuple[Case, list[str]]:
    """A SQLite session store built from a seed log, then damaged: rows with wrong types, or bytes."""
    seed = rng.choice([s for s in seeds if not s.name.startswith("corpus:")] or seeds)
    lines = []
    for x in seed.log.split(b"\n"):
        try:
            lines.append(orjson.loads(x))
        except orjson.JSONDecodeError:
            pass
    header, events = lines[0], [e for e in lines[1:] if isinstance(e, dict) and isinstance(e.get("seq"), int)]
    names = ["sqlite"]
    if rng.random() < 0.5:  # damage the events before storing them (types the columns do not expect)
        for _ in range(rng.randrange(1, 4)):
            if events:
                e = rng.choice(events)
                e[rng.choice(["data", "surfaceOp", "sourceEventSeqs", "type", "time"])] = rng.choice(WRONG_VALUES)
        names.append("sqlite-rows")
    try:
        data = sqlite_bytes(header, events, rng.choice(["seed", "head"]))
    except Exception:  # the writer refuses what it cannot store: store the header alone
        data = sqlite_bytes(header, [], "seed")
    if rng.random() < 0.5:
        data = rng.choice([m_truncate, m_bitflip, m_nul])(rng, data)
        names.append("sqlite-bytes")
    return Case({"s.sqlite": data}, rng.choice(["s.sqlite", "."]), rng.choice(FORMATS)), names


def random_case(rng: random.Random, seeds: list[Seed], max_stack: int = 3) -> tuple[Case, list[str]]:
    """One mutated case from a random seed: the mutators applied, and the case."""
    if rng.random() < 0.04:
        return sqlite_case(rng, seeds)
    seed = rng.choice(seeds)
    names = [rng.choice(STACKABLE) for _ in range(rng.randrange(1, max_stack + 1))]
    if rng.random() < 0.08:
        names.append(rng.choice(("deep-nesting", "crlf", "splice")))
    log = mutate(rng, seed.log, names)
    files = dict(seed.others)
    cap = seed.capture
    if cap is not None and rng.random() < 0.3:
        cap = capture_mutate(rng, cap)
        names.append("capture")
    log_name = seed.log_name
    if rng.random() < 0.15:
        log = to_zstd(log)
        log_name = log_name + ".zstd"
        names.append("zstd")
        if rng.random() < 0.6:
            log = rng.choice([m_truncate, m_bitflip, m_nul])(rng, log)
            names.append("zstd-damage")
        elif rng.random() < 0.2:
            log += zstd_bomb()
            names.append("zstd-bomb")
    if rng.random() < 0.05:
        log_name = rng.choice(HOSTILE_NAMES) + log_name[log_name.index(".jsonl") :]
        names.append("hostile-name")
    files[log_name] = log
    if cap is not None:
        files[log_name.split(".jsonl")[0] + ".requests.jsonl"] = cap
    r = rng.random()
    command = "replay" if r < 0.08 else "index" if r < 0.14 else "reduce" if r < 0.20 else "check"
    extra: list[str] = []
    if command != "check":
        names.append(command)
    if command == "replay" and rng.random() < 0.5:
        extra = ["--turn", str(rng.randrange(1, 4)), "--step", "1"]
    target = "." if command == "index" else log_name if rng.random() < 0.8 or command != "check" else "."
    return Case(files, target, rng.choice(FORMATS), command, extra), names


# -- structured hostile logs ----------------------------------------------------------
# Mutating real logs mostly breaks them early; these logs follow the event
# vocabulary closely enough to reach the deep code (header fold and delta
# apply, surface replaces, projections, request rebuild and comparison, fork
# seeds) while any field may hold a value of the wrong kind.

_KEYS = [
    "turn",
    "step",
    "content",
    "text",
    "type",
    "role",
    "callId",
    "name",
    "arguments",
    "isError",
    "header",
    "reason",
    "config",
    "system",
    "tools",
    "messagePrefix",
    "messageSuffix",
    "model",
    "keepStart",
    "keepEnd",
    "insert",
    "added",
    "removed",
    "changed",
    "parameters",
    "chunk",
    "index",
    "usage",
    "source",
    "kind",
    "message",
    "id",
    "envelope",
    "trigger",
    "error",
    "code",
    "adapterDefaults",
    "provider",
    "reasoningEffort",
    "temperature",
    "stop",
    "toolCallId",
]


def rand_json(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value (and the awkward ones: >64-bit ints, -0.0, lone surrogates, escapes, markup)."""
    r = rng.random()
    if depth > 4 or r < 0.45:
        return rng.choice(
            [
                None,
                True,
                False,
                0,
                1,
                -1,
                2,
                2**53,
                2**64 + 1,
                -0.0,
                1.5,
                1e300,
                "",
                "x",
                "initial",
                "resume",
                "fallback",
                "append",
                "text",
                "m1",
                "{{system}}",
                "{{tools}}",
                rng.choice(HOSTILE_TEXTS),
                "a\nb\nc",
                rng.randrange(-3, 12),
            ]
        )
    if r < 0.7:
        return [rand_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(_KEYS): rand_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def _maybe(rng: random.Random, good: Any, p: float = 0.12) -> Any:
    return rand_json(rng) if rng.random() < p else good


def _content(rng: random.Random) -> Any:
    return _maybe(rng, [{"type": "text", "text": _maybe(rng, rng.choice(["hi", "ok", rng.choice(HOSTILE_TEXTS)]))}])


def _header(rng: random.Random) -> Any:
    tools = [
        {"name": _maybe(rng, n), "description": "d", "parameters": _maybe(rng, {"type": "object"})}
        for n in rng.sample(["a", "b", "c", "d"], rng.randrange(4))
    ]
    h = {
        "config": _maybe(
            rng,
            {
                "model": "m1",
                **({"temperature": 0.5} if rng.random() < 0.3 else {}),
                **({"provider": "p", "reasoningEffort": "high"} if rng.random() < 0.2 else {}),
            },
        ),
        "system": _maybe(rng, rng.choice(["line A\nline B", "S", "{{system}}", ""])),
        "tools": _maybe(rng, tools if rng.random() < 0.9 else "{{tools}}"),
    }
    if rng.random() < 0.4:
        h["messagePrefix"] = _maybe(rng, [{"role": "user", "content": [{"type": "text", "text": "p"}]}])
    if rng.random() < 0.2:
        h["messageSuffix"] = _maybe(rng, [])
    if rng.random() < 0.1:
        h["adapterDefaults"] = _maybe(rng, {"maxTokens": True})
    return _maybe(rng, h, 0.05)


def _delta(rng: random.Random) -> Any:
    d: dict = {}
    if rng.random() < 0.5:
        d["system"] = _maybe(
            rng,
            {
                "keepStart": _maybe(rng, rng.randrange(3)),
                "keepEnd": _maybe(rng, rng.randrange(3)),
                "insert": _maybe(rng, ["x"]),
            },
        )
    if rng.random() < 0.5:
        d["tools"] = _maybe(
            rng,
            {
                "added": _maybe(rng, [{"name": rng.choice("abce")}]),
                "removed": _maybe(rng, [rng.choice("abcz")]),
                "changed": _maybe(rng, []),
            },
        )
    if rng.random() < 0.3:
        d["config"] = _maybe(rng, {"model": "m2"})
    for k in ("messagePrefix", "messageSuffix"):
        if rng.random() < 0.2:
            d[k] = _maybe(rng, [])
    if rng.random() < 0.1:
        d[rng.choice(_KEYS)] = rand_json(rng)
    return _maybe(rng, d, 0.05)


def structured_events(rng: random.Random, n: int | None = None) -> list[dict]:
    """A plausible session with hostile values sprinkled in (seq contiguous unless a number is damaged)."""
    n = n if n is not None else rng.randrange(5, 80)
    events: list[dict] = []
    turn, step = 0, 0
    surface: list[int] = []
    calls: list[Any] = []

    def add(t: str, data: Any, **extra: Any) -> None:
        ev = {"type": t, "seq": len(events), "time": 1_000 + len(events), "data": data, **extra}
        if rng.random() < 0.03:
            ev[rng.choice(["seq", "time", "type", "surfaceOp", "sourceEventSeqs", "ignorable"])] = rand_json(rng)
        if (
            t in ("user/message", "assistant/message", "tool/result", "context/message", "steering/message")
            and "surfaceOp" in ev
            and type(ev["seq"]) is int
            and 0 <= ev["seq"] < 10**6
        ):
            surface.append(ev["seq"])
        events.append(ev)

    while len(events) < n:
        r = rng.random()
        if turn == 0 or r < 0.08:
            turn += 1
            step = 0
            add("turn/start", {"turn": _maybe(rng, turn), "trigger": {"kind": "message", "source": {"kind": "user"}}})
            add("user/message", {"content": _content(rng), "source": {"kind": "user"}}, surfaceOp="append")
        elif r < 0.35:
            step += 1
            add("step/start", {"turn": _maybe(rng, turn), "step": _maybe(rng, step)})
            if rng.random() < 0.7:
                if rng.random() < 0.7 or not events:
                    add(
                        "request/header",
                        {
                            "header": _header(rng),
                            "reason": _maybe(rng, rng.choice(["initial", "resume", "fallback", "change"])),
                        },
                    )
                else:
                    add("request/header-delta", _delta(rng))
            for _ in range(rng.randrange(0, 5)):
                ch = rng.choice(
                    [
                        {"type": "text-delta", "index": 0, "text": "t"},
                        {"type": "usage", "usage": _maybe(rng, {"inputTokens": 1})},
                        {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": "{"},
                    ]
                )
                add(
                    "assistant/chunk",
                    {"turn": _maybe(rng, turn, 0.05), "step": _maybe(rng, step, 0.05), "chunk": _maybe(rng, ch, 0.05)},
                )
            src = [events[-1]["seq"]] if rng.random() < 0.5 else _maybe(rng, [])
            add(
                "assistant/message",
                {"turn": turn, "step": step, "content": _content(rng)},
                surfaceOp="append",
                sourceEventSeqs=src,
            )
            if rng.random() < 0.4:
                cid = _maybe(rng, f"call{len(events)}")
                calls.append(cid)
                add("tool/call", {"turn": turn, "step": step, "callId": cid, "name": "read", "arguments": "{}"})
                add(
                    "tool/result",
                    {
                        "turn": turn,
                        "step": _maybe(rng, step),
                        "callId": _maybe(rng, cid),
                        "content": _content(rng),
                        "isError": _maybe(rng, False),
                    },
                    surfaceOp="append",
                    sourceEventSeqs=[events[-1]["seq"]],
                )
            add("step/end", {"turn": turn, "step": _maybe(rng, step)})
        elif r < 0.45 and surface:
            a, b = sorted(rng.sample(surface, 2)) if len(surface) > 1 else (surface[0], surface[0])
            if rng.random() < 0.3:
                a, b = b + rng.randrange(-2, 5), a - rng.randrange(0, 3)
            add(
                rng.choice(["compaction/summary", "tool/result", "user/message", "context/message"]),
                {"content": _content(rng), "turn": turn, "step": step, "callId": rng.choice(calls) if calls else "x"},
                surfaceOp=_maybe(rng, {"op": "replace", "start": a, "end": b}),
                sourceEventSeqs=_maybe(rng, list(range(a, min(b + 1, a + 50)))),
            )
        elif r < 0.55:
            add(
                "turn/end",
                {
                    "turn": _maybe(rng, turn),
                    "reason": _maybe(rng, rng.choice([{"kind": "completed"}, {"kind": "interrupted"}])),
                },
            )
        elif r < 0.65:
            add(
                rng.choice(["context/message", "steering/message"]),
                {
                    "content": _content(rng),
                    "source": _maybe(rng, {"kind": "hook"}),
                    "envelope": _maybe(rng, "raw", 0.5),
                },
                surfaceOp="append",
            )
        elif r < 0.7:
            add("session/end-seed", _maybe(rng, {}))
        elif r < 0.75:
            add(
                rng.choice(["llm/retry", "todo/write", "x/unknown", "request/context", "compaction/start"]),
                rand_json(rng),
                **({"ignorable": True} if rng.random() < 0.5 else {}),
            )
        else:
            add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return events


def structured_case(rng: random.Random) -> tuple[Case, list[str]]:
    """A structured log (sometimes a forked child with its parent), a capture of its steps, any format."""
    events = structured_events(rng)
    header = {"type": "session", "version": 0, "id": "s1", "createdAt": 1}
    names = ["structured"]
    files: dict[str, bytes] = {}
    if rng.random() < 0.2:  # a fork: the child copies a prefix of the parent
        cut = rng.randrange(len(events) + 1)
        parent = dict(header, id=_maybe(rng, "p1", 0.2))
        files["p1.jsonl"] = b"\n".join([_dump(parent)] + [_dump(e) for e in events]) + b"\n"
        header.update(
            parentSession=_maybe(rng, rng.choice(["p1", "../p1", "/etc/passwd", "..", "p1/../../x"])),
            seedLength=_maybe(rng, cut),
        )
        events = events[:cut] + structured_events(rng, rng.randrange(3, 20))[: rng.randrange(1, 20)]
        for i, e in enumerate(events):
            if isinstance(e, dict) and isinstance(e.get("seq"), int):
                e["seq"] = i
        names.append("fork")
    if rng.random() < 0.1:
        header.update(
            {
                k: rand_json(rng)
                for k in rng.sample(["cwd", "createdAt", "version", "id", "delegationDepth", "origin"], 2)
            }
        )
    body = [_dump(header)] + [_dump(e) for e in events]
    if rng.random() < 0.3:
        from invariants.read.chunk_rows import pack_events

        body = [body[0]] + [_dump(e) for e in pack_events(events)]
        names.append("packed")
    files["s1.jsonl"] = b"\n".join(body) + b"\n"
    reqs = []
    steps = [e for e in events if e.get("type") == "step/start" and "seq" in e]
    for st_ in steps[: rng.randrange(len(steps) + 1)]:
        req = {"model": "m1", "system": "S", "messages": [rand_json(rng) for _ in range(rng.randrange(3))]}
        line = {
            "sessionId": _maybe(rng, "s1"),
            "logLength": _maybe(rng, (st_["seq"] if isinstance(st_["seq"], int) else 0) + rng.randrange(0, 4)),
            "turn": (st_.get("data") or {}).get("turn") if isinstance(st_.get("data"), dict) else None,
            "step": 1,
            "loopBuilt": _maybe(rng, True, 0.05),
            "request": _maybe(rng, req, 0.05),
        }
        if rng.random() < 0.1:
            line["sessionFile"] = rng.choice(["../s1.jsonl", "/etc/passwd", "s1.jsonl", "..", "sub/s1.jsonl"])
        reqs.append(_dump(line))
    if reqs:
        files["requests.jsonl"] = b"\n".join(reqs) + b"\n"
        names.append("capture")
    extra: list[str] = []
    if rng.random() < 0.3:
        from invariants.read.profiles import PROFILES

        extra = ["--profile", rng.choice(sorted(PROFILES))]
        names.append("profile")
    r = rng.random()
    command = "replay" if r < 0.08 else "index" if r < 0.14 else "reduce" if r < 0.20 else "check"
    if command != "check":
        extra = []
        names.append(command)
    target = rng.choice(["s1.jsonl", "."]) if command == "check" else "s1.jsonl" if command == "replay" else "."
    return Case(files, target, rng.choice(FORMATS), command, extra), names


# -- scale families: inputs that grow in one dimension ------------------------------------
# Each builds (files, target) for a size n.  The long run's --scale mode checks that
# time and memory grow no faster than the input (a quadratic path shows at 4x).


def _log_files(log, capture: list | None = None, name: str = "s1.jsonl") -> dict[str, bytes]:
    files = {name: b"\n".join(log.lines()) + b"\n"}
    if capture is not None:
        files["requests.jsonl"] = b"".join(_dump(c) + b"\n" for c in capture)
    return files


def scale_family(name: str, n: int) -> tuple[dict[str, bytes], str]:
    from tests.support.logs import Log

    log = Log()
    log.turn_start(1)
    user = {"content": [{"type": "text", "text": "c"}], "source": {"kind": "user"}}
    if name == "surface-churn":
        last = [log.user(f"m{i}") for i in range(n)][-1]
        for _ in range(n):
            last = log.add(
                "user/message", user, surfaceOp={"op": "replace", "start": last, "end": last}, sourceEventSeqs=[last]
            )
    elif name == "bad-replaces":
        for i in range(n):
            log.user(f"m{i}")
        for _ in range(n):
            log.add("user/message", user, surfaceOp={"op": "replace", "start": 10**9, "end": 10**9})
    elif name == "captures-by-turn":
        for k in range(1, n + 1):
            log.step_start(1, k)
            log.step_end(1, k)
        log.turn_end(1)
        return _log_files(
            log, [{"sessionId": "s1", "turn": 2, "step": k, "request": {"messages": []}} for k in range(n)]
        ), "s1.jsonl"
    elif name == "captures-same-position":
        for _ in range(n):
            log.user("u")
        log.step_start(1, 1)
        log.snapshot()
        log.chunk(1, 1)
        log.step_end(1, 1)
        log.turn_end(1)
        return _log_files(
            log, [{"sessionId": "s1", "logLength": log.seq - 1, "request": {"messages": []}}] * n
        ), "s1.jsonl"
    elif name == "captures-every-step":
        log.turn_end(1)
        caps = []
        for t in range(2, n + 2):
            log.turn_start(t)
            log.user("u")
            log.step_start(t, 1)
            if t == 2:
                log.snapshot()
            c = log.chunk(t, 1)
            caps.append({"sessionId": "s1", "logLength": c, "request": {"messages": []}})
            log.step_end(t, 1)
            log.turn_end(t)
        return _log_files(log, caps), "s1.jsonl"
    elif name == "tool-deltas":
        log.user("u")
        log.step_start(1, 1)
        log.snapshot()
        for k in range(n):
            log.delta(
                {
                    "tools": {
                        "added": [{"name": f"t{k}", "description": "d", "parameters": {}}],
                        "removed": [],
                        "changed": [],
                    }
                }
            )
    elif name == "system-deltas":
        log.user("u")
        log.step_start(1, 1)
        log.snapshot()
        for k in range(n):
            log.delta({"system": {"keepStart": k + 3, "keepEnd": 0, "insert": [f"line {k}"]}})
    elif name == "defects":
        for _ in range(n):
            log.events.append({"raw": True})
        log.turn_end(1)
        lines = log.lines()
        body = [lines[0], lines[1]] + [b"{not json" for _ in range(n)] + [lines[-1]]
        return {"s1.jsonl": b"\n".join(body) + b"\n"}, "s1.jsonl"
    elif name == "findings":
        log.turn_end(1)
        for i in range(n):
            log.add("x/outside", {"i": i})
    elif name == "deep-lines":
        log.turn_end(1)
        body = log.lines() + [
            b'{"type":"x/y","seq":%d,"time":1,"data":%s}' % (log.seq + i, deep_json(500)) for i in range(n // 20)
        ]
        return {"s1.jsonl": b"\n".join(body) + b"\n"}, "s1.jsonl"
    elif name == "zstd-frames":
        for i in range(n):
            log.user(f"m{i}")
        log.turn_end(1)
        return {"s1.jsonl.zstd": to_zstd(b"\n".join(log.lines()) + b"\n", batch=1)}, "s1.jsonl.zstd"
    elif name == "forks-root":
        files = {}
        for i in range(n // 10):
            child = Log(f"c{i}", parentSession=f"missing{i}", seedLength=2)
            child.clean_turn(1, header_reason="initial")
            files[f"cwd-{i:012d}/c{i}.jsonl"] = b"\n".join(child.lines()) + b"\n"
        return files, "."
    else:
        raise KeyError(name)
    log.turn_end(1)
    return _log_files(log), "s1.jsonl"


SCALE_FAMILIES = [
    "surface-churn",
    "bad-replaces",
    "captures-by-turn",
    "captures-same-position",
    "captures-every-step",
    "tool-deltas",
    "system-deltas",
    "defects",
    "findings",
    "deep-lines",
    "zstd-frames",
    "forks-root",
]
