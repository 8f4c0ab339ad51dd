"""Does the core keep its speed on late-era storage (zstd frames, packed chunk rows)?

Writes a HEAD-era session of >= 100,000 events (invariants.simulate.late_era, with
its request capture) three ways: ``session.jsonl.zstd`` with chunk runs packed
into rows and one frame per turn (what the current harness writes), the same
without rows, and plain ``.jsonl``.  For each it prints the wall time of an
in-process check, and the floor: decompressing every frame and parsing every
decompressed line, and every capture line, with orjson (a row is parsed as the
single line it is; the checker also expands it into its member events).

    python benchmarks/zstd_speed.py [--events 100000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants import check  # noqa: E402
from invariants.read.zstdio import iter_frames, write_frames  # noqa: E402
from invariants.simulate.late_era import TOOLS, LateRecorder, _call  # noqa: E402

WORDS = (
    "the build cache test module parser config token stream request header step turn file path error "
    "result value branch merge commit review patch index schema field record event chunk delta"
).split()


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def build(events: int) -> LateRecorder:
    rng = random.Random(7)
    rec = LateRecorder(rng, "bench-zstd", cwd="/home/dev/project", system="You are a coding agent.", tools=TOOLS)
    while len(rec.events) < events:
        prompt = rec.inbox(prose(rng, 12))
        call = _call(rng, "read", {"file_path": f"src/m{len(rec.events)}.py"})
        rec.run_turn(
            prompt,
            [
                {
                    "reply": [{"type": "reasoning", "text": prose(rng, 80)}, call],
                    "outputs": [(call["id"], prose(rng, 30))],
                },
                {"reply": [{"type": "text", "text": prose(rng, 120)}], "retry": len(rec.events) % 7 == 0},
            ],
        )
        if len(rec.messages) > 12:
            compact(rec, rng)
    return rec


def compact(rec: LateRecorder, rng: random.Random) -> None:
    """Between turns, replace the whole surface by one summary (compaction/*), so requests stay small."""
    nodes: list[int] = []
    for ev in rec.events:
        op = ev.get("surfaceOp")
        if op == "append":
            nodes.append(ev["seq"])
        elif isinstance(op, dict):
            i, j = nodes.index(op["start"]), nodes.index(op["end"])
            nodes[i : j + 1] = [ev["seq"]]
    rec.append("compaction/start", {"turn": rec.turn})
    summary = rec.append("compaction/summary", {"summary": prose(rng, 40), "turn": rec.turn})
    msg = {
        "content": [{"type": "text", "text": prose(rng, 40)}],
        "source": {"kind": "plugin", "plugin": "compaction"},
        "role": "user",
        "id": rec.uid(),
    }
    rec.append("user/message", msg, {"op": "replace", "start": nodes[0], "end": nodes[-1]}, [summary, *nodes])
    rec.append("compaction/end", {"turn": rec.turn})
    rec.messages = [msg]


def floor(path: Path) -> tuple[float, float]:
    """(decompress + parse every line of the log and of its capture, decompress alone) in seconds."""
    start = time.perf_counter()
    if path.name.endswith(".zstd"):
        with open(path, "rb") as fh:
            blocks = list(iter_frames(fh))
    else:
        blocks = [path.read_bytes()]
    blocks.append((path.parent / "requests.jsonl").read_bytes())
    mid = time.perf_counter()
    loads = orjson.loads
    for block in blocks:
        for line in block.split(b"\n"):
            if line:
                loads(line)
    end = time.perf_counter()
    return end - start, mid - start


def timed_check(path: Path) -> tuple[float, int, int]:
    start = time.perf_counter()
    result = check([path])
    elapsed = time.perf_counter() - start
    (m,) = result.sessions
    assert not [f for f in result.findings if f.severity == "error"], result.findings[:3]
    return elapsed, m.events, result.requests_checked


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the logs here instead of a temporary folder")
    args = ap.parse_args(argv)
    rec = build(args.events)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        variants = {}
        for name, pack, zstd in (("zstd+rows", True, True), ("zstd", False, True), ("plain", False, False)):
            folder = base / name
            folder.mkdir(parents=True, exist_ok=True)
            frames = rec.jsonl_frames(pack=pack)
            path = folder / ("session.jsonl.zstd" if zstd else "session.jsonl")
            if zstd:
                write_frames(path, frames)
            else:
                path.write_bytes(b"".join(frames))
            (folder / "requests.jsonl").write_bytes(rec.capture_bytes())
            variants[name] = path
        print(f"{len(rec.events)} events, {len(rec.capture)} requests, {len(rec.batch_ends)} append batches")
        print(f"{'variant':<10} {'bytes':>11} {'lines':>8} {'floor s':>8} {'(unzstd)':>9} {'check s':>8} {'ratio':>6}")
        results = {}
        for name, path in variants.items():
            fl, dz = min(floor(path) for _ in range(args.repeat))
            checks = [timed_check(path) for _ in range(args.repeat)]
            best = min(c[0] for c in checks)
            _, events, requests = checks[0]
            assert events == len(rec.events) and requests == len(rec.capture)
            lines = sum(len(f.split(b"\n")) - 1 for f in rec.jsonl_frames(pack=name == "zstd+rows"))
            print(
                f"{name:<10} {path.stat().st_size:>11,} {lines:>8,} {fl:>8.3f} {dz:>9.3f} {best:>8.3f} "
                f"{best / fl:>6.2f}"
            )
            results[name] = (fl, best)
        # rows hold the same events as the unpacked zstd log: its floor is the events' parse floor
        print(
            f"zstd+rows check against the parse floor of its events as lines: "
            f"{results['zstd+rows'][1] / results['zstd'][0]:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
