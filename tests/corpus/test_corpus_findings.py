"""Findings on real harness logs (../shared/corpus, read in place): one finding per defect, none for a sound value."""

from __future__ import annotations

import orjson
import pytest

from invariants import check
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.conftest import corpus_dir
from tests.support.damage import one_finding_per_defect

SEED_LOG = "core__agent-loop__zz-corpus-scenarios/t00/deltas-session-e7ad222c-c209-4c78-abb6-207f7de9fd9c.jsonl"
LATE_LOG = "snapshot__acp-agent__snapshots__subagent-mixed/127bbc24-43d6-451a-8a6f-6c153ca51760.jsonl"


def _lines(era: str, name: str) -> list[bytes]:
    path = corpus_dir(f"upstream-{era}-era") / name
    if not path.is_file():
        pytest.skip(f"{path} is not in this corpus")
    return path.read_bytes().splitlines()


def _errors(lines: list[bytes], tmp_path) -> list:
    path = tmp_path / "log.jsonl"  # alone in its folder: no recorded requests
    path.write_bytes(b"\n".join(lines) + b"\n")
    return [f for f in replay(LogSource(path, tmp_path)).findings if f.severity == "error"]


# ---------------------------------------------------------------- a turn closed in error with its step open
def test_a_turn_closed_in_error_after_a_vetoed_step_end_is_a_warning():
    log = corpus_dir("upstream-late-era") / "core__agent-loop__coverage-edges/t11/stepend-double-veto.jsonl"
    result = check([log])
    assert [f for f in result.findings if f.severity == "error"] == []
    assert [(f.rule, f.seq) for f in result.findings] == [("EVT012", 26)]


# ---------------------------------------------------------------- one root cause, one finding
@pytest.mark.parametrize(("era", "name"), [("seed", SEED_LOG), ("late", LATE_LOG)])
def test_one_wrong_turn_number_in_a_real_log_is_one_error(tmp_path, era, name):
    lines = _lines(era, name)
    assert _errors(lines, tmp_path) == []
    starts = [i for i, line in enumerate(lines) if b'"type":"turn/start"' in line]
    for i in starts:
        event = orjson.loads(lines[i])
        event["data"]["turn"] += 1
        errors = _errors([*lines[:i], orjson.dumps(event), *lines[i + 1 :]], tmp_path)
        assert [(f.rule, f.line) for f in errors] == [("EVT006", i + 1)], [f.message for f in errors]
    # The 158-event log of the issue gave 16 errors when its second turn was bumped; now one, which
    # names the span it affects: every later event of that turn, up to its turn/end.
    second = orjson.loads(lines[starts[1]])
    end = next(e for e in map(orjson.loads, lines[starts[1] :]) if e["type"] == "turn/end")
    second["data"]["turn"] += 1
    (f,) = _errors([*lines[: starts[1]], orjson.dumps(second), *lines[starts[1] + 1 :]], tmp_path)
    assert f.detail["affected_events"] == end["seq"] - second["seq"]
    assert f"affects the {end['seq'] - second['seq']} later event(s) up to seq {end['seq']}" in f.message


@pytest.mark.parametrize(("era", "name"), [("seed", SEED_LOG), ("late", LATE_LOG)])
def test_one_damaged_line_of_a_real_log_is_one_error(tmp_path, era, name):
    assert one_finding_per_defect(_lines(era, name), tmp_path) == []


# ---------------------------------------------------------------- values the harness wrote
def test_no_value_the_harness_wrote_is_flagged():
    """Every enumerated value and typed field in the real logs is one its era defines."""
    result = check([corpus_dir("fixtures-seed-era").parent])
    assert len(result.sessions) == 1777
    flagged = [(f.file, f.rule, f.message) for f in result.findings if f.rule in ("EVT011", "EVT013")]
    assert flagged == []
