"""What a request comparison reports: the config fields the harness does not compare, DeepDiff's own limit."""

from __future__ import annotations

import json

import pytest

from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.conftest import corpus_dir
from tests.support.logs import Log

# --------------------------------------------------------------------------- fields the harness does not compare


@pytest.mark.parametrize("t", ["t00", "t01", "t02", "t03", "t05", "t06", "t07"])
def test_no_div011_for_provider_on_the_harness_invariant_tests(t):
    """The agent-loop invariant compares model, system, temperature, maxTokens, stop, tools and messages,
    never provider or reasoningEffort: a hand-built request without them (or with another provider) is no
    divergence."""
    from invariants import check

    folder = corpus_dir(f"upstream-late-era/core__agent-loop__invariant/{t}")
    assert [f.message for f in check([folder]).findings if f.rule == "DIV011"] == []


@pytest.mark.parametrize(
    "overrides", [{"provider": None}, {"provider": "other"}, {"reasoningEffort": "high"}, {"topP": 0.9}]
)
def test_spread_config_fields_are_not_compared_but_unknown_fields_are(tmp_path, overrides):
    from invariants import check
    from tests.support.logs import one_turn

    log = one_turn()
    request = log.requests[0]["request"]
    for key, value in overrides.items():
        if value is None:
            request.pop(key)
        else:
            request[key] = value
    log.write(tmp_path / "late-1.jsonl")
    log.write_requests(tmp_path / "requests.jsonl")
    rules = [f.rule for f in check([tmp_path]).findings]
    assert rules == (["DIV011"] if "topP" in overrides else [])


# --------------------------------------------------------------------------- deepdiff's limit


def test_a_truncated_deepdiff_says_so_in_the_detail_not_on_stderr(tmp_path, capfd):
    """A recorded message with 400 extra content parts: deepdiff stops at its limit, silently, and the
    finding's detail says where."""
    from invariants import check
    from invariants.replay.compare import DEEP_MAX_DIFFS

    log = Log()
    log.clean_turn(1, "hi", header_reason="initial")
    path = log.write(tmp_path / "s1.jsonl")
    model = replay(LogSource(path, path.parent))
    request = json.loads(json.dumps(model.rebuild_request(model.steps[0]).request))
    request["messages"][0]["content"] = [{"type": "text", "text": f"part {i}"} for i in range(400)]
    line = {"sessionId": "s1", "logLength": model.steps[0].first_chunk_seq, "turn": 1, "step": 1, "request": request}
    log.write_requests(tmp_path / "requests.jsonl", [line])
    capfd.readouterr()
    (div,) = [f for f in check([path]).findings if f.rule == "DIV001"]
    out, err = capfd.readouterr()
    assert err == "" and out == ""
    assert div.detail["deepdiff"]["truncated_after"] == DEEP_MAX_DIFFS == 200
    assert sum(v["count"] for k, v in div.detail["deepdiff"].items() if isinstance(v, dict)) <= DEEP_MAX_DIFFS + 1


def test_an_untruncated_deepdiff_has_no_truncation_mark(tmp_path):
    from invariants import check

    log = Log()
    log.clean_turn(1, "hi", header_reason="initial")
    path = log.write(tmp_path / "s1.jsonl")
    model = replay(LogSource(path, path.parent))
    request = json.loads(json.dumps(model.rebuild_request(model.steps[0]).request))
    request["messages"][0]["content"][0]["text"] = "edited"
    line = {"sessionId": "s1", "logLength": model.steps[0].first_chunk_seq, "turn": 1, "step": 1, "request": request}
    log.write_requests(tmp_path / "requests.jsonl", [line])
    (div,) = [f for f in check([path]).findings if f.rule == "DIV001"]
    assert "truncated_after" not in div.detail["deepdiff"] and div.detail["deepdiff"]["values_changed"]["count"] == 1
