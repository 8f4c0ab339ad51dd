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


def _one_step_with_capture(tmp_path, edit, copies: int = 1):
    """A one-step log and a capture of ``copies`` lines of its request as ``edit`` changed it; the log's path."""
    log = Log()
    log.clean_turn(1, "hi", header_reason="initial")
    path = log.write(tmp_path / "s1.jsonl")
    model = replay(LogSource(path, path.parent))
    request = json.loads(json.dumps(model.rebuild_request(model.steps[0]).request))
    edit(request["messages"][0])
    line = {"sessionId": "s1", "logLength": model.steps[0].first_chunk_seq, "turn": 1, "step": 1, "request": request}
    log.write_requests(tmp_path / "requests.jsonl", [line] * copies)
    return path


def _edited(message: dict) -> None:
    message["content"][0]["text"] = "edited"


def test_a_truncated_deepdiff_says_so_in_the_detail_not_on_stderr(tmp_path, capfd):
    """A recorded message with 400 extra content parts: deepdiff stops at its limit, silently, and the
    finding's detail says where."""
    from invariants import check
    from invariants.replay.compare import DEEP_MAX_DIFFS

    def parts(message: dict) -> None:
        message["content"] = [{"type": "text", "text": f"part {i}"} for i in range(400)]

    path = _one_step_with_capture(tmp_path, parts)
    capfd.readouterr()
    (div,) = [f for f in check([path]).findings if f.rule == "DIV001"]
    out, err = capfd.readouterr()
    assert err == "" and out == ""
    assert div.detail["deepdiff"]["truncated_after"] == DEEP_MAX_DIFFS == 200
    assert sum(v["count"] for k, v in div.detail["deepdiff"].items() if isinstance(v, dict)) <= DEEP_MAX_DIFFS + 1


def test_an_untruncated_deepdiff_has_no_truncation_mark(tmp_path):
    from invariants import check

    path = _one_step_with_capture(tmp_path, _edited)
    (div,) = [f for f in check([path]).findings if f.rule == "DIV001"]
    assert "truncated_after" not in div.detail["deepdiff"] and div.detail["deepdiff"]["values_changed"]["count"] == 1


# --------------------------------------------------------------------------- deepdiff's results, remembered


def _counting_deepdiff(monkeypatch) -> list:
    import deepdiff

    calls: list = []
    real = deepdiff.DeepDiff

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(deepdiff, "DeepDiff", counted)
    monkeypatch.setattr("invariants.replay.compare._SUMMARIES", {})
    return calls


def test_the_same_windows_are_diffed_once_and_each_summary_is_its_own(monkeypatch):
    from invariants.replay.compare import deep_summary

    calls = _counting_deepdiff(monkeypatch)
    history = [{"role": "user", "content": f"m{i}"} for i in range(40)]
    first = deep_summary(history, [], start=0)
    again = deep_summary(list(history), [], start=0)
    assert len(calls) == 1 and first == again and first is not again
    assert first["iterable_item_removed"]["count"] == 16 and first["window"] == [0, 16]
    again["iterable_item_removed"]["paths"].clear()  # a finding's detail is its own
    assert deep_summary(history, [], start=0)["iterable_item_removed"]["paths"][0] == "[0]"
    # Another place, another key order or another type is another diff.
    assert deep_summary(history, history[:3], start=3)["window"] == [3, 19]
    reordered = [{"content": "m0", "role": "user"}] + history[1:]
    deep_summary(reordered, [], start=0)
    deep_summary([dict(m, content=1) for m in history], [], start=0)
    assert len(calls) == 4
    # The same windows at another place: the paths name that place.
    a, b = [{"content": "a"}] * 50, [{"content": "b"}] * 50
    assert deep_summary(a, b, start=0)["values_changed"]["paths"][0] == "[0]['content']"
    assert deep_summary(a, b, start=10)["values_changed"]["paths"][0] == "[10]['content']"


@pytest.mark.parametrize("odd", ["\ud800", 2**70])
def test_values_orjson_cannot_encode_are_diffed_every_time(monkeypatch, odd):
    from invariants.replay.compare import deep_summary

    calls = _counting_deepdiff(monkeypatch)
    expected, recorded = [{"content": odd}], [{"content": "x"}]
    assert deep_summary(expected, recorded) == deep_summary(expected, recorded)
    kinds = deep_summary(expected, recorded)
    assert sum(v["count"] for v in kinds.values()) == 1 and len(calls) == 3


def test_the_remembered_results_are_bounded(monkeypatch):
    from invariants.replay import compare

    _counting_deepdiff(monkeypatch)
    for i in range(3 * compare.SUMMARIES_KEPT):
        compare.deep_summary([i], [])
        assert 1 <= len(compare._SUMMARIES) <= compare.SUMMARIES_KEPT


def test_a_thousand_identical_diverging_lines_are_diffed_once(tmp_path, monkeypatch):
    """A capture whose lines all diverge the same way (a retried request, a hostile file): deepdiff
    runs once, and every line still has its finding with the same detail."""
    from invariants import check

    calls = _counting_deepdiff(monkeypatch)
    path = _one_step_with_capture(tmp_path, _edited, copies=1000)
    divs = [f for f in check([path]).findings if f.rule == "DIV001"]
    assert len(divs) == 1000 and len(calls) == 1
    assert all(d.detail["deepdiff"] == divs[0].detail["deepdiff"] for d in divs)
    assert len({d.line for d in divs}) == 1 and len({d.detail["capture"] for d in divs}) == 1000


# --------------------------------------------------------------------------- a request's bytes, proved


@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_the_fewest_bytes_n_messages_take_still_prove_them(n):
    """Proof is refused without a look at the messages only when they cannot fit: the shortest
    encoding of n messages (one byte each) is still proved, and a byte less is not."""
    import orjson

    from invariants.replay.compare import request_bytes_at

    request = {"messages": [0] * n}
    body = orjson.dumps(request)
    line = b'{"request":' + body + b"}"
    start = len(b'{"request":')
    assert request_bytes_at(request, line, start, start + len(body))
    short = {"messages": [0] * (n - 1)}
    short_body = orjson.dumps(short)
    short_line = b'{"request":' + short_body + b"}"
    assert not request_bytes_at(request, short_line, start, start + len(short_body))
    assert request_bytes_at(short, short_line, start, start + len(short_body))


def test_where_one_side_ends_is_part_of_what_is_remembered(monkeypatch):
    """Two sides whose JSON runs together alike (1 and 23, 12 and 3) are two diffs."""
    from invariants.replay.compare import deep_summary

    calls = _counting_deepdiff(monkeypatch)
    deep_summary(1, 23)
    deep_summary(12, 3)
    assert len(calls) == 2
