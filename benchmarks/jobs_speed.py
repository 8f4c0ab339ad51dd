"""How much faster is `inspector check --jobs N` than `--jobs 1`, and where does the time go?

    python3 benchmarks/jobs_speed.py [PATH ...]          # default: ../shared/corpus
    python3 benchmarks/jobs_speed.py --generate 50       # 50 copies of the sample logs (1,100 sessions)

For each of --jobs 1, 2 and 4 the check runs as a fresh process (``--no-cache
--format json``) ``--repeat`` times; the table gives the best wall time and
its speedup over --jobs 1, the CPU time of the main process and of its
workers, and from those the wall time the run would take on an idle machine
(main CPU + workers' CPU / min(jobs, CPUs)) with its speedup; every report
is checked byte-identical to the serial one.  ``--phases``
adds the serial run's CPU seconds per pipeline step, measured in this
process: what stays serial (discovery, fork pass, assembly, rendering) bounds
the speedup.  Wall times need an otherwise idle machine; CPU times are
robust to load.  Children run as an installed tool does, with the bytecode
cache on (``check_speed.child_env``), after one untimed run that fills it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.check_speed import child_env  # noqa: E402


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


_CHILD = (
    "import resource, sys\n"
    "from inspector.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "me, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write(f'\\nCPU {me.ru_utime + me.ru_stime} {workers.ru_utime + workers.ru_stime}\\n')\n"
    "sys.exit(code)\n"
)


def run(paths: list[str], jobs: int, env: dict[str, str]) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds of the process and of its workers, and stdout of one check."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "check", *paths, "--format", "json", "--no-cache", "-q", "-j", str(jobs)],
        capture_output=True,
        cwd=ROOT,
        env=env,
    )
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check --jobs {jobs} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    me, workers = (float(x) for x in proc.stderr.decode().rsplit("CPU ", 1)[1].split())
    return wall, me, workers, proc.stdout


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
    base_wall = base_est = 0.0
    cpus = os.cpu_count() or 1
    columns = [("jobs", 4), ("wall s", 7), ("speedup", 8), ("main CPU", 9), ("workers CPU", 12), ("est. idle s", 12)]
    print(" ".join(f"{name:>{width}}" for name, width in columns) + f" {'est. speedup':>13}  report")
    counts = [int(j) for j in args.jobs.split(",")]
    by_jobs: dict[int, list] = {j: [] for j in counts}
    with tempfile.TemporaryDirectory(prefix="jobs-speed-pycache-") as cache:
        env = child_env(Path(cache))
        run(paths, 1, env)  # fills the bytecode cache, as an installed tool has it: no timed run compiles
        for _ in range(args.repeat):  # interleaved, so a burst of load elsewhere hits every job count alike
            for jobs in counts:
                by_jobs[jobs].append(run(paths, jobs, env))
    for jobs in counts:
        runs = by_jobs[jobs]
        wall = min(r[0] for r in runs)
        me = min(r[1] for r in runs)
        workers = min(r[2] for r in runs)
        # on an idle machine: the main process's work is serial, the workers' is shared by min(jobs, CPUs) cores
        estimate = me + workers / max(1, min(jobs, cpus))
        reference = reference if reference is not None else runs[0][3]
        same = all(r[3] == reference for r in runs)
        base_wall, base_est = base_wall or wall, base_est or estimate
        print(
            f"{jobs:>4} {wall:7.2f} {base_wall / wall:7.2f}x {me:9.2f} {workers:12.2f} {estimate:12.2f} "
            f"{base_est / estimate:12.2f}x  {'identical' if same else 'DIFFERS'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
