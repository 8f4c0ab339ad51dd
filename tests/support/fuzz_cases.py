"""Hostile-input fuzzing: the case runner, its verdict, and random, sweep and SQLite cases.

Shared by the CI slice (``tests/functional/test_fuzz*.py``) and the long run
(``benchmarks/fuzz_long.py``).  A *case* is a small folder of files (a log,
maybe a capture beside it) plus the command line that checks it.  The runner
drives the real CLI in-process (``inspector.cli.main``), with a hang guard,
and :func:`verdict` says whether the outcome keeps the promises of
SECURITY.md: exit 0, 1 or 2; no traceback; no raw terminal control bytes in
text output; findings that name their file (and a line where one exists);
time proportional to the input size.

Failure modes are named by :func:`failure_mode` from the exception type and
the innermost frame in our code, so a long run can count *distinct* bugs
rather than cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.support.fuzz_inputs import SEQ_VALUES, WRONG_VALUES, Seed, to_zstd, zstd_bomb
from tests.support.fuzz_mutators import (
    STACKABLE,
    capture_mutate,
    dump_json,
    get_path,
    join_lines,
    json_paths,
    m_bitflip,
    m_nul,
    m_truncate,
    mutate,
    set_path,
    split_lines,
)


class Hang(BaseException):
    """Raised by the hang guard (a BaseException, so no ``except Exception`` in the tool swallows it)."""


@contextlib.contextmanager
def hang_guard(seconds: float):
    """Interrupt the block after ``seconds`` (main thread only; a no-op elsewhere)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"no answer within {seconds:.1f}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def time_budget(nbytes: int) -> float:
    """Generous: a fixed allowance plus 2 s per MB (the checker does ~50 MB/s)."""
    return 10.0 + 2.0 * nbytes / 1_000_000


@dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    seconds: float
    exc: BaseException | None = None
    tb: str = ""


def run_cli(argv: list[str], budget: float) -> Outcome:
    """``inspector.cli.main(argv)`` in-process: its exit code, stdout, stderr; never raises."""
    from inspector.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    exc: BaseException | None = None
    tb = ""
    t0 = time.perf_counter()
    try:
        with hang_guard(budget), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException as e:  # every escape is a failure mode to report
        if isinstance(e, KeyboardInterrupt):
            raise
        exc, tb = e, traceback.format_exc()
    return Outcome(code, out.getvalue(), err.getvalue(), time.perf_counter() - t0, exc, tb)


def check_flags() -> list[str]:
    """Flags that keep a fuzz run hermetic: no config file, no result cache (when the CLI has them)."""
    from inspector.cli import build_parser

    text = build_parser()._subparsers._group_actions[0].choices["check"].format_help()
    return [f for f in ("--no-cache", "--isolated") if f in text]


_ESC_BYTES = ("\x1b", "\x07", "\x9b", "\x9d", "\x90", "\x00", "\u202e", "\u2066")  # + bidi overrides (display spoofing)


def verdict(outcome: Outcome, fmt: str, inputs: list[Path], budget: float) -> str | None:
    """None when the outcome keeps the promises; else a short description of the broken one."""
    if outcome.exc is not None:
        return f"exception: {failure_mode(outcome.exc)}"
    if outcome.code not in (0, 1, 2):
        return f"exit code {outcome.code!r}"
    if "Traceback" in outcome.err or "Traceback" in outcome.out:
        return "traceback printed"
    if outcome.seconds > budget:
        return f"slow: {outcome.seconds:.1f}s > {budget:.1f}s"
    for stream, text in (("stdout", outcome.out), ("stderr", outcome.err)):
        bad = [c for c in _ESC_BYTES if c in text]
        if bad:
            return f"raw control byte(s) {bad!r} on {stream} ({fmt})"
    if outcome.code == 2:
        names = [str(p) for p in inputs]
        if not outcome.err.strip():
            return "exit 2 without a message"
        if not any(n in outcome.err for n in names) and "inspector: error" not in outcome.err:
            return "exit 2 message names no input"
    if fmt == "json" and outcome.out.strip():
        try:
            report = json.loads(outcome.out)
        except ValueError as e:
            return f"json report does not parse ({e})"
        for f in report.get("findings", []):
            if not f.get("file"):
                return f"finding {f.get('rule')} names no file"
            if f.get("rule") in LINE_RULES and not isinstance(f.get("line"), int):
                return f"finding {f.get('rule')} names no line"
    return None


# Findings about a physical line: they must carry it.
LINE_RULES = frozenset({"LOG001", "LOG002", "LOG003", "LOG008", "LOG012", "LOG013"})


def failure_mode(exc: BaseException) -> str:
    """A stable name for a failure: exception type at the innermost frame of our code."""
    if isinstance(exc, Hang):
        return "Hang"
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if ("/invariants/" in f.filename or "/inspector/" in f.filename)]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    loc = f"{Path(where.filename).parent.name}/{Path(where.filename).name}:{where.name}" if where else "?"
    return f"{type(exc).__name__} at {loc}"


@dataclass
class Case:
    """Files to write in a fresh folder, and which of them to name on the command line."""

    files: dict[str, bytes]
    target: str  # the file (or "." for the folder) to check
    fmt: str = "json"
    command: str = "check"
    extra: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.files.values())


def write_case(case: Case, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return folder / case.target if case.target != "." else folder


def argv_for(case: Case, target: Path, flags: list[str]) -> list[str]:
    if case.command == "replay":
        return ["replay", str(target), *case.extra]
    if case.command == "reduce":
        return ["reduce", str(target), "--rule", "RULE", "--output", "repro"]
    return ["check", str(target), "--format", case.fmt, *flags, *case.extra]


INDEX_QUERIES = [
    "select * from sessions",
    "select * from findings",
    "select * from messages limit 50",
    "select * from steps limit 50",
    "select * from headers limit 20",
    "select * from captures",
]


def run_case(case: Case, folder: Path, flags: list[str] | None = None) -> tuple[Outcome, str | None]:
    """Write the case under ``folder``, run it, and judge it.

    ``index`` cases run the postmortem index over the folder (the database
    outside it), then read it back with ``sessions``, ``query`` and
    ``cache-report``; each command is judged on its own.
    """
    if case.command == "reduce" or (case.extra and case.extra[0].startswith("fault:")):
        from tests.support.fuzz_faults import run_fault_case, run_reduce  # reduce and the fault kinds (issue 34)

        return run_reduce(case, folder) if case.command == "reduce" else run_fault_case(case, folder)
    target = write_case(case, folder / "in")
    budget = time_budget(case.size)
    if case.command == "index":
        db = folder / "index" / "x.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        runs = [
            (["index", str(target), "--db", str(db), "-j", "1", "-q"], "text"),
            (["sessions", "--db", str(db)], "text"),
            (["sessions", "--db", str(db), "--format", "json"], "json-any"),
        ]
        runs += [
            (["query", q, "--db", str(db), "--format", case.fmt if case.fmt in ("json",) else "table"], "text")
            for q in INDEX_QUERIES
        ]
        runs += [(["cache-report", str(target)], "text")]
        for argv, fmt in runs:
            outcome = run_cli(argv, budget * 1.5)
            bad = verdict(outcome, fmt, [target, db], budget)
            if bad is not None:
                return outcome, f"{argv[0]}: {bad}"
        return outcome, None
    outcome = run_cli(argv_for(case, target, check_flags() if flags is None else flags), budget * 1.5)
    fmt = case.fmt if case.command == "check" else "replay"
    return outcome, verdict(outcome, fmt, [target], budget)


FORMATS = ("json", "text", "jsonl", "sarif", "junit", "github")
# File names an attacker controls in a sessions root (the last one is two undecodable bytes).
HOSTILE_NAMES = [
    "\x1b]52;c;ZXZpbA==\x07",
    "a\nb\rc",
    "[bold]x[/bold]",
    "\x1b[2J",
    "\u202eevil",
    "-rf",
    "..x",
    "\udcff\udcfe",
]


def _shape(line_obj: Any, path: tuple) -> tuple:
    t = line_obj.get("type") if isinstance(line_obj, dict) else None
    return (t if isinstance(t, str) else "?",) + tuple("[]" if isinstance(k, int) else k for k in path)


def sweep_points(seeds: list[Seed]) -> list[tuple[int, int, tuple]]:
    """Every distinct (event type, field path) of the seed logs, once: (seed index, line index, path).

    Paths whose list indices differ count as one field (``content[0].text`` is ``content[].text``).
    """
    seen: set[tuple] = set()
    out: list[tuple[int, int, tuple]] = []
    for si, seed in enumerate(seeds):
        lines, _ = split_lines(seed.log)
        for li, line in enumerate(lines):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for path in json_paths(obj):
                key = _shape(obj, path)
                if key not in seen:
                    seen.add(key)
                    out.append((si, li, path))
    return out


SWEEP_VALUES: list[Any] = WRONG_VALUES + [v for v in SEQ_VALUES if v not in WRONG_VALUES]


def sweep_case(seeds: list[Seed], point: tuple[int, int, tuple], value_index: int) -> tuple[Case, list[str]]:
    """The seed log with one field replaced by ``SWEEP_VALUES[value_index]`` (or the key removed, at len)."""
    si, li, path = point
    seed = seeds[si]
    lines, ends = split_lines(seed.log)
    obj = orjson.loads(lines[li])
    if value_index == len(SWEEP_VALUES):
        if not path:
            return Case({seed.log_name: seed.log}, seed.log_name), ["sweep"]
        parent = get_path(obj, path[:-1])
        del parent[path[-1]]
    else:
        obj = set_path(obj, path, SWEEP_VALUES[value_index])
    lines[li] = dump_json(obj)
    files = dict(seed.others)
    files[seed.log_name] = join_lines(lines, ends)
    if seed.capture is not None:
        files[seed.log_name.split(".jsonl")[0] + ".requests.jsonl"] = seed.capture
    fmt = FORMATS[(li + value_index) % len(FORMATS)]
    return Case(files, seed.log_name, fmt), ["sweep"]


def sweep_size(points: list) -> int:
    return len(points) * (len(SWEEP_VALUES) + 1)


def sweep_case_at(seeds: list[Seed], points: list, i: int) -> tuple[Case, list[str]]:
    return sweep_case(seeds, points[i // (len(SWEEP_VALUES) + 1)], i % (len(SWEEP_VALUES) + 1))


def sqlite_bytes(events_header: dict, events: list, schema: str) -> bytes:
    """A harness SQLite session database holding one session, as bytes."""
    import tempfile

    from invariants.read.sqlite_backend import write_database

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.sqlite"
        write_database(path, [(events_header, events)], schema=schema)
        return path.read_bytes()


def sqlite_case(rng: random.Random, seeds: list[Seed]) -> tuple[Case, list[str]]:
    """A SQLite session store built from a seed log, then damaged: rows with wrong types, or bytes."""
    seed = rng.choice([s for s in seeds if not s.name.startswith("corpus:")] or seeds)
    lines = []
    for x in seed.log.split(b"\n"):
        try:
            lines.append(orjson.loads(x))
        except orjson.JSONDecodeError:
            pass
    header, events = lines[0], [e for e in lines[1:] if isinstance(e, dict) and isinstance(e.get("seq"), int)]
    names = ["sqlite"]
    if rng.random() < 0.5:  # damage the events before storing them (types the columns do not expect)
        for _ in range(rng.randrange(1, 4)):
            if events:
                e = rng.choice(events)
                e[rng.choice(["data", "surfaceOp", "sourceEventSeqs", "type", "time"])] = rng.choice(WRONG_VALUES)
        names.append("sqlite-rows")
    try:
        data = sqlite_bytes(header, events, rng.choice(["seed", "head"]))
    except Exception:  # the writer refuses what it cannot store: store the header alone
        data = sqlite_bytes(header, [], "seed")
    if rng.random() < 0.5:
        data = rng.choice([m_truncate, m_bitflip, m_nul])(rng, data)
        names.append("sqlite-bytes")
    return Case({"s.sqlite": data}, rng.choice(["s.sqlite", "."]), rng.choice(FORMATS)), names


def random_case(rng: random.Random, seeds: list[Seed], max_stack: int = 3) -> tuple[Case, list[str]]:
    """One mutated case from a random seed: the mutators applied, and the case."""
    if rng.random() < 0.04:
        return sqlite_case(rng, seeds)
    seed = rng.choice(seeds)
    names = [rng.choice(STACKABLE) for _ in range(rng.randrange(1, max_stack + 1))]
    if rng.random() < 0.08:
        names.append(rng.choice(("deep-nesting", "crlf", "splice")))
    log = mutate(rng, seed.log, names)
    files = dict(seed.others)
    cap = seed.capture
    if cap is not None and rng.random() < 0.3:
        cap = capture_mutate(rng, cap)
        names.append("capture")
    log_name = seed.log_name
    if rng.random() < 0.15:
        log = to_zstd(log)
        log_name = log_name + ".zstd"
        names.append("zstd")
        if rng.random() < 0.6:
            log = rng.choice([m_truncate, m_bitflip, m_nul])(rng, log)
            names.append("zstd-damage")
        elif rng.random() < 0.2:
            log += zstd_bomb()
            names.append("zstd-bomb")
    if rng.random() < 0.05:
        log_name = rng.choice(HOSTILE_NAMES) + log_name[log_name.index(".jsonl") :]
        names.append("hostile-name")
    files[log_name] = log
    if cap is not None:
        files[log_name.split(".jsonl")[0] + ".requests.jsonl"] = cap
    r = rng.random()
    command = "replay" if r < 0.08 else "index" if r < 0.14 else "reduce" if r < 0.20 else "check"
    extra: list[str] = []
    if command != "check":
        names.append(command)
    if command == "replay" and rng.random() < 0.5:
        extra = ["--turn", str(rng.randrange(1, 4)), "--step", "1"]
    target = "." if command == "index" else log_name if rng.random() < 0.8 or command != "check" else "."
    return Case(files, target, rng.choice(FORMATS), command, extra), names
