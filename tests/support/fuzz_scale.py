"""Scale families: inputs that grow in one dimension, for the long run's --scale mode."""

from __future__ import annotations

from tests.support.fuzz_inputs import deep_json, to_zstd
from tests.support.fuzz_mutators import dump_json

# Each builds (files, target) for a size n.  The long run's --scale mode checks that
# time and memory grow no faster than the input (a quadratic path shows at 4x).


def _log_files(log, capture: list | None = None, name: str = "s1.jsonl") -> dict[str, bytes]:
    files = {name: b"\n".join(log.lines()) + b"\n"}
    if capture is not None:
        files["requests.jsonl"] = b"".join(dump_json(c) + b"\n" for c in capture)
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
