"""An input with no session logs fails the gate (a mistyped folder in CI), unless --allow-empty says it may be empty."""

from __future__ import annotations

import json
import shutil

from inspector.cli import main
from invariants import check
from tests.conftest import SAMPLES


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_without_session_logs_exits_2(capsys, tmp_path):
    empty = tmp_path / "recordings"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("not a log\n")
    code, _, err = run(capsys, "check", str(empty), "--no-cache")
    assert code == 2 and f"inspector: error: no session logs under {empty}" in err


def test_allow_empty_lets_it_pass(capsys, tmp_path):
    code, out, err = run(capsys, "check", str(tmp_path), "--no-cache", "--allow-empty", "--format", "json")
    assert code == 0 and "no session logs" not in err and json.loads(out)["summary"]["sessions"] == 0


def test_one_empty_folder_among_others_is_named(capsys, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", logs / "clean-multi-turn.jsonl")
    (tmp_path / "typo").mkdir()
    code, _, err = run(capsys, "check", str(logs), str(tmp_path / "typo"), "--no-cache")
    assert code == 2 and f"no session logs under {tmp_path / 'typo'}" in err and str(logs) + "\n" not in err
    assert run(capsys, "check", str(logs), "--no-cache")[0] == 0


def test_the_library_reports_it_as_a_problem(tmp_path):
    assert check(tmp_path).problems == [f"no session logs under {tmp_path}"]
    assert check(tmp_path, allow_empty=True).problems == []
