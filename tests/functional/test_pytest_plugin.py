"""The pytest plugin (inspector/pytest_plugin.py), run by pytest in a subprocess through ``pytester``.

Each test lays out a small project (sample logs, a configuration, a harness-like
test file), runs ``pytest -p inspector.pytest_plugin`` there and reads the
outcome counts and the report text.  Expected counts come from
``invariants.check`` on the same logs, the one pipeline the plugin calls.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import textwrap
import tomllib
from pathlib import Path

import pytest

from invariants import check
from tests.conftest import ROOT, SAMPLES, corpus_dir
from tests.support.logs import story_header, story_session
from tests.support.readme import block_named, commands, fenced_blocks

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "inspector.pytest_plugin", "-p", "no:cacheprovider")
SOUND, BROKEN, WARNS = "clean-multi-turn", "capture-divergence", "resume-prefix-drift"
PYTEST_DOC = ROOT / "docs" / "PYTEST.md"


def copy_sample(name: str, folder: Path) -> Path:
    """A sample log and its capture, copied into ``folder``; the log's path."""
    folder.mkdir(parents=True, exist_ok=True)
    for p in SAMPLES.glob(f"{name}.*"):
        shutil.copy2(p, folder / p.name)
    return folder / f"{name}.jsonl"


def session_id(log: Path) -> str:
    (s,) = check(log).sessions
    return s.session


@pytest.fixture(autouse=True)
def only_this_plugin(monkeypatch):
    """The subprocesses load no other installed plugin (faster, and independent of what is installed),
    so ``-p inspector.pytest_plugin`` is what loads this one, whether or not its entry point is installed."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def logs(pytester) -> Path:
    """``logs/`` in the pytester project: one sound log, one whose recorded requests diverge."""
    folder = pytester.path / "logs"
    copy_sample(SOUND, folder)
    copy_sample(BROKEN, folder)
    return folder


def run(pytester, *args: str):
    return pytester.runpytest_subprocess(*PLUGIN, *args)


def test_a_folder_of_logs_gives_one_item_per_session_and_the_broken_one_fails_with_the_findings(pytester, logs):
    result = run(pytester, "--inspector-logs", "logs", "-v")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    sound, broken = session_id(logs / f"{SOUND}.jsonl"), session_id(logs / f"{BROKEN}.jsonl")
    assert f"logs/{SOUND}.jsonl::{sound} PASSED" in out
    assert f"logs/{BROKEN}.jsonl::{broken} FAILED" in out
    # the explained report: rule, turn.step, JSON path, expected/recorded, the capture line
    for text in (
        "DIV001 messages-diverge [request-divergence, error] at turn.step 2.1, line 3, seq 1",
        "path      messages[1].content[0].text",
        'expected  "How many Python files are there under src/? Count them with bash."',
        'recorded  "How many Python files are there under src/? Count them with bash. (edited)"',
        f"capture   logs/{BROKEN}.requests.jsonl:3",
        "DIV010 header-field-diverges [header-divergence, error] at turn.step 3.1",
        "path      temperature",
    ):
        assert text in out, text
    assert "Traceback" not in out and "raise LogFindings" not in out


def test_fail_on_comes_from_the_configuration_unless_the_flag_says_otherwise(pytester, logs):
    copy_sample(WARNS, logs)  # a prefix drift at a resume: one warning
    pytester.makefile(".toml", inspector='fail-on = "warning"\n')
    result = run(pytester, "--inspector-logs", "logs")
    result.assert_outcomes(passed=1, failed=2)
    assert "PFX002 prefix-drift-at-resume [prefix-drift, warning]" in result.stdout.str()
    assert "1 finding(s) at or above warning" in result.stdout.str()
    run(pytester, "--inspector-logs", "logs", "--inspector-fail-on", "error").assert_outcomes(passed=2, failed=1)


def test_the_projects_configuration_is_honoured(pytester, logs):
    """Found from the rootdir (pyproject.toml [tool.inspector]), or named with --inspector-config."""
    pytester.makepyprojecttoml('[tool.inspector]\nignore = ["DIV001", "header-divergence"]\n')
    run(pytester, "--inspector-logs", "logs").assert_outcomes(passed=2)
    (pytester.path / "strict.toml").write_text('severity = { "request-divergence" = "warning" }\n')
    result = run(pytester, "--inspector-logs", "logs", "--inspector-config", "strict.toml")
    result.assert_outcomes(passed=1, failed=1)  # DIV010 (header-divergence) is still an error there
    assert "DIV010" in result.stdout.str() and "DIV001" not in result.stdout.str()
    pytester.makepyprojecttoml('[tool.inspector]\nignore = ["NOPE999"]\n')
    result = run(pytester, "--inspector-logs", "logs")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "NOPE999" in result.stderr.str()


def test_databases_captures_unusable_input_and_hostile_names(pytester):
    """A database gives one item per session in it (in a folder pytest would not recurse into); a capture line
    that no checked log explains fails an item of the capture file; a folder with no log fails an unusable-input
    item; a hostile session id is inert; a folder named twice is collected once."""
    shutil.copytree(SAMPLES / "late" / "db", pytester.path / ".sessions" / "db")  # where norecursedirs would not look
    stray = pytester.path / "stray"
    log = copy_sample(SOUND, stray)
    capture = stray / f"{SOUND}.requests.jsonl"
    text = capture.read_text().replace(session_id(log), "no-such-session")
    capture.write_text(text.replace(f'"sessionFile":"{SOUND}.jsonl"', '"sessionFile":"elsewhere.jsonl"'))
    b = story_session("evil\x1b[2Jid")
    b.user_turn("q")
    b.streamed_step("a", header_reason="initial", header=story_header())
    b.end_turn()
    b.write(stray / "evil.jsonl")
    (pytester.path / "empty").mkdir()
    result = run(pytester, *(f"--inspector-logs={d}" for d in (".sessions/db", "stray", "empty", "stray")), "-v")
    result.assert_outcomes(passed=4, failed=2)
    out = result.stdout.str()
    db = ".sessions/db/sessions.sqlite"
    assert f"{db}::parent-2c9a PASSED" in out and f"{db}::child-7e41 PASSED" in out
    assert f"stray/{SOUND}.jsonl::{session_id(log)} PASSED" in out
    assert f"stray/{SOUND}.requests.jsonl::findings FAILED" in out and "REQ004" in out
    assert "empty::unusable-input FAILED" in out and "no session logs under" in out
    assert "\x1b[2J" not in out and "stray/evil.jsonl::evil\\x1b[2Jid PASSED" in out
    missing = run(pytester, "--inspector-logs", "nowhere")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "--inspector-logs nowhere: not a directory" in missing.stderr.str()


def test_the_corpus_a_folder_of_harness_sessions(pytester):
    """A folder of the harness's own test sessions, some of whose requests the harness itself rejected."""
    folder = corpus_dir("upstream-seed-era/support__invariants__invariants")
    expected = check(folder)
    failing = {f.file for f in expected.findings if f.severity == "error"}
    assert failing and len(failing) < len(expected.sessions)
    result = run(pytester, "--inspector-logs", str(folder), "-v")
    result.assert_outcomes(passed=len(expected.sessions) - len(failing), failed=len(failing))
    out = result.stdout.str()
    for f in expected.findings:
        if f.severity == "error" and f.path:
            assert f"{f.rule} " in out and f"path      {f.path}" in out and f"turn.step {f.turn}.{f.step}" in out


# -- like pytest-mypy: a marker, rule codes as keywords, narrowing, one check under xdist ----------------
COUNTING = """
import json
import os

import invariants

_check = invariants.check


def counting(paths, *args, **kwargs):
    named = paths if isinstance(paths, (list, tuple)) else [paths]
    with open(os.environ["INSPECTOR_CHECK_RUNS"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "paths": [os.path.normpath(str(p)) for p in named]}) + "\\n")
    return _check(paths, *args, **kwargs)


invariants.check = counting
"""


@pytest.fixture
def check_runs(pytester, monkeypatch):
    """A conftest that records every call of ``invariants.check`` (in any process); returns a reader."""
    pytester.makeconftest(COUNTING)
    runs = pytester.path / "check-runs.jsonl"
    monkeypatch.setenv("INSPECTOR_CHECK_RUNS", str(runs))

    def read() -> list[dict]:
        calls = [json.loads(x) for x in runs.read_text().splitlines()] if runs.exists() else []
        runs.unlink(missing_ok=True)
        return calls

    return read


def test_every_item_carries_the_registered_inspector_marker(pytester, logs):
    pytester.makepyfile(test_unit="def test_unit():\n    pass\n")
    run(pytester, "--strict-markers", "--inspector-logs", "logs", "-m", "inspector").assert_outcomes(
        passed=1, failed=1, deselected=1
    )
    run(pytester, "--strict-markers", "--inspector-logs", "logs", "-m", "not inspector").assert_outcomes(
        passed=1, deselected=2
    )
    markers = run(pytester, "--markers").stdout.str()
    assert "@pytest.mark.inspector: a dsh-inspector session-log check" in markers


def test_rule_codes_and_names_are_keywords(pytester, logs):
    broken = session_id(logs / f"{BROKEN}.jsonl")
    copy_sample(WARNS, logs)  # a warning below fail-on: a passing item, still found by its code
    for expression, outcome in (
        ("DIV001", dict(failed=1, deselected=2)),
        ("DIV010 and DIV001", dict(failed=1, deselected=2)),
        ("DIV", dict(failed=1, deselected=2)),
        ("messages-diverge", dict(failed=1, deselected=2)),
        ("PFX002", dict(passed=1, deselected=2)),
        ("not DIV", dict(passed=2, deselected=1)),
        ("NOPE999", dict(deselected=3)),
    ):
        result = run(pytester, "--inspector-logs", "logs", "-k", expression, "-v")
        result.assert_outcomes(**outcome)
        if "DIV" in expression and "not" not in expression:
            assert f"logs/{BROKEN}.jsonl::{broken} FAILED" in result.stdout.str()


def test_a_file_a_node_id_or_a_subfolder_narrows_what_is_checked(pytester, logs, check_runs):
    copy_sample(WARNS, logs / "team")
    broken = session_id(logs / f"{BROKEN}.jsonl")
    run(pytester, "--inspector-logs", "logs", "-v").assert_outcomes(passed=2, failed=1)
    assert [c["paths"] for c in check_runs()] == [["logs"]]  # the whole DIR, once

    result = run(pytester, "--inspector-logs", "logs", f"logs/{SOUND}.jsonl", "-v")
    result.assert_outcomes(passed=1)
    assert [c["paths"] for c in check_runs()] == [[f"logs/{SOUND}.jsonl"]]

    result = run(pytester, "--inspector-logs", "logs", f"logs/{BROKEN}.jsonl::{broken}", "-v")
    result.assert_outcomes(failed=1)
    assert f"logs/{BROKEN}.jsonl::{broken} FAILED" in result.stdout.str()
    assert [c["paths"] for c in check_runs()] == [[f"logs/{BROKEN}.jsonl"]]

    result = run(pytester, "--inspector-logs", "logs", "logs/team", "-v")
    result.assert_outcomes(passed=1)
    assert f"logs/team/{WARNS}.jsonl::" in result.stdout.str()
    assert [c["paths"] for c in check_runs()] == [["logs/team"]]

    run(pytester, "--inspector-logs", "logs", "logs/team", f"logs/{SOUND}.jsonl").assert_outcomes(passed=2)
    assert [sorted(c["paths"]) for c in check_runs()] == [sorted(["logs/team", f"logs/{SOUND}.jsonl"])]


def test_under_xdist_the_check_runs_once_on_the_controller(pytester, logs, check_runs):
    pytest.importorskip("xdist", reason="pytest-xdist (a test dependency) is not installed")
    for i in range(3):  # enough items for both workers
        copy_sample(SOUND, logs / f"more{i}")
    xdist = ("-p", "xdist.plugin", "-n", "2")
    serial = run(pytester, "--inspector-logs", "logs")
    serial.assert_outcomes(passed=4, failed=1)
    assert len(check_runs()) == 1
    result = run(pytester, *xdist, "--inspector-logs", "logs", "-v")
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
    assert "[gw0]" in out and "[gw1]" in out  # two workers ran items
    calls = check_runs()
    assert len(calls) == 1 and calls[0]["paths"] == ["logs"], calls
    assert "DIV001 messages-diverge" in out  # the explained report reached the controller's output
    # narrowed and keyword-selected, still once
    result = run(pytester, *xdist, "--inspector-logs", "logs", "logs/more0", f"logs/{BROKEN}.jsonl", "-k", "DIV001")
    result.assert_outcomes(failed=1)  # (xdist's summary does not count what its workers deselected)
    assert [sorted(c["paths"]) for c in check_runs()] == [sorted(["logs/more0", f"logs/{BROKEN}.jsonl"])]


# -- the fixture --------------------------------------------------------------------------------------
HARNESS_TEST = '''
import shutil
from pathlib import Path

import pytest

from invariants import Config

SAMPLES = Path({samples!r})


def record(name, tmp_path):
    """What a harness test does: run a session, leaving its log (and the recorded requests) in tmp_path."""
    for p in SAMPLES.glob(name + ".*"):
        shutil.copy2(p, tmp_path / p.name)
    return tmp_path / (name + ".jsonl")


def test_sound(inspector_check, tmp_path):
    result = inspector_check(record({sound!r}, tmp_path))
    assert result.ok, result.explain()
    assert result.explain().startswith("no finding at or above")


def test_warns(inspector_check, tmp_path):
    result = inspector_check(record({warns!r}, tmp_path))
    assert result.ok, result.explain()


def test_broken(inspector_check, tmp_path):
    result = inspector_check(record({broken!r}, tmp_path))
    assert result.ok, result.explain()


def test_broken_with_the_rules_ignored(inspector_check, tmp_path):
    result = inspector_check(record({broken!r}, tmp_path), ignore=["DIV"])
    assert result.ok and not result.findings


def test_folder_explicit_captures_and_fail_on(inspector_check, tmp_path):
    record({sound!r}, tmp_path)
    log = record({warns!r}, tmp_path)
    assert inspector_check(tmp_path).ok
    strict = inspector_check(tmp_path, fail_on="warning")
    assert not strict.ok and [f.rule for f in strict.failing] == ["PFX002"]
    cap = tmp_path / ({warns!r} + ".requests.jsonl")
    beside = inspector_check(log).result.requests_checked
    assert beside and inspector_check(log, captures=[cap]).result.requests_checked == beside
    assert inspector_check(log, config=Config(severity={{"PFX002": "error"}})).ok is False


def test_unknown_setting(inspector_check, tmp_path):
    with pytest.raises(TypeError, match="unknown setting"):
        inspector_check(tmp_path, ignored=["DIV"])
'''


def harness_test(pytester) -> None:
    pytester.makepyfile(test_harness=HARNESS_TEST.format(samples=str(SAMPLES), sound=SOUND, broken=BROKEN, warns=WARNS))


def test_the_fixture_checks_the_log_a_test_just_wrote(pytester):
    harness_test(pytester)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert "test_harness.py::test_broken FAILED" in out
    assert "AssertionError: " in out
    for text in (
        f"{BROKEN}.jsonl: 2 finding(s) at or above error",
        "DIV001 messages-diverge [request-divergence, error] at turn.step 2.1",
        "path      messages[1].content[0].text",
        "DIV010",
        "path      temperature",
    ):
        assert text in out, text


def test_the_fixture_honours_the_configuration(pytester):
    harness_test(pytester)
    pytester.makepyprojecttoml('[tool.inspector]\nignore = ["request-divergence", "header-divergence"]\n')
    run(pytester).assert_outcomes(passed=6)
    pytester.makepyprojecttoml('[tool.inspector]\nfail-on = "warning"\n')
    result = run(pytester, "-k", "warns")
    result.assert_outcomes(failed=1)
    assert "PFX002 prefix-drift-at-resume [prefix-drift, warning]" in result.stdout.str()
    run(pytester, "-k", "warns", "--inspector-fail-on", "error").assert_outcomes(passed=1)


# -- cheap when unused, and loaded by its entry point --------------------------------------------------
def test_a_run_without_inspector_options_imports_no_checker(pytester):
    pytester.makepyfile(
        test_lazy="""
        import sys

        def test_nothing_of_the_checker_is_imported(request):
            assert request.config.pluginmanager.has_plugin("inspector.pytest_plugin")
            loaded = [m for m in sys.modules if m.split(".")[0] == "invariants"]
            assert not loaded, loaded
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_the_pytest11_entry_point_loads_the_plugin(pytester, logs, tmp_path, monkeypatch):
    """pyproject.toml's entry point, installed as package metadata would be, loads the plugin without ``-p``;
    naming the module with ``-p`` as well is the same plugin, not a second registration."""
    points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert points == {"inspector.pytest_plugin": "inspector.pytest_plugin"}
    dist = tmp_path / "site" / "dsh_inspector_probe-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dsh-inspector-probe\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(dist.parent), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--inspector-logs", "logs").assert_outcomes(
        passed=1, failed=1
    )
    run(pytester, "--inspector-logs", "logs").assert_outcomes(passed=1, failed=1)


# -- docs/PYTEST.md --------------------------------------------------------------------------------------
def doc_text() -> str:
    return PYTEST_DOC.read_text(encoding="utf-8")


def test_the_documented_commands(pytester):
    """Each ``python3 -m pytest`` line of the section, in a project with one unit test and a recordings/ folder
    holding a sound log, a broken one and one with a warning."""
    for name in (SOUND, BROKEN, WARNS):
        copy_sample(name, pytester.path / "recordings")
    pytester.makepyfile(test_unit="def test_unit():\n    pass\n")
    lines = [c for block in fenced_blocks(doc_text(), "sh") for c in commands(block)]
    outcomes = []
    for line in lines:
        argv = shlex.split(line)
        assert argv[:3] == ["python3", "-m", "pytest"], line
        outcomes.append(run(pytester, *argv[3:]).parseoutcomes())
    assert outcomes == [
        {"passed": 3, "failed": 1},  # the unit test, then one item per log
        {"passed": 2, "failed": 1},  # only the logs
        {"passed": 2, "failed": 2},  # the warning fails too
    ]


def test_the_documented_fixture_example(pytester):
    """The section's example test, with a recorder that leaves a broken log, then a sound one."""
    body = block_named(PYTEST_DOC, "python", "# tests/test_sessions.py")
    for name, outcome in ((BROKEN, {"failed": 1}), (SOUND, {"passed": 1})):
        recorder = textwrap.dedent(
            f"""
            import shutil
            from pathlib import Path


            def record_a_session(tmp_path):
                for p in Path({str(SAMPLES)!r}).glob({name!r} + ".*"):
                    shutil.copy2(p, tmp_path / p.name)
                return tmp_path / {name + ".jsonl"!r}
            """
        )
        pytester.makepyfile(test_sessions=recorder + body)
        result = run(pytester)
        assert result.parseoutcomes() == outcome
        assert ("path      messages[1].content[0].text" in result.stdout.str()) is (name == BROKEN)
