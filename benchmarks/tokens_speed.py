"""What do token counts cost on top of a check?

Generates a seed-era session of >= 52,000 events and 600 steps
(``invariants.simulate.large.generate_large``), replays it once, then
times, in a fresh process each: the tokenizer load, and the token counts of
every step's request plus the token rules (``token_findings``) on the
replayed model.  Then the user's figure: ``inspector check LOG --no-cache``
with and without ``--tokens``, whole process, wall time.  Target: under 1 s
on top of ``check``.  Wall time and CPU time (``process_time``) are both
printed: on a shared machine the wall time grows with the load, the CPU
time much less.

    python benchmarks/tokens_speed.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants.simulate.large import generate_large  # noqa: E402

_CHILD = """
import sys, time
from invariants.read.discover import discover
from invariants.replay.session import replay
clock = time.perf_counter if sys.argv[2] == "wall" else time.process_time
t0 = clock()
model = replay(discover([sys.argv[1]])[0][0])
t1 = clock()
from invariants.analysis.tokenizer import count
count("warm")  # loads the tokenizer and builds the word counter
t2 = clock()
from invariants.analysis.token_rules import TokenSettings, token_findings
from invariants.analysis.token_steps import step_tokens
steps = step_tokens(model)
found = token_findings(model, TokenSettings(context_window=1_000_000))
t3 = clock()
print(model.events, len(model.steps), len(steps), f"{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t2:.3f}")
"""


_CLI = "import sys\nfrom inspector.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def whole_check(log: Path, *extra: str) -> float:
    """Wall seconds of one ``inspector check`` process on ``log`` (exit 0 or 1 expected)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CLI, "check", str(log), "--no-cache", "-q", "--format", "json", *extra],
        capture_output=True,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"inspector check exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "large.jsonl"
        generate_large(log, None, events=52_000, steps=600)
        for clock in ("wall", "cpu"):
            runs = []
            for _ in range(args.repeat):
                out = subprocess.run(
                    [sys.executable, "-c", _CHILD, str(log), clock],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    check=True,
                ).stdout.split()
                events, steps, counted = map(int, out[:3])
                runs.append(tuple(map(float, out[3:])))
            replay_s, load_s, count_s = (min(r[i] for r in runs) for i in range(3))
            print(f"{events} events, {steps} steps, {counted} requests counted ({clock} time, best of {args.repeat})")
            print(f"  replay (the check's floor): {replay_s:.3f} s")
            print(f"  tokenizer load:             {load_s:.3f} s")
            print(f"  counts + token rules:       {count_s:.3f} s")
            total = load_s + count_s
            verdict = "within" if total < 1.0 else "OVER"
            print(f"  sum of the two (no overlap): {total:.3f} s  ({verdict} the 1 s target)")
        plain = min(whole_check(log) for _ in range(args.repeat))
        tokens = min(whole_check(log, "--tokens") for _ in range(args.repeat))
        verdict = "within" if tokens - plain < 1.0 else "OVER"
        print(f"inspector check, whole process, wall time, best of {args.repeat}:")
        print(f"  without --tokens: {plain:.3f} s")
        print(f"  with --tokens:    {tokens:.3f} s")
        print(f"  on top of check:  {tokens - plain:.3f} s  ({verdict} the 1 s target)")


if __name__ == "__main__":
    main()
