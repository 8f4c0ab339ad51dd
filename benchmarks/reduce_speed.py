"""How long does `inspector reduce` take on a large log?

Generates a seed-era session with its capture (52,000 events or more, 600 recorded requests, through
``invariants.simulate.large.generate_large``), drops one message from the recorded request in the middle
(one DIV001), and reduces it in this process through ``invariants.reduce.reduce_log``: once plain, once with
``--redact``.  Prints, for each, the wall time to the written repro, the candidates checked, the events and
capture lines before and after, and whether the time limit stopped the search.  Target: under 30 s each on
2 cores.  The CPU time is printed beside the wall time: on a shared machine the wall time also counts waiting
for a core.

    python benchmarks/reduce_speed.py [--events 52000] [--max-seconds 600] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_log(folder: Path, events: int) -> Path:
    """The generated log with one message dropped from its middle recorded request."""
    from invariants.simulate.large import generate_large

    log, cap = folder / "large.jsonl", folder / "requests.jsonl"
    generate_large(log, cap, events=events, steps=600)
    lines = cap.read_text(encoding="utf-8").splitlines()
    middle = json.loads(lines[len(lines) // 2])
    middle["request"]["messages"].pop(1)
    lines[len(lines) // 2] = json.dumps(middle, ensure_ascii=False)
    cap.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return log


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=52_000)
    ap.add_argument("--max-seconds", type=float, default=600.0, help="the reducer's own time limit")
    ap.add_argument("--keep", metavar="DIR", help="keep the generated log and the repros here")
    args = ap.parse_args()

    from invariants.reduce import reduce_log, write_repro

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="reduce-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        src = work / "in"
        src.mkdir(exist_ok=True)
        log = make_log(src, args.events)
        n = sum(1 for _ in log.open(encoding="utf-8")) - 1
        cap_mb = (src / "requests.jsonl").stat().st_size / 1e6
        print(f"log: {n} events, {log.stat().st_size / 1e6:.1f} MB; capture {cap_mb:.1f} MB")
        for redact in (False, True):
            started, cpu = time.perf_counter(), time.process_time()
            reduction = reduce_log(log, "DIV001", redact=redact, max_seconds=args.max_seconds, progress=True)
            write_repro(reduction, work / ("redacted" if redact else "plain"))
            m = reduction.manifest
            print(
                f"{'--redact' if redact else 'plain   '}: {time.perf_counter() - started:.1f} s to the repro "
                f"({time.process_time() - cpu:.1f} s CPU), "
                f"{m['candidates']} candidates, events {m['events']['before']} -> {m['events']['after']}, "
                f"capture lines {m['captures']['before']} -> {m['captures']['after']}, "
                f"timed out: {m['timed_out']}, redacted: {m['redacted']}"
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
