"""How fast is `inspector check` against the floor of merely parsing its input?

Generates a seed-era session with its capture at two sizes (>= 50,000 events
and >= 500 steps, then twice that), and prints for each: the wall time of
the check in-process and as the `inspector check` command, the time to parse
every line of the log and capture with orjson, their ratio, and the command's
peak RSS.  Target: ratio <= 2.0 and time linear in size.

    python benchmarks/check_speed.py [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants import check  # noqa: E402
from invariants.simulate.seed_era import generate_large  # noqa: E402

SIZES = [(50_000, 500), (100_000, 1_000)]


def parse_floor(*paths: Path) -> float:
    start = time.perf_counter()
    loads = orjson.loads
    for p in paths:
        with open(p, "rb") as fh:
            for line in fh:
                loads(line)
    return time.perf_counter() - start


def best(fn, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def timed_check(log: Path) -> float:
    start = time.perf_counter()
    result = check([log])
    elapsed = time.perf_counter() - start
    assert result.requests_checked > 0
    return elapsed


_CHILD = (
    "import re, sys\n"
    "from inspector.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
    "sys.stderr.write(f'VmHWM {hwm.group(1) if hwm else 0}\\n')\n"
    "sys.exit(rc)\n"
)


def command(log: Path) -> tuple[float, float]:
    """Wall time and peak RSS (MiB) of `inspector check` as a fresh process (no result cache).

    The child reports its own VmHWM: rusage's maxrss would also count this
    (large) parent's memory, which a fork or vfork shares until exec.
    """
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "check", str(log), "--format", "json", "--no-cache", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr.decode())
    kib = [int(line.split()[1]) for line in proc.stderr.decode().splitlines() if line.startswith("VmHWM")]
    return elapsed, (kib[-1] if kib else 0) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the generated logs here instead of a temp dir")
    args = ap.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="inspector-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for events, steps in SIZES:
        log, cap = out / f"bench-{events}.jsonl", out / f"bench-{events}.requests.jsonl"
        if not log.exists():
            generate_large(log, cap, events=events, steps=steps, seed=7)
        n_events = sum(1 for _ in open(log, "rb")) - 1
        n_requests = sum(1 for _ in open(cap, "rb"))
        mb = (log.stat().st_size + cap.stat().st_size) / 2**20
        floor = best(partial(parse_floor, log, cap), args.repeat)
        check = best(partial(timed_check, log), args.repeat)
        cmd, rss = command(log)
        rows.append((n_events, n_requests, mb, floor, check, cmd, rss))
    print(
        f"{'events':>8} {'requests':>8} {'MiB':>7} {'parse floor':>11} {'check':>8} {'ratio':>6} {'command':>8} "
        f"{'peak RSS':>9}"
    )
    for n_events, n_requests, mb, floor, check, cmd, rss in rows:
        print(
            f"{n_events:>8} {n_requests:>8} {mb:>7.1f} {floor:>10.3f}s {check:>7.3f}s {check / floor:>6.2f} "
            f"{cmd:>7.3f}s {rss:>7.0f}MiB"
        )
    (e1, *_, c1, _, _), (e2, *_, c2, _, _) = rows[0], rows[1]
    print(f"scaling: {e2 / e1:.2f}x events -> {c2 / c1:.2f}x check time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
