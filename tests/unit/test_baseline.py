"""Baselines: record the known findings, then report only new ones; survive line shifts."""

from __future__ import annotations

import json
import os
import shutil

import orjson

from inspector.cli import main
from invariants import check
from invariants.gate.baseline import apply_baseline, fingerprint, normalize_message, read_baseline
from tests.conftest import SAMPLES, corpus_dir


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _insert_event(log_lines: list[bytes], position: int, event: dict) -> list[bytes]:
    """Insert an event at seq ``position`` and renumber everything after it (seq, sourceEventSeqs, replace ranges)."""

    def bump(s):
        return s + 1 if isinstance(s, int) and s >= position else s

    out = [log_lines[0]]
    for raw in log_lines[1:]:
        e = orjson.loads(raw)
        e["seq"] = bump(e["seq"])
        if isinstance(e.get("sourceEventSeqs"), list):
            e["sourceEventSeqs"] = [bump(s) for s in e["sourceEventSeqs"]]
        if isinstance(e.get("surfaceOp"), dict):
            e["surfaceOp"] = {
                **e["surfaceOp"],
                "start": bump(e["surfaceOp"]["start"]),
                "end": bump(e["surfaceOp"]["end"]),
            }
        out.append(orjson.dumps(e))
    out.insert(1 + position, orjson.dumps({**event, "seq": position}))
    return out


def _shifted_copy(tmp_path, name: str, position: int) -> None:
    """A copy of a sample whose every later line and seq moved down by one (an extra event in an earlier turn)."""
    lines = (SAMPLES / name).read_bytes().splitlines()
    first = orjson.loads(lines[1 + position])
    lines = _insert_event(lines, position, {"type": "todo/write", "time": first["time"], "data": {"todos": []}})
    (tmp_path / name).write_bytes(b"\n".join(lines) + b"\n")
    cap = SAMPLES / name.replace(".jsonl", ".requests.jsonl")
    if cap.exists():
        recs = [orjson.loads(x) for x in cap.read_bytes().splitlines()]
        for r in recs:
            if isinstance(r.get("logLength"), int) and r["logLength"] > position:
                r["logLength"] += 1
        (tmp_path / cap.name).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))


def test_round_trip_then_an_edit_that_shifts_lines_keeps_the_baseline(capsys, tmp_path):
    work = tmp_path / "logs"
    work.mkdir()
    for name in (
        "corrupt-delta.jsonl",
        "corrupt-delta.requests.jsonl",
        "capture-divergence.jsonl",
        "capture-divergence.requests.jsonl",
    ):
        shutil.copy(SAMPLES / name, work / name)
    base = tmp_path / "baseline.json"
    code, _, err = run(capsys, "check", str(work), "--write-baseline", str(base), "--no-cache")
    assert code == 0 and "wrote 3 finding(s)" in err
    entries = read_baseline(base)
    assert sorted(e["rule"] for e in entries) == ["DIV001", "DIV010", "HDR002"]
    code, out, err = run(capsys, "check", str(work), "--baseline", str(base), "--no-cache")
    assert code == 0 and "0 error(s)" in out and "3 known finding(s) not shown" in out

    before = {f.rule: f for f in check([work]).findings}
    # an unrelated edit: one more event in turn 1 of each log moves every later line and seq
    _shifted_copy(work, "corrupt-delta.jsonl", 1)
    _shifted_copy(work, "capture-divergence.jsonl", 1)
    after = {f.rule: f for f in check([work]).findings}
    assert set(after) == set(before)
    for rule in before:
        assert (after[rule].line, after[rule].seq) == (before[rule].line + 1, before[rule].seq + 1), rule
        assert fingerprint(after[rule]) == fingerprint(before[rule])
    code, out, err = run(capsys, "check", str(work), "--baseline", str(base), "--no-cache", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["findings"] == []
    assert report["baseline"]["suppressed"] == 3 and report["baseline"]["stale"] == []


def test_new_findings_and_entries_that_no_longer_occur(capsys, tmp_path):
    shutil.copy(SAMPLES / "corrupt-delta.jsonl", tmp_path / "corrupt-delta.jsonl")
    base = tmp_path / "b.json"
    run(capsys, "check", str(tmp_path), "--write-baseline", str(base), "--no-cache")
    doc = json.loads(base.read_text())
    (sid,) = {e["session"] for e in doc["findings"]}
    gone = {**doc["findings"][0], "rule": "PFX001", "fingerprint": "0123456789abcdef", "message": "a fixed problem"}
    other = {**gone, "file": "not-checked-here/x.jsonl"}
    doc["findings"] += [gone, other]
    base.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", str(tmp_path), "--baseline", str(base), "--no-cache")
    assert code == 0
    assert (
        "1 entry no longer occur" in out
        and f"gone    PFX001  corrupt-delta.jsonl session {sid}" in out
        and "not-checked-here" not in out
    )
    # a genuinely new finding is reported even with a baseline
    shutil.copy(SAMPLES / "resume-prefix-drift.jsonl", tmp_path / "resume-prefix-drift.jsonl")
    code, out, _ = run(
        capsys,
        "check",
        str(tmp_path),
        "--baseline",
        str(base),
        "--no-cache",
        "--format",
        "json",
        "--fail-on",
        "warning",
    )
    report = json.loads(out)
    assert code == 1 and {f["rule"] for f in report["findings"]} == {"PFX002"}
    assert report["baseline"]["unchecked"] == 1 and len(report["baseline"]["stale"]) == 1


def test_matching_is_a_multiset_and_ignores_positions():
    result = check([SAMPLES / "fallback-tool-reorder.jsonl"])
    same = [f for f in result.findings if f.rule == "HDR014"]
    assert len(same) == 2 and len({fingerprint(f) for f in same}) == 2  # two steps, two identities
    entries = [
        {"file": os.path.relpath(f.file), "session": f.session, "rule": f.rule, "fingerprint": fingerprint(f)}
        for f in same[:1]
    ]
    outcome = apply_baseline(same + [same[0]], entries, {same[0].file}, "baseline.json")
    assert outcome.suppressed == 1 and len(outcome.new) == 2
    assert (
        normalize_message("line 12, seq 40 follows seq 38 in requests.jsonl:7")
        == "line #, seq # follows seq # in requests.jsonl:#"
    )


def test_a_broken_baseline_is_a_usage_error(capsys, tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text("[1, 2]")
    assert run(capsys, "check", str(SAMPLES / "clean-multi-turn.jsonl"), "--baseline", str(bad), "--no-cache")[0] == 2
    assert (
        run(
            capsys,
            "check",
            str(SAMPLES / "clean-multi-turn.jsonl"),
            "--baseline",
            str(tmp_path / "none.json"),
            "--no-cache",
        )[0]
        == 2
    )


# --------------------------------------------------------------------------- keyed per file, relative to the baseline

INVARIANTS_TESTS = "upstream-seed-era/support__invariants__invariants"


def _check_json(capsys, *argv) -> tuple[int, dict]:
    from inspector.cli import main

    code = main(["check", *argv, "--no-cache", "--format", "json", "-q"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


def test_a_baseline_of_one_file_neither_hides_nor_expires_another_files_findings(capsys, tmp_path):
    """t53 and t54 both hold session ``req-check``: t53's baseline must not absorb t54's findings."""
    folder = corpus_dir(INVARIANTS_TESTS)
    base = tmp_path / "baseline.json"
    from inspector.cli import main

    assert main(["check", str(folder / "t53"), "--no-cache", "-q", "--write-baseline", str(base)]) == 0
    capsys.readouterr()
    entries = json.loads(base.read_text())["findings"]
    assert {e["session"] for e in entries} == {"req-check"}
    assert all(e["file"].endswith("t53/req-check.jsonl") and not e["file"].startswith("/") for e in entries)

    code, report = _check_json(capsys, str(folder / "t54"), "--baseline", str(base))
    assert code == 1
    assert sorted(f["rule"] for f in report["findings"]) == ["DIV010", "LOG006"]  # t54's own, both reported
    assert report["baseline"]["suppressed"] == 0 and report["baseline"]["stale"] == []
    assert report["baseline"]["unchecked"] == len(entries)

    code, report = _check_json(capsys, str(folder / "t53"), "--baseline", str(base))
    assert code == 0 and report["findings"] == [] and report["baseline"]["suppressed"] == len(entries)


def test_baseline_entries_are_relative_to_the_baseline_so_another_working_directory_matches(
    capsys, tmp_path, monkeypatch
):
    folder = corpus_dir(INVARIANTS_TESTS) / "t53"
    base = tmp_path / "ci" / "baseline.json"
    base.parent.mkdir()
    from inspector.cli import main

    assert main(["check", str(folder), "--no-cache", "-q", "--write-baseline", str(base)]) == 0
    monkeypatch.chdir(tmp_path)
    code, report = _check_json(capsys, os.path.relpath(folder), "--baseline", "ci/baseline.json")
    assert code == 0 and report["findings"] == [] and report["baseline"]["suppressed"] == 2


def test_a_version_1_baseline_is_rejected_with_how_to_rewrite_it(capsys, tmp_path):
    folder = corpus_dir(INVARIANTS_TESTS) / "t53"
    old = tmp_path / "old.json"
    entry = {"session": "req-check", "rule": "LOG006", "fingerprint": "0123456789abcdef", "file": "x", "line": 5}
    old.write_text(json.dumps({"version": 1, "tool": "inspector 0.1.0", "findings": [entry]}))
    from inspector.cli import main

    assert main(["check", str(folder), "--no-cache", "--baseline", str(old)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "version 1 baseline matches findings by session id alone" in err[0]
    assert f"--write-baseline {old}" in err[0]
