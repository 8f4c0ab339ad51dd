"""Fuzz material: hostile texts and values, the seed logs mutated, and zstd framing of a log."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
