"""check(progress=...): the findings of each log as its replay goes, as the configuration reports them."""

from __future__ import annotations

import orjson

from invariants import check
from invariants.gate.config import Config
from invariants.gate.report import report_json
from tests.support.logs import story_log


def _told(monkeypatch, tmp_path, every: int, config: Config | None = None) -> tuple[list, object]:
    monkeypatch.setattr("invariants.replay.fold.PROGRESS_BYTES", every)
    log, _ = story_log(tmp_path)
    calls: list = []
    result = check([log], config=config, progress=lambda src, found, at: calls.append((src.path.name, found, at)))
    return calls, result


def test_progress_hears_the_findings_so_far_at_growing_offsets(monkeypatch, tmp_path):
    calls, result = _told(monkeypatch, tmp_path, 1)
    size = (tmp_path / "story.jsonl").stat().st_size
    offsets = [at for _, _, at in calls]
    assert len(calls) > 20 and offsets == sorted(set(offsets)) and offsets[-1] < size
    assert {name for name, _, _ in calls} == {"story.jsonl"}
    counts = [len(found) for _, found, _ in calls]
    assert counts == sorted(counts) and counts[0] == 0  # findings only ever join
    (drift,) = calls[-1][1]  # by the end of the replay: the log's own finding; the capture's come after it
    assert drift.rule == "PFX002" and drift in result.findings
    assert sorted(f.rule for f in result.findings) == ["DIV001", "PFX002"]


def test_progress_changes_nothing_in_the_result(monkeypatch, tmp_path):
    calls, told = _told(monkeypatch, tmp_path, 1)
    plain = check([tmp_path / "story.jsonl"])
    assert calls and orjson.dumps(report_json(told)) == orjson.dumps(report_json(plain))


def test_progress_findings_are_judged_by_the_configuration(monkeypatch, tmp_path):
    calls, _ = _told(monkeypatch, tmp_path, 1, Config(severity={"PFX002": "error"}))
    assert calls[-1][1][0].severity == "error"
    calls, _ = _told(monkeypatch, tmp_path / "again", 1, Config(ignore=["PFX002"]))
    assert calls and all(not found for _, found, _ in calls)


def test_a_log_shorter_than_the_step_is_never_reported_on(monkeypatch, tmp_path):
    calls, result = _told(monkeypatch, tmp_path, 1 << 30)
    assert calls == [] and len(result.findings) == 2
