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
    pytest.importorskip("psutil")
    root = tmp_path / "root"
    argv = [sys.executable, str(ROOT / "benchmarks" / "fleet.py"), "--sessions", "8", "--keep", str(root)]
    done = subprocess.run(
        [*argv, *flags, "--modes", modes, "--no-overhead"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert len(list(root.glob(logs))) == 8
    captures = list(root.rglob("*requests.jsonl"))
    assert len(captures) == (0 if "--no-captures" in flags else 2)
    rows = [line for line in done.stdout.splitlines() if line.split()[:1] in (["serial"], ["jobs2"])]
    assert [r.split()[0] for r in rows] == modes.split(",")
    assert all(r.endswith("identical (exit 0)") for r in rows), done.stdout
