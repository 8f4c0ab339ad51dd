"""Conformance over real late-era logs written by the harness (../shared/corpus, read in place)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from invariants import check
from invariants.simulate.convert import convert_tree
from tests.conftest import corpus_dir

# Properties of process memory that no log can show (../shared/corpus/README.md).
UNOBSERVABLE = ("a loop-built request must carry a frozen messages array", "a loop-built request must be frozen")

# Error findings on logs the harness accepted, each for a stated reason.  Keyed by
# (path relative to upstream-late-era, rule).
KNOWN = {
    (
        "session__session-title__provider/t05/quiet.jsonl",
        "REQ002",
    ): "a test marks a hand-made llm.stream request as loop-built; with no step/start in the log, HEAD's "
    "request invariant would reject it too ('a loop-built request with no step/start in its session log')",
    ("session__session-title__provider/t05/unmatched-boundary.jsonl", "REQ002"): "as above",
}


@pytest.fixture(scope="module")
def upstream():
    return check([corpus_dir("upstream-late-era")], keep_models=True)


@pytest.fixture(scope="module")
def fixtures():
    return check([corpus_dir("fixtures-late-era")], keep_models=True)


def test_fixture_logs_have_no_error_findings(fixtures):
    assert len(fixtures.sessions) == 148
    errors = [(f.file, f.rule, f.message) for f in fixtures.findings if f.severity == "error"]
    assert errors == []
    late = [m for m in fixtures.sessions if m.era == "late"]
    assert len(late) >= 140  # the rest show no era-specific shape at all (chunk-only replay scripts)


def _key(f) -> tuple:
    name = Path(f.file).name.replace(".jsonl.zstd", ".jsonl")
    return (name, f.rule, f.severity, f.seq, f.turn, f.step, f.path, re.sub(r"\bline \d+", "line N", f.message))


def test_fixtures_as_zstd_with_packed_rows_give_the_same_findings(fixtures, tmp_path):
    src = corpus_dir("fixtures-late-era")
    files = sorted(src.glob("*.jsonl"))
    packed = convert_tree(files, tmp_path / "zstd")  # rows re-encoded from the events, one frame per batch
    plain = convert_tree(files, tmp_path / "plain", pack=False, compress=False)  # every row expanded
    assert len(packed) == 148 and all(p.name.endswith(".jsonl.zstd") for p in packed)
    assert len(plain) == 148 and all(p.name.endswith(".jsonl") for p in plain)
    a, b = check([tmp_path / "zstd"], keep_models=True), check([tmp_path / "plain"], keep_models=True)
    assert sum(m.chunk_rows for m in b.models) == 0
    assert sum(m.chunk_rows for m in a.models) >= sum(m.chunk_rows for m in fixtures.models) > 200
    for other in (a, b):
        assert sum(m.events for m in other.sessions) == sum(m.events for m in fixtures.sessions)
        assert [m.profile for m in other.sessions] == [m.profile for m in fixtures.sessions]
        assert sorted(map(_key, other.findings)) == sorted(map(_key, fixtures.findings))


def _verdict(rc):
    extra = rc.recorded.extra
    return extra.get("verdict"), extra.get("shadowVerdict")


def test_every_upstream_log_is_judged_by_head(upstream):
    assert len(upstream.sessions) == 1016
    assert {m.profile for m in upstream.sessions} == {"head"}


def test_requests_the_harness_accepted_are_explained(upstream):
    accepted = [
        rc
        for rc in upstream.requests
        if rc.recorded.loop_built
        and (_verdict(rc)[0] == "ok" or (_verdict(rc)[0] == "unchecked" and _verdict(rc)[1] == "ok"))
    ]
    assert len(accepted) > 1100
    bad = [(rc.recorded.file, rc.recorded.line, rc.status, rc.codes) for rc in accepted if rc.status != "ok"]
    assert bad == []


def test_requests_the_harness_rejected_are_reported(upstream):
    rejected = [rc for rc in upstream.requests if _verdict(rc)[0] not in ("ok", "unchecked", None)]
    checkable = [rc for rc in rejected if not any(u in _verdict(rc)[0] for u in UNOBSERVABLE)]
    assert len(checkable) >= 7
    missed = [(rc.recorded.file, rc.recorded.line, _verdict(rc)[0]) for rc in checkable if rc.status == "ok"]
    assert missed == []


def test_retries_give_several_requests_per_step(upstream):
    multi = [s for m in upstream.models for s in m.steps if len(s.requests) > 1]
    assert len(multi) >= 30
    ok = [s for s in multi if s.status == "ok"]
    assert len(ok) >= 30


def test_one_shots_are_shown_not_checked(upstream):
    shots = [rc for rc in upstream.requests if not rc.recorded.loop_built]
    assert shots and all(rc.status == "one-shot" for rc in shots)


def test_no_other_error_findings(upstream):
    root = corpus_dir("upstream-late-era")
    rejected_dirs = {
        str(Path(rc.recorded.file).parent)
        for rc in upstream.requests
        if _verdict(rc)[0] not in ("ok", "unchecked", None)
    }
    stray = []
    known_seen = set()
    for f in upstream.findings:
        if f.severity != "error" or str(Path(f.file).parent) in rejected_dirs:
            continue
        key = (str(Path(f.file).relative_to(root)), f.rule)
        if key in KNOWN:
            known_seen.add(key)
            continue
        stray.append((f.file, f.rule, f.message))
    assert stray == []
    assert known_seen == set(KNOWN), "a known deviation went away: update KNOWN"
