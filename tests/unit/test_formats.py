"""Report formats: SARIF against the official schema, JUnit parsed back, GitHub lines exact."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest

from inspector.cli import main
from invariants import CheckResult, check
from invariants.gate.formats import FORMATS, ReportContext, render, statistics
from invariants.model.findings import Finding
from invariants.model.registry import RULES
from tests.conftest import SAMPLES

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


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


def test_sarif_validates_against_the_official_schema(samples_result):
    schema = json.loads(SCHEMA.read_text())
    assert schema["id"].endswith("sarif-schema-2.1.0.json")  # the OASIS file, vendored untouched
    doc = json.loads(render(samples_result, "sarif", ReportContext(tool_version="0.1.0", base_dir=SAMPLES.parent)))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULES)
    assert all(r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["markdown"] for r in rules)
    assert len(run["results"]) == len(samples_result.findings)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for res, f in zip(run["results"], samples_result.findings):
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"] == f.rule
        assert res["level"] == levels[f.severity]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "SRCROOT"
        assert loc["artifactLocation"]["uri"].startswith("sample_logs/")
        assert not urlsplit(loc["artifactLocation"]["uri"]).scheme
        if f.line is not None:
            assert loc["region"]["startLine"] == f.line
        assert len(res["partialFingerprints"]["inspectorFingerprint/v1"]) == 16
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/")


def test_sarif_with_unreadable_input_and_hostile_text_still_validates(tmp_path):
    schema = json.loads(SCHEMA.read_text())
    result = CheckResult(
        [],
        [_finding(message="evil \x1b[2J\x00 text", file=str(tmp_path / "x y#.jsonl"), line=None)],
        [],
        [f"{tmp_path}/missing.jsonl: no such file or directory"],
    )
    doc = json.loads(render(result, "sarif", ReportContext(base_dir=Path("/nonexistent-base"))))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    inv = doc["runs"][0]["invocations"][0]
    assert (
        inv["executionSuccessful"] is False
        and "missing.jsonl" in inv["toolExecutionNotifications"][0]["message"]["text"]
    )
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and "x%20y%23.jsonl" in uri


def test_junit_parses_back_one_case_per_session(samples_result):
    text = render(samples_result, "junit", ReportContext(fail_on="error"))
    root = ET.fromstring(text.encode())
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [m.id for m in samples_result.sessions]
    with_errors = {f.file for f in samples_result.findings if f.severity == "error"}
    failed = [c for c in cases if c.find("failure") is not None]

    def file_of(case) -> str:  # xunit2 has no file attribute: the body's first line names it
        (body,) = [e for e in case if e.tag in ("failure", "system-out")] or [None]
        return body.text.split("\n", 1)[0].removeprefix("file: ") if body is not None else ""

    assert {file_of(c) for c in failed} == with_errors
    assert root.get("tests") == str(len(cases)) and root.get("failures") == str(len(failed))
    div = next(c for c in failed if file_of(c).endswith("capture-divergence.jsonl"))
    assert div.find("failure").get("type") == "DIV001" and "DIV010" in div.find("failure").text
    # warnings below fail-on are listed, not failed
    key_order = next(c for c in cases if file_of(c).endswith("capture-key-order.jsonl"))
    assert key_order.find("failure") is None and "DIV002" in key_order.find("system-out").text
    strict = ET.fromstring(render(samples_result, "junit", ReportContext(fail_on="warning")).encode())
    assert int(strict.get("failures")) > len(failed)


def test_junit_survives_text_xml_cannot_carry():
    result = CheckResult(
        [], [_finding(message="nul \x00 esc \x1b bell \x07 <tag> & \ufffe")], [], ["bad\x01path: unreadable"]
    )
    root = ET.fromstring(render(result, "junit", ReportContext()).encode())
    failure = root.find("testsuite/testcase/failure")
    assert "\\x00" in failure.get("message") and "<tag> &" in failure.get("message")
    assert root.find("testsuite/testcase/error") is not None and root.get("errors") == "1"


def test_github_lines_are_exact():
    findings = [
        _finding(),
        _finding(
            rule="DIV002",
            category="request-divergence",
            severity="warning",
            message="50% off\nnext::line",
            file="a,b:c.jsonl",
            line=None,
            seq=None,
            turn=None,
            step=None,
            path=None,
        ),
        _finding(
            rule="PFX003",
            category="prefix-drift",
            severity="info",
            message="tools changed at this resume",
            session=None,
            file=None,
            line=None,
            seq=None,
            turn=3,
            step=None,
        ),
    ]
    out = render(CheckResult([], findings, [], []), "github")
    assert out.split("\n") == [
        "::error file=logs/a.jsonl,line=17,title=HDR002 delta-does-not-apply::tools arm does not apply cleanly "
        "(session s1, turn 2 step 1, seq 15)",
        "::warning file=a%2Cb%3Ac.jsonl,title=DIV002 key-order-only::50%25 off%0Anext::line (session s1)",
        "::notice title=PFX003 header-drift-at-resume::tools changed at this resume (turn 3)",
    ]


def test_a_message_that_names_its_line_says_it_once_after_a_location_that_does():
    """The reader's findings begin ``line N:`` for the JSON report, which has no location column; the
    formats that show the line before the message do not say it twice, the others keep it."""
    damaged = _finding(rule="LOG001", message="line 17: unparsable line (...), where seq 15 was due", path=None)
    other = _finding(rule="LOG001", message="line 9: names another line", path=None)  # not its own line: kept
    no_file = _finding(rule="LOG001", message="line 17: unparsable line", file=None, path=None)  # no line shown
    result = CheckResult([], [damaged, other, no_file], [], [])
    text = render(result, "text", ReportContext())
    assert "  error   LOG001  line 17, seq 15, turn 2 step 1: unparsable line (...), where seq 15 was due" in text
    assert "line 17: line 17" not in text and "line 9: names another line" in text
    concise = render(result, "concise", ReportContext()).split("\n")
    assert concise[0].startswith("logs/a.jsonl:17:1: LOG001 unparsable line (...), where seq 15 was due")
    assert "LOG001 line 9: names another line" in concise[1]
    assert concise[2].startswith("LOG001 line 17: unparsable line")
    github = render(result, "github", ReportContext()).split("\n")
    assert github[0].endswith("::unparsable line (...), where seq 15 was due (session s1, turn 2 step 1, seq 15)")
    junit = ET.fromstring(render(result, "junit", ReportContext()).encode())
    body = junit.find("testsuite/testcase/failure").text
    assert "error LOG001 line 17, seq 15, turn 2 step 1: unparsable line (...)" in body
    for fmt in ("json", "sarif", "gitlab"):  # machine formats carry the message as the rule raised it
        assert "line 17: unparsable line" in render(result, fmt, ReportContext())


def test_jsonl_is_one_finding_per_line(samples_result):
    lines = render(samples_result, "jsonl").split("\n")
    assert [json.loads(x) for x in lines] == [f.to_json() for f in samples_result.findings]


def test_statistics_count_per_rule(samples_result):
    rows = statistics(samples_result)
    assert sum(r["count"] for r in rows) == len(samples_result.findings)
    assert [r["count"] for r in rows] == sorted((r["count"] for r in rows), reverse=True)
    assert {r["rule"] for r in rows} == {f.rule for f in samples_result.findings}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "text"])
def test_machine_formats_keep_stdout_clean(capsys, fmt, tmp_path):
    code, out, err = run(capsys, "check", str(SAMPLES / "capture-divergence.jsonl"), "--format", fmt, "--no-cache")
    assert code == 1
    assert "session(s)" not in out and "inspector: 1 session(s)" in err
    if fmt in ("json", "sarif"):
        json.loads(out)
    elif fmt == "junit":
        ET.fromstring(out.encode())
    elif fmt == "jsonl":
        assert all(json.loads(x)["rule"] for x in out.splitlines())
    elif fmt == "github":
        assert all(x.startswith("::") for x in out.splitlines())
    elif fmt == "gitlab":
        assert [i["check_name"] for i in json.loads(out)] == ["DIV001", "DIV010"]
    elif fmt == "concise":
        assert [x.split(" ", 2)[1] for x in out.splitlines()] == ["DIV001", "DIV010"]
    # --output writes the same bytes; --quiet silences stderr
    target = tmp_path / f"report.{fmt}"
    code, out2, err2 = run(
        capsys,
        "check",
        str(SAMPLES / "capture-divergence.jsonl"),
        "--format",
        fmt,
        "--no-cache",
        "-o",
        str(target),
        "-q",
    )
    assert out2 == "" and err2 == "" and code == 1
    if fmt != "sarif":  # SARIF's run names the project root as a URI either way
        assert target.read_text() == out


def test_exit_zero_and_statistics_flags(capsys):
    code, out, _ = run(
        capsys, "check", str(SAMPLES / "capture-divergence.jsonl"), "--no-cache", "--exit-zero", "--statistics"
    )
    assert code == 0
    lines = out.strip().split("\n")
    assert lines[0].split() == ["1", "DIV001", "error", "messages-diverge"]
    assert "DIV010" in lines[1] and lines[-1].endswith("2 error(s), 0 warning(s), 0 info(s)")
    code, out, _ = run(
        capsys, "check", str(SAMPLES / "capture-divergence.jsonl"), "--no-cache", "--format", "json", "--statistics"
    )
    assert [r["rule"] for r in json.loads(out)["statistics"]] == ["DIV001", "DIV010"]
    assert run(capsys, "check", str(SAMPLES / "missing.jsonl"), "--exit-zero", "--no-cache")[0] == 2
