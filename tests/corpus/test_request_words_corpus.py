"""Request differences on real corpus logs: each finding names its capture line and the producing event."""

from __future__ import annotations

from invariants import check
from tests.conftest import corpus_dir


def test_t52_two_divergences_read_differently_and_name_the_delta_that_set_the_prefix():
    folder = corpus_dir("upstream-seed-era/support__invariants__invariants") / "t52"
    result = check([folder])
    div = [f for f in result.findings if f.rule == "DIV001"]
    assert len(div) == 2 and div[0].message != div[1].message
    assert div[0].message.startswith("requests.jsonl:2: prefix message 1 of 1 (messages[0]) missing")
    assert div[1].message.startswith("requests.jsonl:3: prefix placed after the derived history")
    for f in div:
        # seq 4 is the request/header-delta that set messagePrefix (line 6); the finding stays at the step
        assert f.detail["source_seq"] == 4 and f.detail["source_event"] == "request/header-delta"
        assert "set by request/header-delta seq 4, line 6" in f.message
        assert (f.seq, f.line) == (2, 4)
    assert [f.detail["capture"].rsplit("/", 1)[1] for f in div] == ["requests.jsonl:2", "requests.jsonl:3"]


def test_the_capture_verdicts_sit_beside_ours_and_agree_on_t52():
    folder = corpus_dir("upstream-seed-era/support__invariants__invariants") / "t52"
    result = check([folder])
    assert [(r.status, r.verdict == "ok", r.agrees) for r in result.requests] == [
        ("ok", True, True),
        ("diverges", False, True),
        ("diverges", False, True),
    ]


def test_a_property_no_log_shows_is_a_disagreement_a_face_can_list():
    # t56: the harness rejects a request for not carrying a frozen messages array, which no log can show.
    folder = corpus_dir("upstream-seed-era/support__invariants__invariants") / "t56"
    result = check([folder])
    (odd,) = [r for r in result.requests if r.agrees is False]
    assert odd.status == "ok" and "frozen messages array" in (odd.harness_verdict or "")
    assert result.request_counts()["disagreements"] == 1
