"""The fleet benchmark still runs: a benchmark nobody runs breaks unseen (``--small``, now ``--shape
small``, failed with a TypeError for a whole round).  Tiny roots, every shape, both harness layouts;
the figures are not checked, only that every mode ran, checked the generated sessions and gave the
serial report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fleet(root: Path, *flags: str, sessions: int = 8) -> str:
    """``benchmarks/fleet.py`` on ``sessions`` generated into ``root`` (kept), no Dask overhead
    measured; its output, once it exited 0."""
    pytest.importorskip("psutil")
    argv = [sys.executable, str(ROOT / "benchmarks" / "fleet.py"), "--sessions", str(sessions), "--keep", str(root)]
    done = subprocess.run([*argv, *flags, "--no-overhead"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("flags", "modes", "logs"),
    [
        (["--shape", "small"], "serial", "*/*/session.jsonl"),
        (["--shape", "steps"], "serial", "*/*/session.jsonl"),
        (["--templates", "4", "--layout", "cwd"], "serial,jobs2", "cwd-*/fleet-*[0-9].jsonl"),
        (["--layout", "cwd", "--no-captures"], "serial", "cwd-*/fleet-*[0-9].jsonl"),
    ],
)
def test_fleet_benchmark_runs(tmp_path: Path, flags: list[str], modes: str, logs: str) -> None:
    root = tmp_path / "root"
    out = _fleet(root, *flags, "--modes", modes)
    assert len(list(root.glob(logs))) == 8
    captures = list(root.rglob("*requests.jsonl"))
    assert len(captures) == (0 if "--no-captures" in flags else 2)
    rows = [line for line in out.splitlines() if line.split()[:1] in (["serial"], ["jobs2"])]
    assert [r.split()[0] for r in rows] == modes.split(",")
    assert all(r.endswith("identical (exit 0)") for r in rows), out


def test_fleet_benchmark_forks_are_children_of_the_session_before(tmp_path: Path) -> None:
    """``--forks``: every second session a fork of the one before it, each with an id of its own (also the
    copies of a template), its seed compared with its parent and found clean."""
    import orjson

    from invariants import check

    root = tmp_path / "root"
    _fleet(root, "--shape", "small", "--templates", "4", "--forks", "--modes", "serial")
    heads = [orjson.loads(p.read_bytes().split(b"\n", 1)[0]) for p in sorted(root.glob("*/fleet-*/session.jsonl"))]
    assert len({h["id"] for h in heads}) == 8
    by_id = {h["id"]: h for h in heads}
    children = [h for h in heads if "parentSession" in h]
    assert len(children) == 4 and all(h["seedLength"] > 0 and h["parentSession"] in by_id for h in children)
    result = check([root])
    assert result.findings == [] and result.problems == []
    assert sum(r.status == "ok" for r in result.requests) == len(result.requests) > 0


def test_fleet_benchmark_zstd_writes_late_logs_of_many_frames_that_check_clean(tmp_path: Path) -> None:
    """``--zstd LINES``: every log as the late harness stores it, a zstd frame per few lines (its append
    batches), linked copies linked again; checked clean, so the root's cost is the storage's, and its
    floor decompresses what it parses."""
    from invariants import check
    from invariants.read.zstdio import iter_frames

    root = tmp_path / "root"
    out = _fleet(root, "--shape", "small", "--templates", "4", "--zstd", "4", "--modes", "serial")
    logs = sorted(root.glob("*/fleet-*/session.jsonl*"))
    assert len(logs) == 8 and all(p.name == "session.jsonl.zstd" for p in logs)
    assert len({p.stat().st_ino for p in logs}) == 4
    with logs[0].open("rb") as fh:
        frames = list(iter_frames(fh))
    assert len(frames) > 4 and all(f.count(b"\n") <= 4 for f in frames[1:])
    result = check([root])
    assert result.findings == [] and result.problems == [] and len(result.sessions) == 8
    (row,) = [line for line in out.splitlines() if line.startswith("serial")]
    assert row.endswith("identical (exit 0)") and float(row.split()[2]) > 0


@pytest.mark.parametrize("layout", ["project", "cwd"])
def test_fleet_benchmark_faults_are_the_same_findings_in_a_root_of_any_size(tmp_path: Path, layout: str) -> None:
    """``--faults K``: sessions 0..K-1 each get one finding's cause, one of each kind, and the copies
    of a faulted template stay clean, so a root of 8 and one of 16 sessions hold the same findings."""
    from invariants import check

    found = []
    for n in (8, 16):
        root = tmp_path / f"root{n}"
        flags = ["--shape", "small", "--templates", "4", "--layout", layout, "--faults", "4"]
        out = _fleet(root, *flags, "--modes", "serial,jobs2", sessions=n)
        rows = [line for line in out.splitlines() if line.split()[:1] in (["serial"], ["jobs2"])]
        assert len(rows) == 2 and all(r.endswith("identical (exit 1)") for r in rows), out
        result = check([root])
        found.append(sorted((Path(f.file).relative_to(root).as_posix(), f.rule) for f in result.findings))
    assert found[0] == found[1]
    faulted = {name for name, _ in found[0]}
    assert len(faulted) == 4  # sessions 0..3: one a request the log does not explain, three logs
    rules = {rule for _, rule in found[0]}
    assert {"LOG001", "LOG003", "LOG004"} <= rules and any(r.startswith("DIV") for r in rules), rules


def test_fleet_benchmark_per_folder_makes_one_flat_folder_of_distinct_sessions(tmp_path: Path) -> None:
    """``--layout cwd --per-folder N``: N sessions in one project folder; the copies of a template
    get their own id, and their captures name their own log, so no capture routes to another log
    (each log is a unit alone: a copy's capture naming its template's file grouped them all)."""
    import orjson

    from invariants import check
    from invariants.gate.unit import iter_units
    from invariants.read.discover import iter_discover

    root = tmp_path / "root"
    flags = ["--shape", "small", "--templates", "4", "--layout", "cwd", "--per-folder", "16"]
    _fleet(root, *flags, "--modes", "serial", sessions=16)
    logs = sorted(root.glob("cwd-*/fleet-*[0-9].jsonl"))
    assert len(logs) == 16 and len({p.parent for p in logs}) == 1
    assert len({orjson.loads(p.read_bytes().split(b"\n", 1)[0])["id"] for p in logs}) == 16
    for capture in root.glob("cwd-*/*.requests.jsonl"):
        first = orjson.loads(capture.read_bytes().split(b"\n", 1)[0])
        assert first["sessionFile"] == capture.name.replace(".requests", "")
    units = list(iter_units(iter_discover([root], [])))
    assert len(units) == 16 and all(len(u.sources) == 1 for u in units)
    result = check([root])
    assert result.findings == [] and result.problems == []
    assert sum(r.status == "ok" for r in result.requests) == len(result.requests) > 0


def test_fleet_benchmark_with_the_cache_runs_each_mode_cold_then_warm(tmp_path: Path) -> None:
    """``--cache`` measures ``inspector check`` as it runs by default: a mode cold, then warm from the
    same cache folder, each report identical to the first."""
    out = _fleet(tmp_path / "root", "--layout", "cwd", "--per-folder", "8", "--cache", "--modes", "serial,jobs2")
    rows = [line for line in out.splitlines() if line.startswith(("serial/", "jobs2/"))]
    assert [r.split()[0] for r in rows] == ["serial/cold", "serial/warm", "jobs2/cold", "jobs2/warm"]
    assert all(r.endswith("identical (exit 0)") for r in rows), out
