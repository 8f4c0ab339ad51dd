"""The long fuzz run: mutate the sample logs (and small corpus logs) for a while,
drive the real CLI on each case, and count distinct failure modes.

    python3 benchmarks/fuzz_long.py                    # 10 minutes, one worker per CPU
    python3 benchmarks/fuzz_long.py --cases 20000 -j 4 # a fixed number of cases
    python3 benchmarks/fuzz_long.py --seconds 3600 --seed 7
    python3 benchmarks/fuzz_long.py --replay 1234      # run case 1234 of --seed again, verbosely
    python3 benchmarks/fuzz_long.py --sweep            # every field of every event type x every wrong value
    python3 benchmarks/fuzz_long.py --scale            # time and memory at n and 4n for inputs that grow one way

Each case keeps the promises of SECURITY.md or is a failure: an exception
escaping the CLI, an exit code outside {0, 1, 2}, a traceback, raw terminal
control bytes in the output, a finding without its file or line, a time over
the size-proportional budget (a hang is cut by a timer), or the process dying
(a segfault is caught by the supervisor, which restarts the worker after the
case that killed it).  Case ``i`` of seed ``s`` depends only on ``(s, i)``, so
any case can be replayed alone.  Failures are grouped by mode (exception type
and innermost frame of our code); the first reproducer of each mode is kept
under benchmarks/out/fuzz/.  Prints the cases run, cases per mutator and the
distinct modes; exits 1 when any mode was found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fuzz_cases import (  # noqa: E402
    Case,
    argv_for,
    check_flags,
    random_case,
    run_case,
    sweep_case_at,
    sweep_points,
    sweep_size,
    time_budget,
    write_case,
)
from tests.support.fuzz_inputs import corpus_seeds, sample_seeds  # noqa: E402
from tests.support.fuzz_scale import SCALE_FAMILIES, scale_family  # noqa: E402
from tests.support.fuzz_structured import structured_case  # noqa: E402

_POINTS: list | None = None


def _case(seeds, seed: int, i: int, sweep: bool = False, faults: bool = False) -> tuple[Case, list[str]]:
    global _POINTS
    if sweep:
        if _POINTS is None:
            _POINTS = sweep_points(seeds)
        return sweep_case_at(seeds, _POINTS, i)
    rng = random.Random(f"{seed}:{i}")
    if faults and i % 4 == 3:  # a fault around the input: a FIFO, a device, a link, a full disk, a kill
        from tests.support.fuzz_faults import fault_case

        return fault_case(rng, seeds)
    # Half the cases mutate real logs; half are structured logs that reach the deep code.
    return structured_case(rng) if i % 2 else random_case(rng, seeds)


def worker(
    seed: int,
    start: int,
    stride: int,
    count: int,
    no_corpus: bool,
    out: Path,
    sweep: bool = False,
    faults: bool = False,
    tui: int = 0,
) -> None:
    """Run cases start, start+stride, ... and report each as one JSON line on stdout."""
    seeds = sample_seeds() + ([] if no_corpus else corpus_seeds())
    flags = check_flags()
    work = Path(tempfile.mkdtemp(prefix="fuzz-worker-"))
    emit = sys.__stdout__.write
    try:
        for k in range(count):
            i = start + k * stride
            case, names = _case(seeds, seed, i, sweep, faults)
            with_tui = bool(tui) and i % tui == 0 and not any(e.startswith("fault:") for e in case.extra)
            if with_tui:
                names = [*names, "tui"]
            emit(json.dumps({"start": i, "names": names}) + "\n")
            sys.__stdout__.flush()
            folder = work / f"c{i}"
            outcome, bad = run_case(case, folder, flags)
            if bad is None and with_tui:
                from tests.support.fuzz_faults import run_tui

                outcome, bad = run_tui(write_case(case, folder / "tui"), time_budget(case.size) + 20)
            if bad is not None:
                _keep(out / f"case{i}", bad, names, case, outcome.code, outcome.tb, outcome.err)
            emit(json.dumps({"done": i, "mode": bad}) + "\n")
            sys.__stdout__.flush()
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _keep(folder: Path, mode: str, names: list[str], case: Case, code, tb: str, err: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, data in case.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    target = folder / case.target if case.target != "." else folder
    (folder / "MODE.txt").write_text(
        f"{mode}\nmutators: {', '.join(names)}\ncommand: inspector {' '.join(argv_for(case, target, check_flags()))}\n"
        f"exit: {code}\n\n{tb}\nstderr:\n{err[-4000:]}\n",
        encoding="utf-8",
    )


def _keep_tail(stream, tail: list[str]) -> None:
    """Read a worker's stderr to its end and keep the last 40 lines (a thread, so the pipe never fills)."""
    tail.extend(stream.readlines()[-40:])


def supervise(args) -> int:
    jobs = args.jobs or os.cpu_count() or 1
    deadline = None if args.cases is not None else time.monotonic() + args.seconds
    total = args.cases
    if args.sweep:
        seeds = sample_seeds() + ([] if args.no_corpus else corpus_seeds())
        size = sweep_size(sweep_points(seeds))
        total = size if total is None else min(total, size)
        deadline = None
        print(
            f"sweep: {size} cases (every distinct field of the seed logs x {size // len(sweep_points(seeds))} wrong "
            "values)",
            flush=True,
        )
    modes: dict[str, tuple[int, list[str]]] = {}
    mode_counts: Counter = Counter()
    per_mutator: Counter = Counter()
    done = 0
    lock = threading.Lock()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    def record(i: int, names: list[str], mode: str | None) -> None:
        nonlocal done
        with lock:
            done += 1
            per_mutator.update(set(names))
            if mode is not None:
                mode_counts[mode] += 1
                if mode not in modes:
                    modes[mode] = (i, names)
                    print(f"[case {i}] NEW failure mode: {mode} (mutators {', '.join(names)})", flush=True)
            if done % 1000 == 0:
                print(f"... {done} cases, {len(modes)} failure mode(s), {time.monotonic() - started:.0f}s", flush=True)

    def lane(lane_no: int) -> None:
        # Cases lane_no, lane_no + jobs, ...; a worker that dies is restarted after the fatal case.
        k = 0  # index within the lane
        while True:
            if total is not None:
                remaining = (total - lane_no + jobs - 1) // jobs - k
                if remaining <= 0:
                    return
            else:
                if time.monotonic() > deadline:
                    return
                remaining = 200  # a batch; the deadline is checked between batches
            start = lane_no + k * jobs
            cmd = (
                [
                    sys.executable,
                    "-X",
                    "faulthandler",
                    __file__,
                    "--worker",
                    str(start),
                    str(jobs),
                    str(remaining),
                    "--seed",
                    str(args.seed),
                    "--out",
                    str(args.out),
                ]
                + (["--no-corpus"] if args.no_corpus else [])
                + (["--sweep"] if args.sweep else [])
                + (["--faults"] if args.faults else [])
                + (["--tui", str(args.tui)] if args.tui else [])
            )
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir()
            )
            current: tuple[int, list[str]] | None = None
            err_tail: list[str] = []
            t = threading.Thread(target=_keep_tail, args=(proc.stderr, err_tail), daemon=True)
            t.start()
            for line in proc.stdout:
                msg = json.loads(line)
                if "start" in msg:
                    current = (msg["start"], msg["names"])
                else:
                    record(msg["done"], current[1] if current else [], msg["mode"])
                    current = None
                    k += 1
                    if deadline is not None and time.monotonic() > deadline:
                        proc.kill()
                        break
            rc = proc.wait()
            t.join(timeout=5)
            if current is not None and rc != 0 and not (deadline is not None and time.monotonic() > deadline):
                mode = f"process died (exit {rc})"
                i, names = current
                folder = args.out / f"case{i}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "MODE.txt").write_text(
                    f"{mode}\nmutators: {', '.join(names)}\n\n{''.join(err_tail)}", encoding="utf-8"
                )
                record(i, names, mode)
                k += 1
            elif rc != 0 and current is None and total is not None and k < (total - lane_no + jobs - 1) // jobs:
                print(f"worker failed outside a case (exit {rc}):\n{''.join(err_tail)}", file=sys.stderr)
                return

    threads = [threading.Thread(target=lane, args=(n,)) for n in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    nseeds = len(sample_seeds()) + (0 if args.no_corpus else len(corpus_seeds()))
    print(
        f"\ncases run: {done} in {elapsed:.0f}s ({done / max(elapsed, 1e-9):.1f}/s, {jobs} worker(s)), "
        f"seed logs: {nseeds}, rng seed {args.seed}"
    )
    print("cases per mutator: " + ", ".join(f"{k} {v}" for k, v in sorted(per_mutator.items())))
    print(f"distinct failure modes: {len(modes)}")
    for mode, count in mode_counts.most_common():
        first, names = modes[mode]
        print(f"  {count:6d} x {mode}  (first: case {first}, {', '.join(names)}; reproducer in {args.out}/case{first})")
    return 1 if modes else 0


_MEASURE = (
    "import resource, sys\n"
    "from inspector.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
    "print('MAXRSS', hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _measure(files: dict, target: str, work: Path) -> tuple[int, float, int, int | None]:
    """(input bytes, seconds, max RSS in KiB, exit code) of `inspector check` in a fresh process."""
    shutil.rmtree(work, ignore_errors=True)
    for name, data in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURE,
            "check",
            str(work / target if target != "." else work),
            "--no-cache",
            "--quiet",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=work,
    )
    seconds = time.perf_counter() - t0
    rss = next((int(x.split()[1]) for x in proc.stderr.splitlines() if x.startswith("MAXRSS")), 0)
    return sum(map(len, files.values())), seconds, rss, proc.returncode


def scale(args) -> int:
    """Each family at n and 4n: a 4x input may cost at most ~10x time and memory (quadratic is 16x)."""
    work = Path(tempfile.mkdtemp(prefix="fuzz-scale-"))
    bad = []
    try:
        for fam in SCALE_FAMILIES:
            rows = []
            for n in (args.scale_n, 4 * args.scale_n):
                files, target = scale_family(fam, n)
                rows.append((n, *_measure(files, target, work / "case")))
            (n0, b0, t0, r0, c0), (n1, b1, t1, r1, c1) = rows
            base = 30_000  # KiB: the interpreter and imports; growth under 10 MB or 0.25 s is noise
            t_ratio = (t1 - 0.25) / max(t0 - 0.25, 0.25)
            m_ratio = max(r1 - base, 1) / max(r0 - base, 10_240)
            size_ratio = b1 / max(b0, 1)
            ok = t_ratio <= 2.5 * size_ratio and m_ratio <= 2.5 * size_ratio and c0 in (0, 1, 2) and c1 in (0, 1, 2)
            print(
                f"{fam:24s} {b0:>10,d} B {t0:6.2f} s {r0 / 1024:7.0f} MB | {b1:>11,d} B {t1:6.2f} s {r1 / 1024:7.0f} MB"
                f" | time x{t_ratio:5.1f} mem x{m_ratio:5.1f} for input x{size_ratio:4.1f}  "
                f"{'ok' if ok else 'SUPERLINEAR'}",
                flush=True,
            )
            if not ok:
                bad.append(fam)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nscale families: {len(SCALE_FAMILIES)}, superlinear: {len(bad)} {bad}")
    return 1 if bad else 0


def replay_one(args) -> int:
    seeds = sample_seeds() + ([] if args.no_corpus else corpus_seeds())
    case, names = _case(seeds, args.seed, args.replay, args.sweep, args.faults)
    folder = Path(tempfile.mkdtemp(prefix="fuzz-replay-"))
    outcome, bad = run_case(case, folder, check_flags())
    print(f"case {args.replay}: mutators {', '.join(names)}; files in {folder}")
    print(f"exit {outcome.code} in {outcome.seconds:.2f}s; verdict: {bad or 'ok'}")
    if outcome.tb:
        print(outcome.tb)
    print(outcome.err[-2000:])
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="stop after this long (default 600)")
    ap.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    ap.add_argument("--seed", type=int, default=1, help="random seed (runs are reproducible)")
    ap.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (default: one per CPU)")
    ap.add_argument("--no-corpus", action="store_true", help="only the sample logs, not ../shared/corpus")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fuzz", help="where reproducers go")
    ap.add_argument(
        "--sweep",
        action="store_true",
        help="deterministic: each distinct field of the seed logs gets every wrong value",
    )
    ap.add_argument(
        "--scale", action="store_true", help="run each scale family at n and 4n and compare time and memory"
    )
    ap.add_argument("--scale-n", type=int, default=4000, help="the smaller size for --scale (default 4000)")
    ap.add_argument("--replay", type=int, metavar="I", help="run case I alone and show its outcome")
    ap.add_argument(
        "--faults",
        action="store_true",
        help="every 4th case is a fault around its input: a FIFO or device named like a log, a symlink loop, "
        "an --output hard-linked to the log, a full disk (a 16 KB tmpfs, as root), a kill -9 mid-write",
    )
    ap.add_argument(
        "--tui", type=int, default=0, metavar="N", help="also open every Nth case's input in the TUI, headless"
    )
    ap.add_argument("--worker", nargs=3, type=int, metavar=("START", "STRIDE", "COUNT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.seed, *args.worker, args.no_corpus, args.out, args.sweep, args.faults, args.tui)
        return 0
    if args.replay is not None:
        return replay_one(args)
    if args.scale:
        return scale(args)
    return supervise(args)


if __name__ == "__main__":
    sys.exit(main())
