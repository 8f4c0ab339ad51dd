"""The CI formats as strict consumers read them: JUnit against junit-10.xsd (pytest's xunit2 family),
SARIF and GitLab paths from the repository root, GitLab Code Quality fields, ruff-style concise lines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from inspector.cli import main
from invariants import CheckResult, check
from invariants.gate.formats import ReportContext, render
from invariants.gate.formats.concise import concise_line
from invariants.model.findings import Finding
from tests.conftest import SAMPLES

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(DATA / "junit-10.xsd")


@pytest.fixture(scope="module")
def samples_result() -> CheckResult:
    return check([SAMPLES])


def _finding(**kw) -> Finding:
    base = dict(
        rule="HDR002",
        category="header-codec",
        severity="error",
        message="tools arm does not apply cleanly",
        file="logs/a.jsonl",
        line=17,
        session="s1",
        seq=15,
        turn=2,
        step=1,
        path="tools",
    )
    base.update(kw)
    return Finding(**base)


@pytest.mark.parametrize("fail_on", ["error", "warning", "info"])
def test_junit_of_the_samples_is_valid_against_junit_10_xsd(junit_schema, samples_result, fail_on):
    text = render(samples_result, "junit", ReportContext(fail_on=fail_on))
    junit_schema.validate(text)
    assert 'file="' not in text and "<testsuites" in text and "skipped" not in text.split("<testsuite ", 1)[0]


def test_junit_with_unusable_input_orphan_findings_and_hostile_text_is_valid(junit_schema, tmp_path):
    result = CheckResult(
        [],
        [_finding(message="nul \x00 esc \x1b <tag> & \ufffe", file=str(tmp_path / "x.requests.jsonl"), line=None)],
        [],
        ["bad\x01path.jsonl: unreadable", f"{tmp_path}/missing.jsonl: no such file or directory"],
    )
    text = render(result, "junit", ReportContext())
    junit_schema.validate(text)
    doc = junit_schema.to_dict(text)
    assert doc["@errors"] == "2" and doc["@failures"] == "1" and doc["@tests"] == "3"


def test_junit_from_the_command_line_is_valid(junit_schema, tmp_path, capsys):
    out = tmp_path / "report.xml"
    assert main(["check", str(SAMPLES), "--format", "junit", "-o", str(out), "--no-cache", "-q"]) == 1
    junit_schema.validate(str(out))


def _git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "recordings" / "team").mkdir(parents=True)
    for p in SAMPLES.glob("capture-divergence.*"):
        shutil.copy2(p, repo / "recordings" / "team" / p.name)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    else:
        (repo / ".git").mkdir()
    return repo


def test_sarif_and_gitlab_paths_are_relative_to_the_repository_root_from_a_subfolder(tmp_path, monkeypatch, capsys):
    repo = _git_repo(tmp_path)
    monkeypatch.chdir(repo / "recordings" / "team")
    assert main(["check", ".", "--format", "sarif", "-o", str(tmp_path / "r.sarif"), "--no-cache", "-q"]) == 1
    doc = json.loads((tmp_path / "r.sarif").read_text())
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == repo.resolve().as_uri() + "/"
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    bases = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] for r in run["results"]}
    assert uris == {"recordings/team/capture-divergence.jsonl"} and bases == {"SRCROOT"}

    assert main(["check", ".", "--format", "gitlab", "--no-cache", "-q"]) == 1
    issues = json.loads(capsys.readouterr().out)
    assert {i["location"]["path"] for i in issues} == {"recordings/team/capture-divergence.jsonl"}

    # --project-root names another root
    args = ["check", ".", "--format", "sarif", "--no-cache", "-q", "--project-root", str(repo / "recordings")]
    assert main(args) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == (repo / "recordings").resolve().as_uri() + "/"
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    assert uris == {"team/capture-divergence.jsonl"}


def test_gitlab_code_quality_issues_have_the_fields_gitlab_reads(samples_result, tmp_path):
    base = SAMPLES.parent
    issues = json.loads(render(samples_result, "gitlab", ReportContext(base_dir=base)))
    assert len(issues) == len(samples_result.findings)
    severity = {"error": "major", "warning": "minor", "info": "info"}
    for issue, f in zip(issues, samples_result.findings):
        assert issue["check_name"] == f.rule and issue["type"] == "issue"
        assert isinstance(issue["description"], str) and f.message in issue["description"]
        assert issue["severity"] == severity[f.severity]
        assert issue["location"]["path"] == Path(f.file).resolve().relative_to(base.resolve()).as_posix()
        begin = issue["location"]["lines"]["begin"]
        assert isinstance(begin, int) and begin == (f.line or 1)
        assert re.fullmatch(r"[0-9a-f]{32}", issue["fingerprint"])
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    again = json.loads(render(check([SAMPLES]), "gitlab", ReportContext(base_dir=base)))
    assert [i["fingerprint"] for i in again] == [i["fingerprint"] for i in issues]  # stable across runs
    # two findings alike but for their line: still two fingerprints; an unusable input is a blocker
    twins = CheckResult([], [_finding(line=3), _finding(line=9)], [], ["gone.jsonl: no such file or directory"])
    out = json.loads(render(twins, "gitlab", ReportContext(base_dir=tmp_path)))
    assert len({i["fingerprint"] for i in out}) == 3
    assert out[2]["severity"] == "blocker" and out[2]["location"] == {"path": "gone.jsonl", "lines": {"begin": 1}}


def test_concise_lines_are_path_line_col_code_message():
    assert (
        concise_line(_finding())
        == "logs/a.jsonl:17:1: HDR002 tools arm does not apply cleanly (session s1, turn 2 step 1)"
    )
    assert (
        concise_line(_finding(line=None, turn=None, session=None))
        == "logs/a.jsonl:1:1: HDR002 tools arm does not apply cleanly"
    )
    assert concise_line(_finding(file=None, session=None, turn=None)) == "HDR002 tools arm does not apply cleanly"
    hostile = concise_line(_finding(message="evil\x1b[2J\nsecond line", session="s\u202e1"))
    assert "\x1b" not in hostile and "\n" not in hostile and "\u202e" not in hostile
    assert "evil\\x1b[2J\\nsecond line" in hostile


def test_concise_from_the_command_line(capsys, samples_result):
    assert main(["check", str(SAMPLES), "--format", "concise", "--no-cache"]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == len(samples_result.findings)
    pattern = re.compile(r"(?P<path>[^:]+):(?P<line>\d+):1: (?P<code>[A-Z]{3}\d{3}) .+")
    for line, f in zip(lines, samples_result.findings):
        m = pattern.fullmatch(line)
        assert m and m["code"] == f.rule and m["path"] == f.file and int(m["line"]) == (f.line or 1)
    assert "session(s)" in err  # the summary goes to stderr
