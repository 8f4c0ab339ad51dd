"""Hostile input, the CI slice: the real CLI on mutated logs and captures.

Every case must end with exit 0, 1 or 2 and findings (or one clear error
naming the input), never a traceback, never a hang, within a time budget
proportional to its size (see ``tests/support/fuzz_cases.py`` for the verdict and
SECURITY.md for the promises).  ``benchmarks/fuzz_long.py`` runs the same
cases for as long as you like; this slice is bounded and derandomized so CI
is stable and stays well under a minute.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz_cases import Case, check_flags, random_case, run_case, sweep_case_at, sweep_points, sweep_size
from tests.support.fuzz_inputs import ROOT, corpus_seeds, deep_json, sample_seeds, to_zstd
from tests.support.fuzz_mutators import MUTATORS, STACKABLE, capture_mutate, mutate
from tests.support.fuzz_structured import structured_case

SEEDS = sample_seeds()
SMALL = sorted(SEEDS, key=lambda s: len(s.log))[:8]
POINTS = sweep_points(SEEDS)
FLAGS = check_flags()


def fuzz(n: int) -> settings:
    return settings(
        max_examples=n, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
    )


def _run(case: Case) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as d:
        outcome, bad = run_case(case, Path(d) / "case", FLAGS)
        assert bad is None, f"{bad}\n{outcome.tb}\nexit {outcome.code}\nstderr: {outcome.err[-2000:]}"


def _case(seed, log: bytes, name: str | None = None, fmt: str = "json", capture: bytes | None = None) -> Case:
    name = name or seed.log_name
    files = dict(seed.others)
    files[name] = log
    cap = seed.capture if capture is None else capture
    if cap is not None:
        files[name.split(".jsonl")[0] + ".requests.jsonl"] = cap
    return Case(files, name, fmt)


@fuzz(60)
@given(st.sampled_from(SMALL), st.floats(0, 1), st.booleans())
def test_truncated_at_any_byte(seed, where, compressed):
    data = to_zstd(seed.log) if compressed else seed.log
    cut = data[: int(len(data) * where)]
    _run(_case(seed, cut, seed.log_name + (".zstd" if compressed else "")))


@fuzz(160)
@given(
    st.sampled_from(SEEDS),
    st.lists(st.sampled_from(STACKABLE), min_size=1, max_size=4),
    st.integers(0, 2**32),
    st.sampled_from(["json", "text", "jsonl", "sarif", "junit", "github"]),
)
def test_mutated_logs(seed, names, rng_seed, fmt):
    """Bit flips, invalid UTF-8, NULs, blank/duplicated/reordered/deleted lines, wrong types,
    bad numbers, surface replaces that point nowhere, malformed delta arms, hostile text."""
    log = mutate(random.Random(rng_seed), seed.log, names)
    _run(_case(seed, log, fmt=fmt))


@fuzz(150)
@given(st.integers(0, sweep_size(POINTS) - 1))
def test_wrong_type_in_every_field(i):
    """A slice of the sweep: each distinct field of the sample logs x every wrong JSON value."""
    _run(sweep_case_at(SEEDS, POINTS, i)[0])


@fuzz(50)
@given(st.sampled_from(SMALL), st.integers(0, 2**32), st.sampled_from(["truncate", "bitflip", "nul", "bad-utf8"]))
def test_corrupt_and_truncated_zstd_frames(seed, rng_seed, how):
    data = MUTATORS[how](random.Random(rng_seed), to_zstd(seed.log, batch=3))
    _run(_case(seed, data, seed.log_name + ".zstd"))


@fuzz(50)
@given(st.sampled_from([s for s in SEEDS if s.capture]), st.integers(0, 2**32), st.booleans())
def test_hostile_captures(seed, rng_seed, compressed):
    """Capture lines that are not objects, wrong-typed fields, sessionFile paths that leave the folder."""
    cap = capture_mutate(random.Random(rng_seed), seed.capture)
    if compressed:
        case = _case(seed, seed.log, capture=b"")
        case.files = {k: v for k, v in case.files.items() if not k.endswith(".requests.jsonl")}
        case.files[seed.log_name.split(".jsonl")[0] + ".requests.jsonl.zstd"] = to_zstd(cap)[
            : random.Random(rng_seed).randrange(1, 10**6)
        ]
    else:
        case = _case(seed, seed.log, capture=cap)
    _run(case)


@fuzz(40)
@given(st.integers(0, 2**32))
def test_random_cases_like_the_long_run(rng_seed):
    """The long run's own case generator (stacked mutators, zstd, folders, replay), a few dozen cases."""
    seeds = SEEDS + corpus_seeds(limit=4)
    _run(random_case(random.Random(rng_seed), seeds)[0])


@fuzz(120)
@given(st.integers(0, 2**32))
def test_structured_hostile_logs(rng_seed):
    """Logs that follow the event vocabulary (so they reach the header fold, delta apply, surface
    replaces, projections, request rebuild, comparison and fork seeds) with wrong-kind values inside."""
    _run(structured_case(random.Random(rng_seed))[0])


def test_the_verdict_catches_what_it_must(monkeypatch):
    """The harness is not vacuous: an exception, a raw escape and a bad exit code are failures."""
    import inspector.commands.check as check_cmd
    from tests.support.fuzz_cases import Outcome, verdict

    seed = SMALL[0]
    monkeypatch.setattr(check_cmd, "run", lambda args: (_ for _ in ()).throw(KeyError("boom")))
    with tempfile.TemporaryDirectory() as d:
        outcome, bad = run_case(_case(seed, seed.log), Path(d) / "c", FLAGS)
    assert bad and "KeyError" in bad
    assert verdict(Outcome(1, "x\x1b[2Jy", "", 0.1), "text", [], 10) is not None
    assert verdict(Outcome(3, "", "", 0.1), "text", [], 10) is not None
    assert verdict(Outcome(1, "", "Traceback (most recent call last)", 0.1), "text", [], 10) is not None
    assert verdict(Outcome(0, "", "", 11.0), "text", [], 10) is not None


# -- a handful through a real process: no traceback on stderr, ever ----------------

NASTY = {
    "deep.jsonl": lambda s: s.log.replace(b"\n", b"\n" + deep_json(100_000, "object") + b"\n", 2),
    "nul.jsonl": lambda s: s.log[:500] + b"\x00" * 4096 + s.log[500:],
    "utf8.jsonl": lambda s: s.log[:300] + b"\xff\xfe\xed\xa0\x80" + s.log[300:],
    "torn.jsonl.zstd": lambda s: to_zstd(s.log, batch=2)[:-7],
    "flipped.jsonl.zstd": lambda s: MUTATORS["bitflip"](random.Random(3), to_zstd(s.log, batch=2)),
    "notjson.jsonl": lambda s: b"\x1b]52;c;ZXZpbA==\x07\n[bold]x[/bold]\n",
    "empty.jsonl": lambda s: b"",
}


@pytest.mark.parametrize("name", sorted(NASTY))
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_subprocess_never_prints_a_traceback(tmp_path, name, fmt):
    seed = SMALL[0]
    path = tmp_path / name
    path.write_bytes(NASTY[name](seed))
    proc = subprocess.run(
        [sys.executable, "-m", "inspector.cli", "check", str(path), "--format", fmt, *FLAGS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert str(path) in proc.stdout + proc.stderr  # the file is named


def test_subprocess_replay_and_folder(tmp_path):
    seed = SMALL[0]
    (tmp_path / "a.jsonl").write_bytes(NASTY["deep.jsonl"](seed))
    (tmp_path / "b.jsonl.zstd").write_bytes(NASTY["torn.jsonl.zstd"](seed))
    (tmp_path / "requests.jsonl").write_bytes(b"[]\n1\nnull\n" + deep_json(100_000, "object") + b"\n")
    for argv in (
        ["check", str(tmp_path), *FLAGS],
        ["replay", str(tmp_path / "a.jsonl")],
        ["replay", str(tmp_path / "b.jsonl.zstd")],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "inspector.cli", *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, (argv, proc.stderr)


# -- size: a 50 MB line ------------------------------------------------------------


def _fifty_mb_log(tmp_path: Path) -> Path:
    seed = SMALL[0]
    lines = seed.log.split(b"\n")
    big = (
        b'{"type":"user/message","seq":2,"time":1,"data":{"content":[{"type":"text","text":"'
        + b"a" * 50_000_000
        + b'"}]},"surfaceOp":"append"}'
    )
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\n".join(lines[:3] + [big] + lines[3:]))
    return path


def test_fifty_mb_line_in_bounded_memory_and_time(tmp_path):
    """In a child process, with a time guard; peak resident memory stays a small multiple of the line.

    The bound is on resident memory (the child's own VmHWM), not on address
    space: recent orjson builds reserve address space they never touch, and
    under RLIMIT_AS a failed reservation crashes the parser rather than raising.
    """
    path = _fifty_mb_log(tmp_path)
    code = (
        "import re, sys\n"
        "from inspector.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
        "sys.stderr.write(f'\\nVmHWM {hwm.group(1) if hwm else 0}\\n')\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "check", str(path), "--format", "json", *FLAGS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    peak_kib = int(proc.stderr.rsplit("VmHWM ", 1)[1].split()[0])
    assert 0 < peak_kib < 700 * 1024, f"peak RSS {peak_kib} KiB for a 50 MB line"


def test_a_line_over_max_line_is_never_held(tmp_path):
    """With ``max_line`` a 50 MB log line and a 50 MB capture line are skipped in blocks: Python
    allocations stay near the limit.  (The era sniffer and the capture reader used to ignore
    ``max_line`` and read both whole: a 144 MiB peak.)"""
    import tracemalloc

    from invariants import CheckOptions, check

    path = _fifty_mb_log(tmp_path)
    (tmp_path / "requests.jsonl").write_bytes(b'{"request":{"messages":["' + b"b" * 50_000_000 + b'"]}}\n')
    tracemalloc.start()
    try:
        result = check([path], CheckOptions(max_line=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 << 20, f"peak {peak / 2**20:.1f} MiB"
    over = [(f.rule, f.line, f.file) for f in result.findings if f.rule in ("LOG008", "LOG013")]
    assert over == [("LOG008", 4, str(path)), ("LOG013", 1, str(tmp_path / "requests.jsonl"))]
