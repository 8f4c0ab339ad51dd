"""How much faster is `inspector check --jobs N` than `--jobs 1`, and where does the time go?

    python3 benchmarks/jobs_speed.py [PATH ...]          # default: ../shared/corpus
    python3 benchmarks/jobs_speed.py --generate 50       # 50 copies of the sample logs (1,100 sessions)

For each of --jobs 1, 2 and 4 the check runs as a fresh process (``--no-cache
--format json``) ``--repeat`` times; the table gives the best wall time, the
CPU time of the process and its workers, and the speedup over --jobs 1, and
checks that every report is byte-identical to the serial one.  ``--phases``
adds the serial run's CPU seconds per pipeline step, measured in this
process: what stays serial (discovery, fork pass, assembly, rendering) bounds
the speedup.  Wall times need an otherwise idle machine; CPU times are
robust to load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def generate(copies: int, out: Path) -> Path:
    """``copies`` folders, each the sample logs (all eras, captures, a fork family) as the simulator writes them."""
    from invariants.simulate.samples import write_samples

    base = out / "base"
    if not base.exists():
        write_samples(base)
    tree = out / f"copies-{copies}"
    if not tree.exists():
        for i in range(copies):
            shutil.copytree(base, tree / f"c{i:03d}", ignore=shutil.ignore_patterns("*.md", "EXPECTED.json"))
    return tree


def run(paths: list[str], jobs: int) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds (process and workers) and stdout of one check."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspector.cli",
            "check",
            *paths,
            "--format",
            "json",
            "--no-cache",
            "-q",
            "-j",
            str(jobs),
        ],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check --jobs {jobs} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return wall, cpu, proc.stdout


def phases(paths: list[str]) -> dict[str, float]:
    """CPU seconds per step of a serial check, in this process."""
    import invariants.gate.pipeline as pipeline
    from invariants.gate.formats import render

    spent: dict[str, float] = {}

    def timed(name: str, label: str) -> None:
        real = getattr(pipeline, name)

        def wrapper(*a, **k):
            t = time.process_time()
            try:
                return real(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - t

        setattr(pipeline, name, wrapper)

    for name, label in (
        ("discover", "discover"),
        ("_run_units", "units (replay, captures)"),
        ("fork_findings", "fork pass"),
    ):
        timed(name, label)
    t = time.process_time()
    result = pipeline.check(paths)
    spent["check (all)"] = time.process_time() - t
    t = time.process_time()
    render(result, "json")
    spent["render json"] = time.process_time() - t
    return spent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="folders to check (default ../shared/corpus)")
    ap.add_argument("--generate", type=int, metavar="COPIES", help="check COPIES copies of the sample logs instead")
    ap.add_argument("--jobs", default="1,2,4", help="comma-separated job counts (default 1,2,4)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per job count; the best wall time is kept")
    ap.add_argument("--phases", action="store_true", help="also show the serial run's CPU time per pipeline step")
    args = ap.parse_args(argv)
    paths = args.paths or [str(ROOT.parent / "shared" / "corpus")]
    if args.generate:
        out = Path(tempfile.gettempdir()) / "inspector-jobs-speed"
        paths = [str(generate(args.generate, out))]
    from invariants.read.discover import discover

    sources, _ = discover(paths)
    print(
        f"{', '.join(paths)}: {len(sources)} sessions in {len({s.path.parent for s in sources})} folders, "
        f"{os.cpu_count()} CPUs"
    )
    if args.phases:
        for label, seconds in phases(paths).items():
            print(f"  {label:<26} {seconds:6.2f} s CPU")
    reference: bytes | None = None
    base = None
    print(f"{'jobs':>4} {'wall s':>7} {'CPU s':>7} {'speedup':>8}  report")
    for jobs in (int(j) for j in args.jobs.split(",")):
        runs = [run(paths, jobs) for _ in range(args.repeat)]
        wall = min(r[0] for r in runs)
        cpu = min(r[1] for r in runs)
        reference = reference if reference is not None else runs[0][2]
        same = all(r[2] == reference for r in runs)
        base = base or wall
        print(f"{jobs:>4} {wall:7.2f} {cpu:7.2f} {base / wall:7.2f}x  {'identical' if same else 'DIFFERS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
