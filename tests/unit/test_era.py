"""Era detection over the whole log, during the one pass."""

from __future__ import annotations

import orjson

import invariants.read.era as era_mod
import invariants.read.load as load_mod
from invariants import CheckOptions, check
from invariants.gate.report import report_json
from invariants.read.era import SNIFF_LINES
from invariants.read.source import LogSource
from invariants.replay.checkpoint import resume
from invariants.replay.session import replay
from tests.support.logs import Log

LATE_HEADER = {"config": {"provider": "p", "model": "m"}, "system": "sys"}


def _long_prelude(log: Log, n: int = SNIFF_LINES + 50) -> None:
    """A first turn of log-only events that no era tells apart, longer than the provisional window."""
    log.turn_start(1)
    for i in range(n):
        log.add("todo/write", {"todos": [{"content": f"t{i}", "status": "pending"}]})
    log.turn_end(1)


def _late_after_the_window() -> Log:
    log = Log("late-after")  # a header without late fields: nothing late in the first SNIFF_LINES lines
    _long_prelude(log)
    log.turn_start(2)
    log.user("hi")
    log.step_start(2, 1)
    log.snapshot("initial", LATE_HEADER)
    c = log.chunk(2, 1)
    log.assistant(2, 1, [{"type": "text", "text": "hi"}], [c])
    log.step_end(2, 1)
    log.turn_end(2)
    log.turn_start(3)
    log.user("again")
    log.step_start(3, 1)
    log.snapshot("change", {**LATE_HEADER, "system": "sys 2"})  # a reason only the late era writes
    c = log.chunk(3, 1)
    log.assistant(3, 1, [{"type": "text", "text": "ok"}], [c])
    log.step_end(3, 1)
    log.turn_end(3)
    return log


def _check(tmp_path, log: Log, **options):
    return check([log.write(tmp_path / f"{log.header['id']}.jsonl")], CheckOptions(**options), keep_models=True)


def test_a_late_shape_after_the_first_lines_judges_the_log_late(tmp_path):
    result = _check(tmp_path, _late_after_the_window())
    (m,) = result.models
    assert (m.profile.era, m.profile.name) == ("late", "late-unwrapped")
    assert [f for f in result.findings if f.severity == "error"] == []  # no HDR011 for reason "change"
    assert "config.provider (late)" in m.era_evidence


def test_the_log_is_read_once_when_its_first_lines_decide(tmp_path, monkeypatch):
    calls = []
    real = load_mod.iter_source_lines
    for module in (load_mod, era_mod):  # every reader of a log's lines
        monkeypatch.setattr(module, "iter_source_lines", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    log = Log("early")
    log.clean_turn(1, header_reason="initial", header=LATE_HEADER)
    log.header["delegationDepth"] = 0
    path = log.write(tmp_path / "early.jsonl")
    model = replay(LogSource(path, tmp_path))
    assert model.profile.era == "late" and len(calls) == 1


def test_no_era_specific_shape_is_undetermined_and_judged_by_the_seed_rules(tmp_path):
    empty = Log("empty")
    chunks = Log("chunks", cwd="/work")
    for i in range(3):
        chunks.chunk(1, 1, f"c{i}")  # a chunk-only replay script: no boundary, no header, no message
    result = check([empty.write(tmp_path / "empty.jsonl"), chunks.write(tmp_path / "chunks.jsonl")], keep_models=True)
    rows = report_json(result)["sessions"]
    assert sorted((r["session"], r["era"], r["profile"]) for r in rows) == [
        ("chunks", "undetermined", "undetermined"),
        ("empty", "undetermined", "undetermined"),
    ]
    # The seed rules: every event must be turn-enclosed (one finding for the unframed run).
    assert [f.rule for f in result.findings if f.file.endswith("chunks.jsonl")] == ["EVT008"]


def test_a_log_mixing_eras_is_reported_once_as_such(tmp_path):
    log = _late_after_the_window()
    log.turn_start(4)
    log.user("x")
    log.step_start(4, 1)
    log.delta({"system": {"keepStart": 0, "keepEnd": 0, "insert": ["sys 3"]}})  # seed-only shape, late in the log
    c = log.chunk(4, 1)
    log.assistant(4, 1, [{"type": "text", "text": "y"}], [c])
    log.step_end(4, 1)
    log.turn_end(4)
    result = _check(tmp_path, log)
    mixed = [f for f in result.findings if f.rule == "LOG011"]
    assert len(mixed) == 1 and "request/header-delta" in mixed[0].message
    assert result.models[0].profile.era == "late"


def test_a_forced_profile_still_wins(tmp_path):
    result = _check(tmp_path, _late_after_the_window(), profile="seed")
    assert result.models[0].profile.name == "seed"
    assert "HDR011" in {f.rule for f in result.findings} and "LOG011" not in {f.rule for f in result.findings}


def test_a_resume_whose_appended_lines_change_the_era_replays_in_full(tmp_path):
    log = Log("grow")
    log.turn_start(1)
    log.user("hi")
    log.turn_end(1)
    path = log.write(tmp_path / "grow.jsonl")
    model = replay(LogSource(path, tmp_path), checkpoint=True)
    assert model.profile.name == "undetermined" and model.checkpoint is not None
    more = Log("grow")
    more.events = list(log.events)
    more.turn_start(2)
    more.user("again")
    more.turn_end(2)
    with open(path, "ab") as fh:  # the same era: the resume goes on
        fh.write(b"".join(orjson.dumps(e) + b"\n" for e in more.events[len(log.events) :]))
    grown = resume(LogSource(path, tmp_path), model.checkpoint)
    assert grown is not None and grown.events == len(more.events) and grown.profile.name == "undetermined"
    late = Log("grow")
    late.events = list(more.events)
    late.clean_turn(3, header_reason="initial", header=LATE_HEADER)
    with open(path, "ab") as fh:  # a late shape appears: the verdict changes, so no resume
        fh.write(b"".join(orjson.dumps(e) + b"\n" for e in late.events[len(more.events) :]))
    assert resume(LogSource(path, tmp_path), grown.checkpoint) is None
    assert replay(LogSource(path, tmp_path)).profile.era == "late"
