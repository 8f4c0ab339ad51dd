"""The public Python API: ``from invariants import check``; docs/API.md's example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import invariants
from invariants import CheckOptions, Config, ConfigError, RequestCheck, SessionSummary, check
from tests.conftest import ROOT, SAMPLES


def _readme_example() -> str:
    text = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return code


def test_the_documented_example_runs():
    proc = subprocess.run(
        [sys.executable, "-c", _readme_example()], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "capture-divergence.jsonl:3 DIV001 error" in proc.stdout


def test_all_names_the_public_api_and_every_name_resolves():
    assert "check" in invariants.__all__ and "CheckResult" in invariants.__all__
    assert all(hasattr(invariants, name) for name in invariants.__all__)
    assert sorted(invariants.__all__) == invariants.__all__


def test_check_gives_typed_results_equal_to_the_gate(capsys):
    from inspector.cli import main

    result = check(SAMPLES / "capture-divergence.jsonl")
    assert all(isinstance(s, SessionSummary) for s in result.sessions)
    assert all(isinstance(r, RequestCheck) and r.recorded is None for r in result.requests)
    assert [r.file for r in result.requests] == [str(SAMPLES / "capture-divergence.requests.jsonl")] * 7
    assert result.models == [] and not result.ok and result.failed("error")
    main(["check", str(SAMPLES / "capture-divergence.jsonl"), "--format", "json", "--no-cache", "--isolated"])
    from invariants.gate.formats import render

    assert render(result, "json") + "\n" == capsys.readouterr().out


def test_keep_models_keeps_the_replays_and_live_verdicts():
    result = check([SAMPLES / "capture-divergence.jsonl"], keep_models=True)
    (model,) = result.models
    assert model.id == result.sessions[0].session and len(model.steps) == result.sessions[0].steps
    assert [r.recorded.line for r in result.requests] == [r.line for r in result.requests] == list(range(1, 8))


def test_options_and_config_change_what_is_read_and_reported():
    forced = check(SAMPLES / "clean-multi-turn.jsonl", CheckOptions(profile="seed-suffix"))
    assert forced.sessions[0].profile == "seed-suffix"
    result = check(SAMPLES / "capture-divergence.jsonl", config=Config(ignore=["DIV010"], severity={"DIV001": "info"}))
    assert [(f.rule, f.severity) for f in result.findings] == [("DIV001", "info")] and result.ok
    with pytest.raises(ConfigError, match="unknown rule selector"):
        Config(select=["DIV99"])
