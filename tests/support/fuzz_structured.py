"""Structured hostile logs: the event vocabulary, any field of the wrong kind, to reach the deep code."""

from __future__ import annotations

import random
from typing import Any

from tests.support.fuzz_cases import FORMATS, Case
from tests.support.fuzz_inputs import HOSTILE_TEXTS
from tests.support.fuzz_mutators import dump_json

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
        files["p1.jsonl"] = b"\n".join([dump_json(parent)] + [dump_json(e) for e in events]) + b"\n"
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
    body = [dump_json(header)] + [dump_json(e) for e in events]
    if rng.random() < 0.3:
        from invariants.read.chunk_rows import pack_events

        body = [body[0]] + [dump_json(e) for e in pack_events(events)]
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
        reqs.append(dump_json(line))
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
