"""Is the memory of a check flat in the number of streamed chunks?

Two seed-era logs with the same 600 steps and the same messages, one
streaming each step's answer in 80 chunks, the other in 800 (ten times the
chunk lines, about ten times the bytes).  Prints the whole-process peak RSS
(VmHWM) and CPU time of ``inspector check --no-cache`` on each, and how much
more the 800-chunk log takes; the same for both logs in the late storage
form (packed chunk rows in zstd frames).  Target: peak RSS within 20 %.

    python benchmarks/chunk_memory.py [--steps 600] [--chunks 80,800] [--repeat 3]
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
from invariants.simulate.convert import convert_log  # noqa: E402

T0 = 1_700_000_000_000
WORDS = "the parser reads each line once and keeps only what a later step needs".split()
HEADER = {"config": {"model": "m1"}, "system": "You answer.", "tools": [{"name": "bash", "description": "run"}]}


def answer(step: int, words: int = 600) -> str:
    return " ".join(WORDS[(step * 7 + i) % len(WORDS)] for i in range(words))


def write_log(path: Path, steps: int, chunks: int) -> Path:
    """``steps`` one-step turns, each answer streamed in ``chunks`` pieces of equal size."""
    seq = 0
    with open(path, "wb") as out:

        def add(type_: str, data: dict, **extra) -> None:
            nonlocal seq
            ev = {"type": type_, "seq": seq, "time": T0 + seq, "data": data, **extra}
            out.write(orjson.dumps(ev) + b"\n")
            seq += 1

        out.write(orjson.dumps({"type": "session", "version": 0, "id": "chunks", "createdAt": T0}) + b"\n")
        for turn in range(1, steps + 1):
            add("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})
            user = {"content": [{"type": "text", "text": f"question {turn}"}], "source": {"kind": "user"}}
            add("user/message", user, surfaceOp="append")
            add("step/start", {"turn": turn, "step": 1})
            if turn == 1:
                add("request/header", {"header": HEADER, "reason": "initial"})
            text = answer(turn)
            size = -(-len(text) // chunks)
            first = seq
            for i in range(chunks):
                piece = text[i * size : (i + 1) * size]
                add(
                    "assistant/chunk",
                    {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": piece}},
                )
            usage = {"inputTokens": 100 * turn, "outputTokens": chunks}
            add("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "usage", "usage": usage}})
            message = {"turn": turn, "step": 1, "content": [{"type": "text", "text": text}]}
            add("assistant/message", message, surfaceOp="append", sourceEventSeqs=list(range(first, seq)))
            add("step/end", {"turn": turn, "step": 1})
            add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--chunks", default="80,800", help="chunks per step, one log each (default 80,800)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is shown (default 3)")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="inspector-chunks-"))
    env = child_env(out)
    plain, late = [], []
    for chunks in (int(c) for c in args.chunks.split(",")):
        log = write_log(out / f"chunks-{chunks}.jsonl", args.steps, chunks)
        packed = convert_log(log, out / "late" / f"chunks-{chunks}.jsonl.zstd")
        for rows, path in ((plain, log), (late, packed)):
            argv = ["check", str(path), "--no-cache", "-q"]
            best(_CHECK, argv, env, 1)  # warm the bytecode and page caches
            cpu, _, rss = best(_CHECK, argv, env, args.repeat)
            rows.append((chunks, path.stat().st_size, cpu, rss))
    print(f"{'form':>10} {'chunks/step':>11} {'log':>9} | {'cpu':>7} | {'peak RSS':>8}")
    for form, rows in (("jsonl", plain), ("zstd+rows", late)):
        for chunks, size, cpu, rss in rows:
            print(f"{form:>10} {chunks:>11,} {size / 2**20:>7.1f}MB | {cpu:>6.2f}s | {rss:>6.0f}MB")
        (c0, s0, _, r0), (c1, s1, _, r1) = rows[0], rows[-1]
        print(
            f"{form:>10}: x{c1 / c0:.0f} chunks (x{s1 / s0:.1f} bytes):"
            f" peak RSS x{r1 / r0:.2f} ({(r1 / r0 - 1) * 100:+.0f} %)"
        )
    print(f"best of {args.repeat} runs each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
