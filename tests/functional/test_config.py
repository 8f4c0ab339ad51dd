"""Configuration: inspector.toml / [tool.inspector], precedence (flags over file), per-path ignores."""

from __future__ import annotations

import json
import shutil

import pytest

from inspector.cli import main
from invariants.gate.config import ConfigError, find_config, load_config
from invariants.gate.policy import expand_severity, path_ignored
from tests.conftest import SAMPLES


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository with two logs under logs/ and one under fixtures/; cwd is its root."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "logs").mkdir()
    (tmp_path / "fixtures").mkdir()
    for name in ("capture-divergence.jsonl", "capture-divergence.requests.jsonl", "resume-prefix-drift.jsonl"):
        shutil.copy(SAMPLES / name, tmp_path / "logs" / name)
    shutil.copy(SAMPLES / "corrupt-delta.jsonl", tmp_path / "fixtures" / "corrupt-delta.jsonl")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rules_of(out: str) -> list[str]:
    return sorted(f["rule"] for f in json.loads(out)["findings"])


def test_pyproject_settings_apply_and_flags_win(capsys, project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.inspector]\nselect = ["DIV", "prefix-drift"]\nfail-on = "warning"\nformat = '
        '"json"\n'
        'cache = false\n\n[tool.inspector.severity]\nPFX002 = "info"\n'
    )
    code, out, _ = run(capsys, "check", "logs")
    assert rules_of(out) == ["DIV001", "DIV010", "PFX002"]
    sev = {f["rule"]: f["severity"] for f in json.loads(out)["findings"]}
    assert sev["PFX002"] == "info" and code == 1
    # flags over the file: --select replaces, --severity overrides an entry, --fail-on and --format win
    code, out, _ = run(
        capsys, "check", "logs", "--select", "PFX002", "--severity", "PFX002=warning", "--fail-on", "error"
    )
    assert rules_of(out) == ["PFX002"] and json.loads(out)["findings"][0]["severity"] == "warning" and code == 0
    code, out, _ = run(capsys, "check", "logs", "--format", "text", "--select", "DIV010")
    assert out.startswith("logs/capture-divergence.jsonl") and "DIV010" in out and code == 1
    # --isolated ignores the file altogether
    code, out, _ = run(capsys, "check", "logs", "--isolated", "--no-cache")
    assert "PFX002" in out and "DIV001" in out and code == 1 and not out.startswith("{")


def test_inspector_toml_beats_pyproject_and_per_path_ignores(capsys, project):
    (project / "pyproject.toml").write_text('[tool.inspector]\nselect = ["DIV010"]\n')
    (project / "inspector.toml").write_text(
        'ignore = ["PFX003"]\ncache = false\nformat = "json"\n\n[per-path-ignores]\n"fixtures/**" = ["header-codec"]\n'
        '"capture-divergence.jsonl" = ["DIV010"]\n'
    )
    assert find_config(project) == project / "inspector.toml"
    code, out, _ = run(capsys, "check", "logs", "fixtures")
    assert rules_of(out) == ["DIV001", "PFX002"]
    assert path_ignored("fixtures/corrupt-delta.jsonl", "HDR002", {"fixtures/**": ["HDR"]}, project)
    assert not path_ignored("logs/corrupt-delta.jsonl", "HDR002", {"fixtures/**": ["HDR"]}, project)


def test_severity_by_category_and_code_most_specific_wins():
    table = expand_severity({"PFX002": "error", "prefix-drift": "info", "PFX": "warning"})
    assert table["PFX002"] == "error" and table["PFX003"] == "warning" and table["PFX001"] == "warning"
    assert expand_severity({"fork-seed": "warning"})["FRK001"] == "warning"


@pytest.mark.parametrize(
    "text, needle",
    [
        ('selec = ["DIV"]', "unknown key"),
        ('select = ["NOPE123"]', "unknown rule selector"),
        ('fail-on = "fatal"', "fail-on"),
        ('[severity]\nDIV001 = "loud"', "severity"),
        ("jobs = -1", "jobs"),
        ("select = [", "not valid TOML"),
    ],
)
def test_bad_configuration_is_a_usage_error(capsys, project, text, needle):
    (project / "inspector.toml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=needle):
        load_config(project / "inspector.toml")
    code, _, err = run(capsys, "check", "logs", "--no-cache")
    assert code == 2 and needle.split()[0] in err


def test_unknown_selector_on_the_command_line_is_a_usage_error(capsys, project):
    assert run(capsys, "check", "logs", "--select", "DIV999", "--no-cache")[0] == 2
    assert run(capsys, "check", "logs", "--severity", "DIV001", "--no-cache")[0] == 2


def test_config_search_stops_at_the_repository_root(tmp_path, monkeypatch):
    (tmp_path / "inspector.toml").write_text('select = ["DIV"]\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert find_config(repo / "sub") is None
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.inspector]: not ours
    assert find_config(repo / "sub") is None
    (repo / "pyproject.toml").write_text('[tool.inspector]\nignore = ["LOG"]\n')
    assert find_config(repo / "sub") == repo / "pyproject.toml"
    assert load_config(start=repo / "sub").ignore == ["LOG"]


def test_rules_lists_category_severity_and_rationale_with_configured_marks(capsys, project):
    (project / "inspector.toml").write_text('[severity]\nPFX002 = "error"\n')
    code, out, _ = run(capsys, "rules")
    line = next(x for x in out.splitlines() if x.strip().startswith("PFX002"))
    assert code == 0 and "error  *" in line and "prefix-drift-at-resume" in line
    assert "prefix-drift" in out.splitlines()  # the category heading
    code, out, _ = run(capsys, "rules", "PFX002")
    assert "default warning; configured error" in out and "Example:" in out
    code, out, _ = run(capsys, "rules", "--format", "json", "--isolated")
    rows = json.loads(out)
    assert all(set(r) >= {"code", "category", "severity", "rationale"} for r in rows) and len(rows) > 40
    code, out, _ = run(capsys, "rules", "fork-seed")
    assert "FRK001" in out and "DIV001" not in out
