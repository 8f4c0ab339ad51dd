"""The projected snapshot form (upstream PR #2702): body lines without seq/time, rebuilt as
upstream's ``parseSessionLog`` rebuilds them, on real rc.2 snapshot logs and on mixed files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from invariants import check
from invariants.gate.report import report_json
from invariants.read.load import LogReader
from invariants.read.projected import PROJECTED
from tests.conftest import SAMPLES

DATA = Path(__file__).resolve().parents[1] / "data" / "upstream-rc2"
ROW_TYPES = {"text-chunks", "reasoning-chunks", "tool-call-chunks"}


def _folder() -> Path:
    """The folder of upstream snapshot logs to read: ``DSH_UPSTREAM_SNAPSHOTS`` names another (a larger set)."""
    return Path(os.environ.get("DSH_UPSTREAM_SNAPSHOTS") or DATA)


def _logs(folder: Path) -> list[Path]:
    if not folder.is_dir():
        pytest.skip(f"no upstream snapshot logs at {folder} (set DSH_UPSTREAM_SNAPSHOTS to a folder of them)")
    logs = sorted(p for p in folder.rglob("*.jsonl") if p.is_file())
    if not logs:
        pytest.skip(f"no *.jsonl under {folder}")
    return logs


def _body(path: Path) -> list[dict]:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    return [orjson.loads(line) for line in lines[1:]]


def _expected_envelopes(body: list[dict]) -> list[tuple[int, int]]:
    """(seq, time) of every event as parseSessionLog rebuilds them, worked out here on the parsed lines:
    seq is the running count of decoded events, time 0 (a packed row's members: time0 plus its dt gaps)."""
    out: list[tuple[int, int]] = []
    for rec in body:
        seq = rec.get("seq0" if rec["type"] in ROW_TYPES else "seq", len(out))
        if rec["type"] in ROW_TYPES:
            data = rec["data"]
            members = len(data.get("texts") or data.get("args") or [])
            t = rec.get("time0", 0)
            for j in range(members):
                out.append((seq + j, t))
                if j < len(data["dt"]):
                    t += data["dt"][j]
        else:
            out.append((seq, rec.get("time", 0)))
    return out


def test_the_committed_upstream_logs_say_where_they_come_from():
    readme = (DATA / "README.md").read_text()
    assert "zyy606309-star/deepseek-harness" in readme and "b150a551b8" in readme and "MIT" in readme
    assert (DATA / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.parametrize("which", ["committed"])
def test_real_rc2_snapshots_are_read_with_their_events(which):
    logs = _logs(_folder())
    projected = 0
    for path in logs:
        body = _body(path)
        reader = LogReader(path)
        events = list(reader)
        if not body:
            assert events == [], path
            continue
        assert events, f"{path}: read as empty"
        assert not any(f.rule == "LOG004" for f in reader.findings), f"{path}: {reader.findings}"
        if all(("seq0" if r["type"] in ROW_TYPES else "seq") not in r for r in body):
            projected += 1
            assert reader.form == PROJECTED and reader.header and reader.header.form == PROJECTED
            assert [(e.seq, e.time) for e in events] == _expected_envelopes(body), path
    assert projected, "no projected snapshot among the logs"


def test_the_check_of_real_rc2_snapshots_has_no_integrity_error_and_names_the_form():
    folder = _folder()
    logs = _logs(folder)
    result = check(folder, allow_empty=True)
    rows = report_json(result)["sessions"]
    assert len(rows) == len(logs)
    empty = [r["file"] for r in rows if r["events"] == 0 and _body(Path(r["file"]))]
    assert not empty, f"read as empty: {empty}"
    for f in result.findings:
        assert f.rule not in {"LOG001", "LOG002", "LOG003", "LOG004", "LOG012", "FRK004"}, f
    assert all(r.get("form") == PROJECTED for r in rows if _body(Path(r["file"])))
    if folder == DATA:  # the committed handful: nothing to fail the gate
        assert not [f for f in result.findings if f.severity == "error"], result.findings


def test_a_projected_fork_child_is_read_from_its_seed():
    child = DATA / "examples/acp-agent/tests/snapshots/subagent-fork-in-process/session.1.jsonl"
    if not child.is_file():
        pytest.skip(f"{child} is absent")
    header = orjson.loads(child.read_bytes().splitlines()[0])
    assert header.get("seedLength", 0) > 0
    result = check(child.parent)
    assert not [f for f in result.findings if f.rule.startswith("FRK")], result.findings


def _rules(result) -> list[str]:
    return [f.rule for f in result.findings if f.severity != "info"]


def _projected_log(tmp_path: Path, lines: list[dict], name: str = "p.jsonl") -> Path:
    head = {"type": "session", "version": 0, "id": "p1", "createdAt": 1, "cwd": "/w", "delegationDepth": 0}
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [head, *lines]))
    return path


BODY = [
    {"type": "turn/start", "data": {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}},
    {"type": "user/message", "data": {"content": [{"type": "text", "text": "hi"}]}, "surfaceOp": "append"},
    {"type": "step/start", "data": {"turn": 1, "step": 1}},
    {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [3, 4], "texts": ["a", "b", "c"]}},
    {"type": "step/end", "data": {"turn": 1, "step": 1}},
    {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
]


def test_a_packed_row_advances_the_rebuilt_seq_by_its_members(tmp_path):
    reader = LogReader(_projected_log(tmp_path, BODY))
    events = list(reader)
    assert [(e.type, e.seq, e.time) for e in events][2:7] == [
        ("step/start", 2, 0),
        ("assistant/chunk", 3, 0),
        ("assistant/chunk", 4, 3),
        ("assistant/chunk", 5, 7),
        ("step/end", 6, 0),
    ]
    assert reader.findings == [] and reader.form == PROJECTED


def test_a_projected_log_mixing_runtime_lines_is_one_finding(tmp_path):
    body = [dict(x) for x in BODY]
    body[2] = {**body[2], "seq": 2, "time": 9}
    body[4] = {**body[4], "seq": 6, "time": 9}
    result = check(_projected_log(tmp_path, body))
    mixed = [f for f in result.findings if f.rule == "LOG018"]
    assert len(mixed) == 1 and mixed[0].severity == "error" and mixed[0].line == 4
    assert "2 such lines, lines 4..6" in mixed[0].message
    alone = check(_projected_log(tmp_path, BODY, "alone.jsonl"))  # what the rules say of the log itself
    assert _rules(result) == ["LOG018", *_rules(alone)]


def test_a_runtime_log_with_projected_lines_is_one_finding(tmp_path):
    body, t = [], 0
    for i, x in enumerate(BODY[:3] + BODY[4:]):
        t += 5
        body.append({"type": x["type"], "seq": i, "time": t, **{k: v for k, v in x.items() if k != "type"}})
    for i in (1, 2):
        del body[i]["seq"], body[i]["time"]
    result = check(_projected_log(tmp_path, body))
    alone = check(_projected_log(tmp_path, BODY[:3] + BODY[4:], "alone.jsonl"))
    assert sorted(_rules(result)) == sorted(["LOG018", *_rules(alone)])
    (mixed,) = [f for f in result.findings if f.rule == "LOG018"]
    assert mixed.line == 3 and "2 such lines, lines 3..4" in mixed.message
    row = report_json(result)["sessions"][0]
    assert "form" not in row and row["events"] == 5


def test_runtime_logs_keep_their_report_rows(tmp_path):
    result = check(SAMPLES / "clean-multi-turn.jsonl")
    row = report_json(result)["sessions"][0]
    assert "form" not in row
    assert list(row) == ["session", "file", "era", "profile", "events", "turns", "steps", "instances", "requests"]
    assert json.loads(json.dumps(row)) == row
