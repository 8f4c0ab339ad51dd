"""`inspector reduce`: a reduced log reproduces its finding, is 1-minimal over the units, is small, redacts
content and, with --as-test, yields a passing regression test (run here with a conftest that provides an
``inspector_check`` fixture on ``invariants.check``, as the pytest plugin does)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from invariants import check
from tests.support.faults import assert_one_minimal, leaked

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_LOG = (
    CORPUS / "upstream-seed-era/core__agent-loop__loop/t16/a1-session-1ec47675-8deb-403e-9880-90b6ee31c5ff.jsonl"
)
# The project around a repro ignores the very rule the repro is for: the repro must not care.
PROJECT_CONFIG = 'ignore = ["DIV001", "request-divergence"]\n'
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "inspector.pytest_plugin")


def _reduce(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "inspector.cli", "reduce", *args], capture_output=True, text=True, cwd=ROOT
    )


def _generated(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(ROOT / "sample_logs/capture-divergence.jsonl", src / "capture-divergence.jsonl")
    shutil.copy(ROOT / "sample_logs/capture-divergence.requests.jsonl", src / "requests.jsonl")
    return src / "capture-divergence.jsonl"


def _dropped_message(tmp_path: Path) -> Path:
    """A corpus log whose last recorded request lost one message: a request divergence."""
    if not CORPUS_LOG.is_file():
        pytest.skip(f"corpus absent: {CORPUS_LOG}")
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(CORPUS_LOG, src / CORPUS_LOG.name)
    lines = [json.loads(x) for x in (CORPUS_LOG.parent / "requests.jsonl").read_text().splitlines() if x.strip()]
    lines[-1]["request"]["messages"].pop(1)
    (src / "requests.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return src / CORPUS_LOG.name


def _first_rule(log: Path) -> str:
    found = [f.rule for f in check(log).findings if f.rule.startswith(("DIV", "REQ", "PFX"))]
    assert found, "the injected fault shows no finding"
    return found[0]


@pytest.mark.parametrize("make", [_generated, _dropped_message], ids=["generated", "corpus-dropped-message"])
def test_reduced_log_reproduces_is_minimal_and_small(tmp_path, make):
    log = make(tmp_path)
    rule = _first_rule(log)
    before = {p.name: p.read_bytes() for p in log.parent.iterdir()}
    out = tmp_path / "out"
    done = _reduce(str(log), "--rule", rule, "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in log.parent.iterdir()} == before  # inputs untouched
    assert sorted(p.name for p in out.iterdir()) == sorted([log.name, "repro.json", "requests.jsonl"])
    assert rule in {f.rule for f in check(out / log.name).findings}
    manifest = json.loads((out / "repro.json").read_text())
    assert manifest["rule"] == rule and manifest["redacted"] is False
    assert manifest["events"]["after"] * 2 <= manifest["events"]["before"]
    assert manifest["source"]["name"] == log.name and len(manifest["source"]["sha256"]) == 64
    assert_one_minimal(out / log.name, rule)


@pytest.mark.parametrize("make", [_generated, _dropped_message], ids=["generated", "corpus-dropped-message"])
def test_redacted_repro_keeps_no_long_content_string(tmp_path, make):
    log = make(tmp_path)
    rule = _first_rule(log)
    out = tmp_path / "out"
    done = _reduce(str(log), "--rule", rule, "--output", str(out), "--redact")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "repro.json").read_text())
    assert manifest["redacted"] is True
    assert rule in {f.rule for f in check(out / log.name).findings}
    kept = {k["string"] for k in manifest["kept"]}
    found = leaked(sorted(log.parent.iterdir()), [out / log.name, out / "requests.jsonl"], kept)
    assert not found, found[:3]


def test_as_test_repro_passes_under_pytest_and_fails_without_the_fault(tmp_path):
    log = _generated(tmp_path)
    out = tmp_path / "out"
    assert _reduce(str(log), "--rule", "DIV001", "--output", str(out), "--as-test", "--redact").returncode == 0
    (out / "inspector.toml").write_text(PROJECT_CONFIG)
    (test,) = out.glob("test_repro_*.py")
    assert re.fullmatch(r"test_repro_div001_[0-9a-f]{8}\.py", test.name)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = [*PYTEST, "-m", "inspector", str(test)]
    done = subprocess.run(run, capture_output=True, text=True, cwd=out, env=env)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    (out / "requests.jsonl").unlink()  # no recorded request: no divergence
    assert subprocess.run(run, capture_output=True, text=True, cwd=out, env=env).returncode == 1


def test_two_repros_in_one_tree_have_their_own_names_and_both_run(tmp_path):
    """Without packages, pytest refuses two test modules of one name; each repro's name carries its digest."""
    log = _generated(tmp_path)
    for out, extra in ((tmp_path / "tree" / "a", ()), (tmp_path / "tree" / "b", ("--redact",))):
        assert _reduce(str(log), "--rule", "DIV001", "--output", str(out), "--as-test", *extra).returncode == 0
    names = [p.name for p in sorted((tmp_path / "tree").glob("*/test_repro_*.py"))]
    assert len(names) == 2 and len(set(names)) == 2, names
    (tmp_path / "tree" / "inspector.toml").write_text(PROJECT_CONFIG)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([*PYTEST, "tree"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_a_finding_not_in_the_log_exits_1_and_lists_the_findings(tmp_path):
    log = _generated(tmp_path)
    done = _reduce(str(log), "--rule", "FRK001", "--output", str(tmp_path / "out"))
    assert done.returncode == 1
    assert re.search(r"DIV001 seq \d+", done.stderr) and not (tmp_path / "out").exists()


def test_unreadable_input_exits_2(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"type":"session"\n')
    done = _reduce(str(bad), "--rule", "DIV001", "--output", str(tmp_path / "out"))
    assert done.returncode == 2 and "x.jsonl:1" in done.stderr
    assert _reduce(str(tmp_path / "missing.jsonl"), "--rule", "DIV001", "--output", str(tmp_path / "o")).returncode == 2


def test_the_documented_worked_example_runs(tmp_path):
    text = (ROOT / "docs" / "REDUCE.md").read_text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.replace("/tmp/repro", str(tmp_path / "repro")).split() for line in block.splitlines() if line]
    assert [c[:2] for c in commands] == [["inspector", "reduce"], ["inspector", "check"]]
    first = subprocess.run(
        [sys.executable, "-m", "inspector.cli", *commands[0][1:]], capture_output=True, text=True, cwd=ROOT
    )
    assert first.returncode == 0 and first.stdout.startswith("DIV001 reproduced: 229 -> 10 events"), first.stderr
    second = subprocess.run(
        [sys.executable, "-m", "inspector.cli", *commands[1][1:]], capture_output=True, text=True, cwd=ROOT
    )
    assert second.returncode == 1 and "DIV001" in second.stdout  # the repro shows the divergence
    assert {p.name for p in (tmp_path / "repro").iterdir()} == {
        "capture-divergence.jsonl",
        "requests.jsonl",
        "repro.json",
        next(p.name for p in (tmp_path / "repro").glob("test_repro_div001_*.py")),
    }


def test_reduction_is_deterministic(tmp_path):
    log = _generated(tmp_path)
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        assert _reduce(str(log), "--rule", "DIV001", "--output", str(out), "--redact").returncode == 0
    a, b = ({p.name: p.read_bytes() for p in out.iterdir() if p.name != "repro.json"} for out in outs)
    assert a == b and len(a) == 2
    ma, mb = (json.loads((out / "repro.json").read_text()) for out in outs)
    assert {**ma, "seconds": 0} == {**mb, "seconds": 0}


def test_max_seconds_returns_the_best_so_far_and_says_so(tmp_path):
    log = _generated(tmp_path)
    out = tmp_path / "out"
    done = _reduce(str(log), "--rule", "DIV001", "--output", str(out), "--max-seconds", "0")
    assert done.returncode == 0, done.stderr
    assert "time limit reached: best so far" in done.stdout
    manifest = json.loads((out / "repro.json").read_text())
    assert manifest["timed_out"] is True and manifest["events"]["after"] == manifest["events"]["before"]
    assert "DIV001" in {f.rule for f in check(out / log.name).findings}


def test_a_non_empty_output_folder_is_refused_unless_forced(tmp_path):
    log = _generated(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "notes.txt"
    mine.write_text("mine")
    done = _reduce(str(log), "--rule", "DIV001", "--output", str(out))
    assert done.returncode == 2 and "not empty" in done.stderr and "--force" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"] and mine.read_text() == "mine"
    (tmp_path / "file").write_text("x")
    assert _reduce(str(log), "--rule", "DIV001", "--output", str(tmp_path / "file")).returncode == 2
    done = _reduce(str(log), "--rule", "DIV001", "--output", str(out), "--force")
    assert done.returncode == 0, done.stderr
    assert "repro.json" in {p.name for p in out.iterdir()} and mine.read_text() == "mine"
