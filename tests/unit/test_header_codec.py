"""The header codec: canonical form, apply, diff, and their round-trip laws."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.model.jsonvalue import js_equal
from invariants.replay.header_codec import (
    HeaderShapeError,
    apply_delta,
    call_config_equals,
    canonical,
    diff_header,
    header_equals,
)

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "d e"]), max_size=5)
systems = st.one_of(st.none(), LINES.map("\n".join))


@st.composite
def tool_lists(draw):
    names = draw(st.lists(st.sampled_from(["read", "bash", "grep", "edit"]), unique=True, max_size=4))
    return [
        {"name": n, "description": draw(st.sampled_from(["v1", "v2"])), "parameters": {"type": "object"}} for n in names
    ]


@st.composite
def configs(draw):
    c = {"model": draw(st.sampled_from(["m1", "m2"]))}
    if draw(st.booleans()):
        c["temperature"] = draw(st.sampled_from([0.2, 0.7, 1]))
    if draw(st.booleans()):
        c["maxTokens"] = draw(st.sampled_from([256, 512]))
    stop = draw(st.sampled_from([None, [], ["END"], ["A", "B"]]))
    if stop is not None:
        c["stop"] = stop
    return c


@st.composite
def headers(draw):
    h = {"config": draw(configs())}
    s = draw(systems)
    if s is not None:
        h["system"] = s
    h["tools"] = draw(tool_lists())
    if draw(st.booleans()):
        h["messagePrefix"] = [
            {"role": "user", "content": [{"type": "text", "text": draw(st.sampled_from(["p1", "p2"]))}]}
        ]
    return canonical(h)


def _expressible(prev: dict, nxt: dict) -> bool:
    """Can the name-keyed tools encoding produce next's order? Survivors keep old order, new names go last."""
    old = [t["name"] for t in prev.get("tools", [])]
    new = [t["name"] for t in nxt.get("tools", [])]
    survivors = [n for n in old if n in new]
    added = [n for n in new if n not in old]
    return new == survivors + added


@settings(max_examples=400, deadline=None)
@given(headers(), headers())
def test_apply_of_diff_reproduces_next_exactly_when_expressible(prev, nxt):
    delta = diff_header(prev, nxt)
    if delta is None:
        assert header_equals(prev, nxt)
        return
    result = apply_delta(prev, delta)
    assert result.problems == []  # the writer's own deltas always apply cleanly
    assert header_equals(result.header, nxt) == _expressible(prev, nxt)


@settings(max_examples=300, deadline=None)
@given(headers(), headers())
def test_round_tripping_deltas_are_canonical(prev, nxt):
    delta = diff_header(prev, nxt)
    if delta is None:
        return
    applied = apply_delta(prev, delta).header
    if header_equals(applied, nxt):
        assert js_equal(diff_header(prev, applied), delta)


@given(headers())
def test_diff_of_equal_headers_is_none(h):
    assert diff_header(h, h) is None


def test_system_line_trim_examples_from_the_spec():
    prev = {"config": {"model": "m1"}, "system": "A\nB\nC"}
    nxt = {"config": {"model": "m1"}, "system": "A\nX\nC"}
    assert diff_header(prev, nxt) == {"system": {"keepStart": 1, "keepEnd": 1, "insert": ["X"]}}
    assert diff_header({"config": {}}, {"config": {}, "system": "S"}) == {
        "system": {"keepStart": 0, "keepEnd": 0, "insert": ["S"]}
    }
    gone = apply_delta({"config": {}, "system": "S"}, {"system": {"keepStart": 0, "keepEnd": 0, "insert": []}}).header
    assert "system" not in gone


def test_tools_apply_drops_replaces_in_place_and_appends():
    t = lambda n, d="v1": {"name": n, "description": d}  # noqa: E731
    prev = {"config": {}, "tools": [t("a"), t("b"), t("c")]}
    out = apply_delta(prev, {"tools": {"added": [t("d")], "removed": ["a"], "changed": [t("c", "v2")]}})
    assert out.problems == []
    assert out.header["tools"] == [t("b"), t("c", "v2"), t("d")]


def test_pure_reorder_is_not_expressible_so_the_writer_falls_back():
    a, b = {"name": "a"}, {"name": "b"}
    prev, nxt = {"config": {}, "tools": [a, b]}, {"config": {}, "tools": [b, a]}
    delta = diff_header(prev, nxt)
    assert delta == {"tools": {"added": [], "removed": [], "changed": []}}
    assert not header_equals(apply_delta(prev, delta).header, nxt)


def test_message_prefix_empty_array_means_absent():
    prev = {"config": {}, "messagePrefix": [{"role": "user", "content": "p"}]}
    assert "messagePrefix" not in apply_delta(prev, {"messagePrefix": []}).header
    assert diff_header(prev, {"config": {}}) == {"messagePrefix": []}


def test_unclean_arms_are_reported_but_applied_as_the_harness_would():
    prev = {"config": {}, "system": "A\nB", "tools": [{"name": "a"}]}
    out = apply_delta(
        prev,
        {
            "system": {"keepStart": 2, "keepEnd": 1, "insert": []},
            "tools": {"added": [{"name": "a"}], "removed": ["z"], "changed": [{"name": "q"}]},
        },
    )
    arms = sorted(arm for arm, _ in out.problems)
    assert arms == ["system", "tools", "tools", "tools"]


@pytest.mark.parametrize(
    "payload",
    [
        "x",
        {"system": "new"},
        {"system": {"keepStart": -1, "keepEnd": 0, "insert": []}},
        {"tools": {"added": [{}], "removed": [], "changed": []}},
        {"tools": {"added": [], "removed": [1], "changed": []}},
        {"config": "m"},
        {"messagePrefix": "p"},
    ],
)
def test_wrong_shapes_raise_shape_errors(payload):
    with pytest.raises(HeaderShapeError):
        apply_delta({"config": {}, "tools": []}, payload)


def test_canonical_drops_empty_fields_and_keeps_placeholders():
    assert canonical({"config": {"model": "m"}, "system": "", "tools": [], "messagePrefix": []}) == {
        "config": {"model": "m"}
    }
    assert canonical({"config": {}, "tools": "{{tools}}"})["tools"] == "{{tools}}"
    with pytest.raises(HeaderShapeError):
        canonical({"system": "x"})


def test_call_config_equality_follows_upstream():
    assert call_config_equals({"model": "m"}, {"model": "m"})
    assert not call_config_equals({"model": "m", "stop": []}, {"model": "m"})  # [] is not absent
    assert not call_config_equals({"model": "m", "temperature": 1}, {"model": "m", "temperature": True})
    assert call_config_equals({"model": "m", "temperature": 1}, {"model": "m", "temperature": 1.0})


@settings(max_examples=60, deadline=None)
@given(st.lists(headers(), min_size=1, max_size=4))
def test_fold_of_a_snapshot_only_log_is_the_last_snapshot(tmp_path_factory, snaps):
    from invariants.read.source import LogSource
    from invariants.replay.session import replay
    from tests.support.logs import Log

    log = Log()
    for i, h in enumerate(snaps, start=1):
        log.clean_turn(i, header_reason="initial" if i == 1 else "resume", header=h)
    path = log.write(tmp_path_factory.mktemp("fold") / "s.jsonl")
    model = replay(LogSource(path, path.parent))
    assert header_equals(model.fold.header_in_force(), canonical(snaps[-1]))
    assert [v.kind for v in model.versions] == ["initial"] + ["resume"] * (len(snaps) - 1)
    assert len(model.instances) == len(snaps)
