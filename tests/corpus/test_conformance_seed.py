"""Conformance over real seed-era logs written by the harness (../shared/corpus, read in place)."""

from __future__ import annotations

import pytest

from invariants import check
from tests.conftest import corpus_dir

# Properties of process memory that no log can show (see ../shared/corpus/README.md).
UNOBSERVABLE = ("a loop-built request must carry a frozen messages array",)


@pytest.fixture(scope="module")
def upstream():
    return check([corpus_dir("upstream-seed-era")], keep_models=True)


def test_fixture_logs_have_no_error_findings():
    result = check([corpus_dir("fixtures-seed-era")])
    assert len(result.sessions) == 49
    errors = [(f.file, f.rule, f.message) for f in result.findings if f.severity == "error"]
    assert errors == []
    # Logs with no era-specific shape (header-only, or turns of prompts a hook blocked) are undetermined.
    assert {m.era for m in result.sessions} == {"seed", "undetermined"}
    assert all(m.requests == 0 and m.steps == 0 for m in result.sessions if m.era == "undetermined")


def _verdict(rc):
    extra = rc.recorded.extra
    return extra.get("verdict"), extra.get("shadowVerdict")


def test_requests_the_harness_accepted_are_explained(upstream):
    accepted = [
        rc
        for rc in upstream.requests
        if rc.recorded.loop_built
        and (_verdict(rc)[0] == "ok" or (_verdict(rc)[0] == "unchecked" and _verdict(rc)[1] == "ok"))
    ]
    assert len(accepted) > 700
    bad = [(rc.recorded.file, rc.recorded.line, rc.status, rc.codes) for rc in accepted if rc.status != "ok"]
    assert bad == []


def test_requests_the_harness_rejected_are_reported(upstream):
    rejected = [rc for rc in upstream.requests if _verdict(rc)[0] not in ("ok", "unchecked", None)]
    checkable = [rc for rc in rejected if not any(u in _verdict(rc)[0] for u in UNOBSERVABLE)]
    assert len(checkable) >= 6
    missed = [(rc.recorded.file, rc.recorded.line, _verdict(rc)[0]) for rc in checkable if rc.status == "ok"]
    assert missed == []


def test_one_shots_are_shown_not_checked(upstream):
    shots = [rc for rc in upstream.requests if not rc.recorded.loop_built]
    assert shots and all(rc.status == "one-shot" for rc in shots)


def test_no_other_error_findings(upstream):
    rejected_files = {rc.recorded.file for rc in upstream.requests if _verdict(rc)[0] not in ("ok", "unchecked", None)}
    from pathlib import Path

    rejected_dirs = {str(Path(f).parent) for f in rejected_files}
    stray = [
        (f.file, f.rule, f.message)
        for f in upstream.findings
        if f.severity == "error" and str(Path(f.file).parent) not in rejected_dirs
    ]
    assert stray == []
