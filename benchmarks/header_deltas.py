"""Do header deltas cost what they change, not the header they change?

A seed-era log whose one step carries a snapshot and then N
``request/header-delta`` events that each add one tool (the header grows by
one tool per delta), at N = 1,500, 6,000 and 12,000; a recorded request
after the last delta makes the check rebuild the final header once.  Prints
for each N the whole-process ``inspector check --no-cache`` CPU time, wall
time and peak RSS (also above the RSS of checking an empty log), and the
growth from one N to the next.  Target: linear, i.e. 4x the deltas cost at
most 6x the time and 4x the memory.

    python benchmarks/header_deltas.py [--sizes 1500,6000,12000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.check_speed import _CHECK, best, child_env  # noqa: E402

T0 = 1_700_000_000_000
TOOL = {"name": "t", "description": "a tool added by a delta", "parameters": {"type": "object", "properties": {}}}


def write_log(folder: Path, n: int) -> Path:
    """The log and its capture (one recorded request after the n-th delta)."""
    folder.mkdir(parents=True, exist_ok=True)
    events: list[dict] = []

    def add(type_: str, data: dict, **extra) -> None:
        events.append({"type": type_, "seq": len(events), "time": T0 + len(events), "data": data, **extra})

    add("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}})
    user = {"content": [{"type": "text", "text": "add the tools"}], "source": {"kind": "user"}}
    add("user/message", user, surfaceOp="append")
    add("step/start", {"turn": 1, "step": 1})
    header = {"config": {"model": "m1"}, "system": "You add tools.", "tools": [{**TOOL, "name": "t0"}]}
    add("request/header", {"header": header, "reason": "initial"})
    for k in range(1, n + 1):
        add("request/header-delta", {"tools": {"added": [{**TOOL, "name": f"t{k}"}], "removed": [], "changed": []}})
    dispatched = len(events)
    add("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "done"}})
    add("assistant/message", {"turn": 1, "step": 1, "content": [{"type": "text", "text": "done"}]}, surfaceOp="append")
    add("step/end", {"turn": 1, "step": 1})
    add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    log = folder / f"deltas-{n}.jsonl"
    head = {"type": "session", "version": 0, "id": f"deltas-{n}", "createdAt": T0}
    log.write_bytes(b"\n".join(orjson.dumps(x) for x in [head, *events]) + b"\n")
    tools = [{**TOOL, "name": f"t{k}"} for k in range(n + 1)]
    request = {
        "model": "m1",
        "system": header["system"],
        "tools": tools,
        "messages": [{"role": "user", "content": user["content"]}],
    }
    line = {"sessionId": f"deltas-{n}", "logLength": dispatched, "turn": 1, "step": 1, "request": request}
    (folder / f"deltas-{n}.requests.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    return log


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1500,6000,12000", help="delta counts (default 1500,6000,12000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is shown (default 3)")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="inspector-deltas-"))
    env = child_env(out)
    empty = write_log(out / "empty", 0)
    best(_CHECK, ["check", str(empty), "--no-cache", "-q"], env, 1)  # warm the bytecode cache
    _, _, base_rss = best(_CHECK, ["check", str(empty), "--no-cache", "-q"], env, args.repeat)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        log = write_log(out / str(n), n)
        cpu, wall, rss = best(_CHECK, ["check", str(log), "--no-cache", "-q"], env, args.repeat)
        rows.append((n, log.stat().st_size, cpu, wall, rss))
    print(f"{'deltas':>7} {'log':>9} | {'cpu':>7} {'wall':>7} | {'peak RSS':>8} {'above empty':>11} | growth")
    prev = None
    for n, size, cpu, wall, rss in rows:
        growth = ""
        if prev is not None:
            pn, pcpu, prss = prev
            above = (rss - base_rss) / max(prss - base_rss, 1)
            growth = f"x{n / pn:.0f} deltas: x{cpu / pcpu:.2f} time, x{rss / prss:.2f} RSS (x{above:.2f} above empty)"
        print(
            f"{n:>7,} {size / 2**20:>7.1f}MB | {cpu:>6.2f}s {wall:>6.2f}s |"
            f" {rss:>6.0f}MB {rss - base_rss:>9.0f}MB | {growth}"
        )
        prev = (n, cpu, rss)
    print(f"empty log: {base_rss:.0f} MB peak RSS; best of {args.repeat} runs each (CPU time = user + system)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
