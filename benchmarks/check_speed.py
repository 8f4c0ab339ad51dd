"""How fast is `inspector check` against the floor of merely parsing its input?

Generates a seed-era session with its capture (52,000 events, 600 recorded
requests, about 39 MB; then 2x and 4x of it), in three shapes (``SHAPES``: compactions
by surface size; resumes every 25 turns and compactions every 30; the same with text that is not
ASCII), three more on request: ``deltas``, "turns" with a header delta every turn, and two that
another JSON writer wrote (``WRITERS``: spaced; seq and time first), and prints, side by side for
each, two fresh processes timed from launch to exit:

* check: ``inspector check LOG --no-cache -q`` (no result cache);
* floor: a process that imports orjson, then reads and parses every line of
  the log and of the capture (what a user would call "just reading it");

their ratio (target <= 1.5) and each one's peak RSS.  Time is the
process's CPU time (user + system, from wait4) beside its wall time: on a
shared machine the wall time also counts waiting for a core.  Each figure is
the best of ``--repeat`` runs, the least noisy estimate, floor and check
taking turns.  Children run with the bytecode cache on (in the
output folder), as an installed tool does, and from the output folder, as in a project with no
``[tool.inspector]`` (this repository's own pyproject.toml would have to be parsed).

    python benchmarks/check_speed.py [--repeat 5] [--keep DIR] [--sizes 1,2,4]
        [--shapes size,turns,text,deltas,spaced,seq-first] [--against DIR]

``--against DIR`` also times the check of another checkout (an earlier commit) in the same
turns, so a before/after on a machine whose speed drifts compares like with like.

``--parts`` says where a ratio comes from: it also times both sides on the log alone
(a hard link in a folder with no capture) and on nothing (the floor's interpreter and
``import orjson``; the check of a tiny clean log), and prints each part as a difference
of whole processes: start-up, the log, the captures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from invariants.simulate.large import WORDS_UTF8  # noqa: E402

BASE_EVENTS, BASE_STEPS = 52_000, 600
# Shapes of the generated log (keyword arguments of generate_large), so a ratio does not hold for one
# generator's log only.  "size": a compaction whenever the surface passes 160 nodes, which sets how long
# the recorded histories get (39 MB at x1), a resume every 20 turns.  "turns": a resume every 25 turns,
# a compaction every 30, so histories grow long between them (the shape issue 30 names).  "text": "turns"
# with prose half of whose words are not ASCII (CJK, accents, typographic punctuation, emoji).  "deltas":
# "turns" with a header delta every turn (the default is every 8th), so every step's header is a version.
SHAPES = {
    "size": {"resume_every": 20, "compact_over": 160},
    "turns": {"resume_every": 25, "compact_every": 30},
    "text": {"resume_every": 25, "compact_every": 30, "vocabulary": WORDS_UTF8},
    "deltas": {"resume_every": 25, "compact_every": 30, "change_every": 1},
    "spaced": {"resume_every": 25, "compact_every": 30},
    "seq-first": {"resume_every": 25, "compact_every": 30},
}


def _seq_first(obj: dict) -> dict:
    head = {k: obj[k] for k in ("seq", "time") if k in obj}
    return {**head, **{k: v for k, v in obj.items() if k not in head}}


# Shapes another JSON writer wrote: the "turns" log and its capture, each line written again by Python's
# json.dumps with its default spacing ("spaced"), or compact with seq and time before the rest ("seq-first").
# The harness writes compact JSON, type first; a check's speed must not depend on the writer.
WRITERS = {
    "spaced": lambda obj: json.dumps(obj, ensure_ascii=False),
    "seq-first": lambda obj: json.dumps(_seq_first(obj), separators=(",", ":"), ensure_ascii=False),
}

# Each child reports its own peak RSS (VmHWM: the kernel's ru_maxrss of a child also counts the
# parent's pages at fork, and a benchmark holding generated logs would show as every child's peak).
_PEAK = (
    "def _peak():\n"
    "    import re, sys\n"
    "    hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
    "    sys.stderr.write(f'VmHWM {hwm.group(1) if hwm else 0}\\n')\n"
)
# The check is the ``inspector`` command itself (its console entry point, exit included): the
# peak is written by an exit handler, which the command runs before it exits.
_CHECK = _PEAK + "import atexit\natexit.register(_peak)\nfrom inspector.cli import run\nrun()\n"
# The same for a checkout of an earlier commit (``--against``), which may predate ``run``.
_CHECK_EARLIER = (
    _PEAK + "import atexit, sys\natexit.register(_peak)\n"
    "try:\n    from inspector.cli import run\nexcept ImportError:\n"
    "    from inspector.cli import main\n    sys.exit(main())\nrun()\n"
)
_FLOOR = (
    _PEAK + "import sys\nimport orjson\n"
    "loads = orjson.loads\n"
    "for name in sys.argv[1:]:\n"
    "    with open(name, 'rb') as fh:\n"
    "        for line in fh:\n"
    "            loads(line)\n"
    "_peak()\n"
)


def child_env(out: Path, code_root: Path = ROOT) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code_root) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONPYCACHEPREFIX"] = str(out / "pycache")
    return env


def run_child(code: str, args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """CPU time (user + system, s), wall time (s) and peak RSS (MiB) of one fresh process.

    The child reports its own VmHWM; the CPU time comes from wait4, so it does
    not count time the process spent waiting for a core on a busy machine.
    Both the floor and the check of a generated (clean) log must exit 0: a
    crash, a missing dependency or a finding would otherwise be timed as a
    fast run.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=Path(env["PYTHONPYCACHEPREFIX"]).parent,  # the output folder: a project with no configuration
        env=env,
    )
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"a timed process exited {proc.returncode}:\n{err.decode()[-3000:]}")
    kib = [int(line.split()[1]) for line in err.decode().splitlines() if line.startswith("VmHWM")]
    if not kib:
        raise SystemExit(f"a timed process did not report its peak RSS:\n{err.decode()[-3000:]}")
    return usage.ru_utime + usage.ru_stime, wall, kib[-1] / 1024


def best(code: str, args: list[str], env: dict[str, str], repeat: int) -> tuple[float, float, float]:
    """One child's best (CPU, wall, RSS) of ``repeat`` runs (the other benchmarks' measure)."""
    return best_interleaved([(code, args, env)], repeat)[0]


def best_interleaved(
    children: list[tuple[str, list[str], dict[str, str]]], repeat: int
) -> list[tuple[float, float, float]]:
    """Each child's best (CPU, wall, RSS) of ``repeat`` runs, the children taking turns, so
    that a machine that slows down or speeds up during the benchmark weighs on every side
    of a ratio alike."""
    runs: list[list[tuple[float, float, float]]] = [[] for _ in children]
    for _ in range(repeat):
        for i, (code, args, env) in enumerate(children):
            runs[i].append(run_child(code, args, env))
    return [(min(r[0] for r in rs), min(r[1] for r in rs), min(r[2] for r in rs)) for rs in runs]


def generate(out: Path, scale: int, shape: str) -> tuple[Path, Path, dict]:
    from invariants.simulate.large import generate_large

    name = f"bench-x{scale}" if shape == "size" else f"bench-{shape}-x{scale}"
    log, cap = out / f"{name}.jsonl", out / f"{name}.requests.jsonl"
    if not log.exists() or not cap.exists():
        generate_large(log, cap, events=BASE_EVENTS * scale, steps=BASE_STEPS * scale, seed=7, **SHAPES[shape])
        for path in (log, cap) if shape in WRITERS else ():
            rewritten = path.with_name(path.name + ".tmp")
            with open(path, encoding="utf-8") as src, open(rewritten, "w", encoding="utf-8") as dst:
                dst.writelines(WRITERS[shape](json.loads(line)) + "\n" for line in src)
            rewritten.replace(path)
    with open(log, "rb") as fh:
        events = sum(1 for _ in fh) - 1
    with open(cap, "rb") as fh:
        requests = sum(1 for _ in fh)
    return log, cap, {"events": events, "requests": requests, "mib": (log.stat().st_size + cap.stat().st_size) / 2**20}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is shown (default 5)")
    ap.add_argument("--keep", type=Path, help="write (and reuse) the generated logs here instead of a temp dir")
    ap.add_argument("--sizes", default="1,2,4", help="multiples of the 52,000-event log (default 1,2,4)")
    ap.add_argument("--parts", action="store_true", help="also split each ratio into start-up, log and captures")
    ap.add_argument(
        "--shapes", default="size,turns,text", help=f"generated log shapes, comma-separated: {', '.join(SHAPES)}"
    )
    ap.add_argument(
        "--against",
        type=Path,
        help="a checkout of an earlier commit (git worktree add DIR REV): its check is timed in the same turns",
    )
    args = ap.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="inspector-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    env = child_env(out)
    earlier_env = child_env(out, args.against.resolve()) if args.against else None
    scales = [int(s) for s in args.sizes.split(",")]
    rows = []
    parts: list[tuple[int, list, list]] = []
    for shape, scale in [(shape, scale) for shape in args.shapes.split(",") for scale in scales]:
        log, cap, counts = generate(out, scale, shape)
        check_args = ["check", str(log), "--no-cache", "-q"]
        children = [(_FLOOR, [str(log), str(cap)], env), (_CHECK, check_args, env)]
        if earlier_env is not None:
            children.append((_CHECK_EARLIER, check_args, earlier_env))
        if args.parts:
            alone = log_alone(out, log)
            tiny = ROOT / "sample_logs" / "clean-multi-turn.jsonl"
            children += [
                (_FLOOR, [], env),
                (_CHECK, ["check", str(tiny), "--no-cache", "-q"], env),
                (_FLOOR, [str(log)], env),
                (_CHECK, ["check", str(alone), "--no-cache", "-q"], env),
            ]
        for code, argv, e in children[1:]:
            run_child(code, argv, e)  # warm the bytecode cache and the page cache
        timed = best_interleaved(children, args.repeat)
        if args.parts:
            parts.append((f"{shape} x{scale}", timed[:2], timed[-4:]))
            timed = timed[:-4]
        floor, check, *earlier = timed
        rows.append((f"{shape} x{scale}", counts, floor, check, earlier))
    print(
        f"{'log':>10} {'events':>8} {'requests':>8} {'MiB':>6} | {'floor cpu':>9} {'wall':>6} {'RSS':>6} |"
        f" {'check cpu':>9} {'wall':>6} {'RSS':>6} | {'ratio':>5}"
    )
    for scale, c, (fc, fw, fm), (cc, cw, cm), earlier in rows:
        against = "".join(f" | against: {ec:>6.3f}s {em:>3.0f}MiB {ec / fc:>5.2f}" for ec, _, em in earlier)
        print(
            f"{scale:>10} {c['events']:>8,} {c['requests']:>8,} {c['mib']:>6.1f} |"
            f" {fc:>8.3f}s {fw:>5.2f}s {fm:>3.0f}MiB | {cc:>8.3f}s {cw:>5.2f}s {cm:>3.0f}MiB | {cc / fc:>5.2f}{against}"
        )
    if len(scales) > 1:
        for shape in args.shapes.split(","):
            mine = [r for r in rows if r[0].startswith(f"{shape} ")]
            (_, _, (f0, _, _), (c0, _, m0), _), (_, _, (f1, _, _), (c1, _, m1), _) = mine[0], mine[-1]
            print(
                f"{shape}: x{scales[-1] // scales[0]} input: check CPU time x{c1 / c0:.2f} (floor x{f1 / f0:.2f}),"
                f" check peak RSS x{m1 / m0:.2f}"
            )
    print(f"best of {args.repeat} runs each; ratio = check CPU / floor CPU; logs in {out}")
    if parts:
        print_parts(parts)
    return 0


def log_alone(out: Path, log: Path) -> Path:
    """The log in a folder of its own, with no capture beside it: a hard link (a copy where
    links are refused), made once."""
    folder = out / "log-alone"
    folder.mkdir(exist_ok=True)
    alone = folder / log.name
    if not alone.exists():
        try:
            os.link(log, alone)
        except OSError:
            import shutil

            shutil.copyfile(log, alone)
    return alone


def print_parts(parts: list[tuple[str, list, list]]) -> None:
    """Each size's CPU time split into start-up, the log and the captures, floor beside check.

    Every part is a difference of two best-of-N whole processes (start-up: a process that
    reads nothing; log: the log alone less start-up; captures: everything less the log
    alone), so a part is as noisy as two figures are."""
    print("\nparts (CPU seconds, differences of the runs above):")
    print(f"{'log':>10} {'part':>9} | {'floor':>7} {'check':>7} | {'ratio':>5}")
    for scale, ((fc, _, _), (cc, _, _)), [(f0, _, _), (c0, _, _), (fl, _, _), (cl, _, _)] in parts:
        for name, f, c in (
            ("start-up", f0, c0),
            ("log", fl - f0, cl - c0),
            ("captures", fc - fl, cc - cl),
        ):
            ratio = f"{c / f:>5.2f}" if f > 0 else "    -"
            print(f"{scale:>10} {name:>9} | {f:>6.3f}s {c:>6.3f}s | {ratio}")


if __name__ == "__main__":
    sys.exit(main())
