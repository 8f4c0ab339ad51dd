"""docs/CI.md, "Use in CI": the command list, the GitHub Actions workflow and the GitLab CI file.

The YAML is parsed as the CI service would read it; every ``inspector``
command in it is run (in this process, through ``inspector.cli.main``) in a
folder whose ``recordings/`` is a copy of ``sample_logs/``, and its exit code
is the one the job relies on: 0 where a failing command would fail the job,
1 on the gate when a recording brings a finding the baseline does not know.
Other commands (pip, npm) are the user's and are not run.
"""

from __future__ import annotations

import json
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from inspector.cli import main
from invariants.gate.result_cache import DEFAULT_CACHE_DIR
from tests.conftest import ROOT, SAMPLES
from tests.support.readme import block_named, commands, fenced_blocks

CI_DOC = ROOT / "docs" / "CI.md"
NEW = "capture-divergence"  # the recording added after the baseline was written: DIV001 and DIV010
NEW_SESSION = "7bb4a066-9210-4919-89c7-a783a0f2372e"


def ci_commands() -> list[str]:
    return [c for block in fenced_blocks(CI_DOC.read_text(encoding="utf-8"), "sh") for c in commands(block)]


def inspector_commands(lines) -> list[str]:
    return [line for line in lines if line.startswith("inspector ")]


def run(capsys, command: str) -> tuple[int, str]:
    """Run one `inspector ...` command line in the working directory: (exit code, stdout)."""
    argv = shlex.split(command)
    assert argv[0] == "inspector"
    try:
        code = main(argv[1:])
    except SystemExit as exc:  # argparse: a usage error in the documentation
        code = exc.code
    out, _ = capsys.readouterr()
    return code, out


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A checkout with ``recordings/`` (every sample but ``NEW``) and a committed baseline of their findings."""
    shutil.copytree(SAMPLES, tmp_path / "recordings", ignore=shutil.ignore_patterns(f"{NEW}.*"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_baseline(capsys) -> None:
    (command,) = [c for c in ci_commands() if "--write-baseline inspector-baseline.json" in c]
    assert run(capsys, command)[0] == 0
    assert json.loads(Path("inspector-baseline.json").read_text())["findings"]


def add_new_recording() -> None:
    for path in SAMPLES.glob(f"{NEW}.*"):
        shutil.copy2(path, Path("recordings") / path.name)


def test_the_command_list_exits_one_on_findings_and_zero_with_exit_zero(workspace, capsys):
    listed = [c for c in inspector_commands(ci_commands()) if "baseline" not in c]
    assert len(listed) >= 7
    outputs = {}
    for command in listed:
        code, out = run(capsys, command)
        assert code == (0 if "--exit-zero" in command else 1), command
        outputs[command] = out
    assert outputs["inspector check recordings/ --jobs 0"] == outputs["inspector check recordings/"]
    assert all(x.startswith("::") for x in outputs["inspector check recordings/ --format github"].splitlines())
    assert json.loads(Path("inspector.sarif").read_text())["version"] == "2.1.0"
    assert ET.parse("inspector.xml").getroot().get("failures") == "2"  # corrupt-delta, prefix-unstable: errors


def github_workflow() -> dict:
    doc = yaml.safe_load(block_named(CI_DOC, "yaml", "# .github/workflows/sessions.yml"))
    assert doc[True] == ["push", "pull_request"]  # `on:` is YAML 1.1's true to PyYAML, as to any YAML 1.1 reader
    (job,) = doc["jobs"].values()
    return job


def test_github_workflow_steps_pass_on_known_findings_and_the_gate_fails_on_a_new_one(workspace, capsys):
    job = github_workflow()
    steps = job["steps"]
    assert job["permissions"]["security-events"] == "write"
    runs = [s for s in steps if "inspector " in s.get("run", "")]
    gate, sarif = runs
    assert "if" not in gate and sarif["if"] == "always()"
    (upload,) = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["if"] == "always()"
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert cache["with"]["path"] == DEFAULT_CACHE_DIR
    assert steps.index(cache) < steps.index(gate)

    write_baseline(capsys)
    for step in runs:
        code, out = run(capsys, step["run"])
        assert code == 0, step["run"]
        if step is gate:
            assert out == ""  # every finding is in the baseline: no annotation
    assert Path(DEFAULT_CACHE_DIR).is_dir()
    results = json.loads(Path(upload["with"]["sarif_file"]).read_text())["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"HDR002", "PFX001", "PFX002"}

    add_new_recording()
    code, out = run(capsys, gate["run"])
    assert code == 1
    lines = out.splitlines()
    assert [x.split(",title=")[1].split(" ")[0] for x in lines] == ["DIV001", "DIV010"]
    assert lines[0].startswith(f"::error file=recordings/{NEW}.jsonl,line=3,title=DIV001 messages-diverge::")
    assert run(capsys, sarif["run"])[0] == 0
    results = json.loads(Path(upload["with"]["sarif_file"]).read_text())["runs"][0]["results"]
    assert {"DIV001", "DIV010"} <= {r["ruleId"] for r in results}


def gitlab_jobs() -> dict:
    return yaml.safe_load(block_named(CI_DOC, "yaml", "# .gitlab-ci.yml"))


def test_gitlab_job_reports_junit_and_fails_only_on_a_new_finding(workspace, capsys):
    jobs = gitlab_jobs()
    recorder, job = jobs["test"], jobs["inspector"]
    assert job["needs"] == ["test"] and "recordings/" in recorder["artifacts"]["paths"]
    assert job["cache"]["paths"] == [f"{DEFAULT_CACHE_DIR}/"]
    assert job["artifacts"]["when"] == "always"
    script = inspector_commands(job["script"])
    assert len(script) == 2
    quality_line, gate_line = script  # a job stops at its first failing line: the report that never fails comes first
    assert "--exit-zero" in quality_line and "--exit-zero" not in gate_line
    junit = Path(job["artifacts"]["reports"]["junit"])
    assert f"-o {junit}" in gate_line and str(junit) in job["artifacts"]["paths"]
    quality = Path(job["artifacts"]["reports"]["codequality"])
    assert f"--format gitlab -o {quality}" in quality_line and str(quality) in job["artifacts"]["paths"]

    write_baseline(capsys)
    assert [run(capsys, line)[0] for line in script] == [0, 0]
    issues = json.loads(quality.read_text())
    assert issues and all(i["location"]["path"].startswith("recordings/") for i in issues)
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) > 10
    assert Path(DEFAULT_CACHE_DIR).is_dir()

    add_new_recording()
    assert [run(capsys, line)[0] for line in script] == [0, 1]
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "1"
    (failed,) = [case for case in root.iter("testcase") if case.find("failure") is not None]
    assert failed.get("name") == NEW_SESSION
    assert (
        failed.find("failure").get("message").startswith("DIV001: capture-divergence.requests.jsonl:3: derived message")
    )
