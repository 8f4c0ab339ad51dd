"""The CLI contract: flags, exit codes, the JSON report shape, replay output."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from inspector.cli import COMMANDS, build_parser, main
from tests.conftest import SAMPLES

REPORT_KEYS = [
    "rule",
    "category",
    "severity",
    "file",
    "line",
    "session",
    "seq",
    "turn",
    "step",
    "path",
    "message",
    "detail",
]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clean_log_exits_zero(capsys):
    code, out, _ = run(capsys, "check", str(SAMPLES / "clean-multi-turn.jsonl"))
    assert code == 0
    assert "0 error(s)" in out


def test_errors_exit_one_and_warnings_obey_fail_on(capsys):
    assert run(capsys, "check", str(SAMPLES / "capture-divergence.jsonl"))[0] == 1
    assert run(capsys, "check", str(SAMPLES / "capture-key-order.jsonl"))[0] == 0
    assert run(capsys, "check", str(SAMPLES / "capture-key-order.jsonl"), "--fail-on", "warning")[0] == 1


def test_usage_errors_and_unreadable_input_exit_two(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--format", "xml", str(SAMPLES)])
    assert exc.value.code == 2
    assert run(capsys, "check", str(tmp_path / "missing.jsonl"))[0] == 2
    assert run(capsys, "check", str(SAMPLES / "clean-multi-turn.requests.jsonl"))[0] == 2


def test_json_report_has_the_documented_shape(capsys):
    code, out, _ = run(capsys, "check", str(SAMPLES / "capture-divergence.jsonl"), "--format", "json")
    report = json.loads(out)
    assert code == 1
    assert report["version"] == 1
    assert list(report["summary"]) == ["sessions", "events", "requests_checked", "errors", "warnings", "infos"]
    assert report["summary"]["errors"] == 2 and report["summary"]["requests_checked"] == 7
    f = report["findings"][0]
    assert list(f) == REPORT_KEYS
    assert f["rule"] == "DIV001" and f["category"] == "request-divergence"
    assert f["path"] == "messages[1].content[0].text" and f["turn"] == 2 and f["step"] == 1


def test_select_and_ignore_by_code_prefix_and_category(capsys):
    path = str(SAMPLES / "capture-divergence.jsonl")
    _, out, _ = run(capsys, "check", path, "--format", "json", "--select", "DIV010")
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["DIV010"]
    _, out, _ = run(capsys, "check", path, "--format", "json", "--ignore", "request-divergence")
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["DIV010"]
    code, out, _ = run(capsys, "check", path, "--ignore", "DIV")
    assert code == 0


def test_explicit_captures_flag(capsys, tmp_path):
    log = tmp_path / "x.jsonl"
    log.write_bytes((SAMPLES / "capture-divergence.jsonl").read_bytes())
    code, out, _ = run(capsys, "check", str(log), "--format", "json")
    assert code == 0 and json.loads(out)["summary"]["requests_checked"] == 0
    code, out, _ = run(
        capsys, "check", str(log), "--captures", str(SAMPLES / "capture-divergence.requests.jsonl"), "--format", "json"
    )
    assert code == 1 and json.loads(out)["summary"]["requests_checked"] == 7


def test_replay_prints_the_rebuilt_request(capsys):
    code, out, _ = run(capsys, "replay", str(SAMPLES / "clean-multi-turn.jsonl"), "--turn", "2", "--step", "1")
    assert code == 0
    request = json.loads(out)
    recorded = [json.loads(line) for line in (SAMPLES / "clean-multi-turn.requests.jsonl").read_text().splitlines()]
    match = [r["request"] for r in recorded if (r["turn"], r["step"]) == (2, 1)]
    assert request == match[0]


def test_replay_all_steps_as_json_lines(capsys):
    code, out, _ = run(capsys, "replay", str(SAMPLES / "clean-multi-turn.jsonl"))
    lines = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and len(lines) >= 3
    assert all(set(x) == {"session", "turn", "step", "seq", "request"} for x in lines)


def test_replay_folder_needs_session(capsys):
    assert run(capsys, "replay", str(SAMPLES / "fork"))[0] == 2


def test_rules_command_lists_and_explains(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "DIV001" in out and "request-divergence" in out
    code, out, _ = run(capsys, "rules", "PFX002")
    assert code == 0 and "Example:" in out


def test_rules_code_says_where_the_rule_is_raised_and_what_its_row_tells_the_ui(capsys):
    code, out, _ = run(capsys, "rules", "DIV002")
    assert code == 0 and "Raised in: invariants.replay.compare:_order_difference" in out
    assert "Shown in the diff tab" in out
    code, out, _ = run(capsys, "rules", "LOG006", "--format", "json")
    doc = json.loads(out)
    assert (doc["tab"], doc["fires"], doc["loses_header"]) == ("events", "at-end", False)
    assert doc["raised_in"] == ["invariants.replay.fold:_Replay._finish"]


def test_text_output_is_inert(capsys, tmp_path):
    from tests.support.logs import Log

    log = Log()
    log.clean_turn(1, header_reason="initial")
    log.turn_start(2)
    log.user("x", surfaceOp="\x1b]52;c;ZXZpbA==\x07\x1b[2J[bold]x[/bold]")
    log.turn_end(2)
    path = log.write(tmp_path / "evil.jsonl")
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out
    assert "\\u001b]52" in out or "\\x1b]52" in out  # shown, as a visible escape


def test_invariants_never_imports_the_ui_or_the_index():
    probe = (
        "import sys, invariants.gate.pipeline, invariants.gate.report, invariants.replay.session; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'sqlite_utils', 'inspector', 'rich')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# Loaded only by the function that needs them (issue 13: start-up time): a clean check of a tiny log,
# run from a folder without a configuration, imports none of them.
DEFERRED = {
    "deepdiff": "capture-divergence.jsonl",
    "difflib": "capture-divergence.jsonl",
    "invariants.model.textdiff": "capture-divergence.jsonl",
    "invariants.replay.diff_classify": "capture-divergence.jsonl",
    "invariants.analysis.forks": "fork",
    "invariants.gate.fork_checks": "fork",
    "contextvars": "fork",
    "shlex": "capture-divergence.jsonl",
    "hashlib": None,
    "tomllib": None,
    "concurrent.futures": None,
    **{f"inspector.commands.{c.replace('-', '_')}": None for c in COMMANDS if c != "check"},
}


def _imported_by_check(log: str, cwd) -> tuple[str, set[str]]:
    probe = (
        "import sys\nfrom inspector.cli import main\n"
        f"code = main(['check', {log!r}, '--no-cache', '-q'])\n"
        f"print(code, *[m for m in {sorted(DEFERRED)!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, check=True)
    code, *loaded = out.stdout.splitlines()[-1].split()
    return code, set(loaded)


def test_a_clean_check_imports_nothing_only_a_difference_or_a_fork_needs(tmp_path):
    code, loaded = _imported_by_check(str(SAMPLES / "clean-multi-turn.jsonl"), tmp_path)
    assert code == "0" and not loaded


@pytest.mark.parametrize("sample, exit_code", [("capture-divergence.jsonl", "1"), ("fork", "0")])
def test_a_difference_or_a_fork_loads_what_it_needs(tmp_path, sample, exit_code):
    code, loaded = _imported_by_check(str(SAMPLES / sample), tmp_path)
    assert code == exit_code and {m for m, needed_by in DEFERRED.items() if needed_by == sample} <= loaded


def test_rule_reference_is_generated_from_the_registry():
    from pathlib import Path

    from inspector.commands.rules import rules_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "RULES.md").read_text()
    assert doc == rules_markdown() + "\n", "regenerate with: inspector rules --markdown > docs/RULES.md"


def test_readme_setup_commands_match_ci():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    ci = (root / ".ci" / "run").read_text()
    assert "python3 -m pytest -q" in readme and 'bin/python" -m pytest -q' in ci  # in each of its venvs
    assert "inspector check sample_logs/capture-divergence.jsonl" in readme


@pytest.mark.parametrize("name", COMMANDS)
def test_a_subcommand_built_alone_parses_and_helps_as_in_the_whole_parser(name):
    whole = build_parser()._subparsers._group_actions[0].choices[name]
    alone_parser = build_parser(name)
    alone = alone_parser._subparsers._group_actions[0].choices
    assert list(alone) == [name]
    assert alone[name].format_help() == whole.format_help()


_RUN = (
    "import atexit, sys\nfrom inspector.cli import run\n"
    "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\nrun()\n"
)


@pytest.mark.parametrize("sample, code", [("clean-multi-turn.jsonl", 0), ("capture-divergence.jsonl", 1)])
def test_the_command_exits_with_mains_code_its_output_flushed_and_exit_handlers_run(sample, code):
    """``run`` (the console entry) skips the interpreter's teardown: its piped output must still
    arrive whole, its code be main's, and ``atexit`` handlers (worker pools, Dask clients) run."""
    args = ["check", str(SAMPLES / sample), "--no-cache", "--format", "json"]
    proc = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == code
    assert json.loads(proc.stdout)["summary"]["errors"] == (0 if code == 0 else 2)
    assert proc.stderr.endswith("exit handler ran\n")


def test_the_command_into_a_closed_pipe_exits_quietly():
    args = ["check", str(SAMPLES / "capture-divergence.jsonl"), "--no-cache"]
    proc = subprocess.Popen([sys.executable, "-c", _RUN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `inspector check ... | head -0`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 1)
    assert "Traceback" not in err and err.endswith("exit handler ran\n")
