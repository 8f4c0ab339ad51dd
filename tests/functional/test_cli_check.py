"""`inspector check` end to end: the log ledger (RSM001), fork parents found beside or under the
root, exit codes, and the cache-report command's wiring."""

from __future__ import annotations

import json
import shutil

from inspector.cli import main
from invariants import check
from invariants.analysis.forks import encode_id, find_parent_log
from invariants.gate.ledger import apply_ledger
from invariants.read.source import LogSource
from tests.conftest import SAMPLES
from tests.support.logs import Log


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _two_instance_log(extra_turn: bool = False) -> Log:
    log = Log("sess")
    log.clean_turn(1, header_reason="initial")
    log.clean_turn(2)
    if extra_turn:
        log.clean_turn(3, header_reason="resume")  # a new loop instance appends after the stored log
    return log


def test_ledger_accepts_appends_and_flags_a_rewritten_prefix(capsys, tmp_path):
    path = _two_instance_log().write(tmp_path / "sess.jsonl")
    ledger = tmp_path / "ledger.json"
    code, out, _ = run(capsys, "check", str(path), "--ledger", str(ledger), "--no-cache")
    assert code == 0 and "RSM001" not in out
    entry = json.loads(ledger.read_text())["logs"]["sess.jsonl"]["sess"]
    assert entry["bytes"] == path.stat().st_size and entry["events"] == len(_two_instance_log().events)
    # a resume appends: the recorded prefix is intact
    _two_instance_log(extra_turn=True).write(path)
    code, out, _ = run(capsys, "check", str(path), "--ledger", str(ledger), "--no-cache")
    assert code == 0 and "RSM001" not in out
    grown = json.loads(ledger.read_text())["logs"]["sess.jsonl"]["sess"]
    assert grown["bytes"] == path.stat().st_size > entry["bytes"]
    # rewrite an early event consistently (nothing inside the log can tell), then resume again
    log = _two_instance_log(extra_turn=True)
    log.events[1]["data"]["content"][0]["text"] = "a different question"
    log.clean_turn(4, header_reason="resume")
    log.write(path)
    assert [f.rule for f in check([path]).findings if f.severity == "error"] == []
    code, out, _ = run(capsys, "check", str(path), "--ledger", str(ledger), "--no-cache", "--format", "json")
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "RSM001"]
    assert code == 1 and f["severity"] == "error" and f["session"] == "sess" and f["line"] == 1
    assert "rewritten, not appended to" in f["message"] and "the resume at seq" in f["message"]
    assert f["detail"]["recorded_bytes"] == grown["bytes"]
    # like known_hosts, the mismatching record is kept until someone removes it
    assert json.loads(ledger.read_text())["logs"]["sess.jsonl"]["sess"] == grown
    code, out, _ = run(capsys, "check", str(path), "--ledger", str(ledger), "--no-cache", "--ignore", "RSM001")
    assert code == 0
    # a truncated log is rewritten too
    path.write_bytes(path.read_bytes()[:100])
    code, out, _ = run(
        capsys, "check", str(path), "--ledger", str(ledger), "--no-cache", "--select", "RSM001", "--format", "json"
    )
    assert "shorter than" in json.loads(out)["findings"][0]["message"]


def test_the_ledger_reads_models_and_summaries_alike(tmp_path):
    """apply_ledger takes SessionModels (keep_models=True) as it takes SessionSummaries."""
    path = _two_instance_log().write(tmp_path / "sess.jsonl")
    ledger = tmp_path / "ledger.json"
    assert apply_ledger(ledger, check([path], keep_models=True).models) == []
    log = _two_instance_log(extra_turn=True)
    log.events[1]["data"]["content"][0]["text"] = "a different question"
    log.write(path)
    summaries_ledger = tmp_path / "ledger2.json"
    shutil.copy(ledger, summaries_ledger)
    from_models = apply_ledger(ledger, check([path], keep_models=True).models)
    from_summaries = apply_ledger(summaries_ledger, check([path]).sessions)
    assert [f.rule for f in from_models] == ["RSM001"]
    assert from_models[0].detail["resume_seqs"] == from_summaries[0].detail["resume_seqs"] != []
    assert from_models[0].message == from_summaries[0].message.replace(str(summaries_ledger), str(ledger))


def test_a_broken_ledger_is_a_usage_error(capsys, tmp_path):
    ledger = tmp_path / "l.json"
    ledger.write_text('{"version": 7}')
    assert run(capsys, "check", str(SAMPLES / "clean-multi-turn.jsonl"), "--ledger", str(ledger), "--no-cache")[0] == 2


def test_fork_parent_found_beside_the_child_when_only_the_child_is_checked(capsys):
    child = next(p for p in (SAMPLES / "fork").glob("*.jsonl") if b"parentSession" in p.read_bytes()[:300])
    code, out, _ = run(capsys, "check", str(child), "--no-cache", "--format", "json")
    report = json.loads(out)
    assert report["summary"]["sessions"] == 1
    assert not [f for f in report["findings"] if f["rule"].startswith("FRK")]


def test_fork_parent_found_under_the_same_root_in_the_late_layout(tmp_path):
    parent = Log("par/ent")  # an id the store must encode
    parent.clean_turn(1, header_reason="initial")
    project = tmp_path / "--proj--"
    (project / encode_id("par/ent")).mkdir(parents=True)
    parent.write(project / encode_id("par/ent") / "session.jsonl")
    child = Log("kid", parentSession="par/ent", seedLength=len(parent.events))
    child.events = [dict(e) for e in parent.events]
    child.clean_turn(2, header_reason="resume")
    other = tmp_path / "--other--" / "kid"
    other.mkdir(parents=True)
    child_path = child.write(other / "session.jsonl")
    found = find_parent_log(LogSource(child_path, tmp_path), "par/ent")
    assert found is not None and found.path == project / "par~002Fent" / "session.jsonl"
    assert find_parent_log(LogSource(child_path, other), "par/ent") is None  # outside the root named
    # checking the root's child folder alone still compares the seed, against the parent found under the root
    child.events[1] = {
        **child.events[1],
        "data": {"content": [{"type": "text", "text": "tampered"}], "source": {"kind": "user"}},
    }
    child.write(child_path)
    from invariants.gate.fork_checks import fork_findings
    from invariants.gate.result import SessionSummary
    from invariants.gate.session_table import SessionTable
    from invariants.replay.session import replay

    table = SessionTable([SessionSummary.from_model(replay(LogSource(child_path, tmp_path))).to_json()])
    found_findings, _ = fork_findings(table.forks())
    table.close()
    assert [f.rule for f in found_findings] == ["FRK001"]


def test_exit_codes(capsys, tmp_path):
    clean = str(SAMPLES / "clean-multi-turn.jsonl")
    assert run(capsys, "check", clean, "--no-cache")[0] == 0
    assert run(capsys, "check", str(SAMPLES / "capture-divergence.jsonl"), "--no-cache")[0] == 1
    assert run(capsys, "check", str(SAMPLES / "capture-divergence.jsonl"), "--no-cache", "--exit-zero")[0] == 0
    assert run(capsys, "check", clean, str(tmp_path / "nope.jsonl"), "--no-cache")[0] == 2
    assert run(capsys, "check", clean, "--no-cache", "--jobs", "-1")[0] == 2
    code, _, err = run(capsys, "check", clean, "--no-cache", "--write-baseline", str(tmp_path / "b.json"))
    assert code == 0 and json.loads((tmp_path / "b.json").read_text())["findings"] == []


def test_cache_report_is_a_command(capsys):
    code, out, _ = run(capsys, "cache-report", str(SAMPLES / "compaction.jsonl"))
    assert code == 0 and "compaction:" in out and "bytes/4" in out
    code, out, _ = run(capsys, "cache-report", str(SAMPLES / "compaction.jsonl"), "--format", "json")
    doc = json.loads(out)
    assert doc["token_estimate"] == "bytes/4" and doc["render_order"] == ["model", "system", "tools", "messages"]
    assert doc["sessions"][0]["summary"]["breakers"] == {"compaction": 2}
    assert run(capsys, "cache-report", str(SAMPLES / "nope.jsonl"))[0] == 2


def test_checking_a_copy_elsewhere_keeps_parity_with_the_library(capsys, tmp_path):
    shutil.copytree(SAMPLES / "fork", tmp_path / "fork")
    code, out, _ = run(capsys, "check", str(tmp_path / "fork"), "--no-cache", "--format", "json")
    from invariants.gate.formats import render

    assert out == render(check([tmp_path / "fork"]), "json") + "\n"


def test_two_files_with_one_session_id_are_two_ledger_entries(capsys, tmp_path):
    """Issue 34, item 3: the ledger is keyed per file (path under the root + id), so copies never collide."""
    root = tmp_path / "root"
    for sub in ("a", "b"):
        (root / sub).mkdir(parents=True)
    _two_instance_log().write(root / "a" / "sess.jsonl")
    log = _two_instance_log(extra_turn=True)  # same id, other bytes
    log.write(root / "b" / "sess.jsonl")
    ledger = tmp_path / "ledger.json"
    for _ in range(2):  # the first run records both; an unchanged re-run finds both intact
        code, out, _ = run(capsys, "check", str(root), "--ledger", str(ledger), "--no-cache")
        assert code == 0 and "RSM001" not in out
    logs = json.loads(ledger.read_text())["logs"]
    assert sorted(logs) == ["a/sess.jsonl", "b/sess.jsonl"] and all(list(v) == ["sess"] for v in logs.values())
    log.events[1]["data"]["content"][0]["text"] = "a different question"
    log.write(root / "b" / "sess.jsonl")
    code, out, _ = run(capsys, "check", str(root), "--ledger", str(ledger), "--no-cache", "--format", "json")
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "RSM001"]
    assert f["file"].endswith("b/sess.jsonl")


def test_a_version_1_ledger_is_migrated_with_a_note(capsys, tmp_path):
    path = _two_instance_log().write(tmp_path / "sess.jsonl")
    old = tmp_path / "old.json"
    run(capsys, "check", str(path), "--ledger", str(old), "--no-cache")
    entry = json.loads(old.read_text())["logs"]["sess.jsonl"]["sess"]
    v1 = {"version": 1, "sessions": {"sess": {"file": str(path), **entry}, "gone": {"file": "/x/y.jsonl", **entry}}}
    old.write_text(json.dumps(v1))
    code, out, err = run(capsys, "check", str(path), "--ledger", str(old), "--no-cache")
    assert code == 0 and "RSM001" not in out
    assert "ledger migrated from version 1" in err
    doc = json.loads(old.read_text())
    assert doc["version"] == 2 and doc["logs"] == {"sess.jsonl": {"sess": entry}, "/x/y.jsonl": {"gone": entry}}
    assert "migrated" not in run(capsys, "check", str(path), "--ledger", str(old), "--no-cache")[2]
