"""Deltas on the live header fold exactly as on whole headers, and versions keep deltas, not headers."""

from __future__ import annotations

import random

import orjson
import pytest

from invariants.model.records import Event
from invariants.read.profiles import PROFILES
from invariants.replay import header_fold
from invariants.replay.header_codec import HeaderShapeError, apply_delta, canonical, diff_header
from invariants.replay.header_fold import HeaderFold
from invariants.replay.header_versions import LiveHeader, fast_delta

NAMES = ["a", "b", "c", "d", "e", "f"]


def _tool(rng: random.Random, name: str | None = None) -> dict:
    tool = {"name": name or rng.choice(NAMES), "description": rng.choice(["x", "y"])}
    if rng.random() < 0.3:
        tool["parameters"] = {"n": rng.choice([1, 1.0, 2])}  # 1 and 1.0: equal as values, not as bytes
    return tool


def _tools(rng: random.Random) -> list:
    if rng.random() < 0.1:
        return rng.choice(["{{tools}}", [{"name": "a"}, {"name": "a"}], [{"name": 3}], ["x"]])
    names = rng.sample(NAMES, rng.randrange(len(NAMES) + 1))
    return [_tool(rng, n) for n in names]


def _header(rng: random.Random) -> dict:
    header: dict = {"config": {"model": rng.choice(["m1", "m2"])}}
    if rng.random() < 0.8:
        header["system"] = rng.choice(["one\ntwo\nthree", "one", "{{system}}", "", "a\n\nb\nc\nd\ne", "{{s}}\nx"])
    tools = _tools(rng)
    if tools or rng.random() < 0.5:
        header["tools"] = tools
    if rng.random() < 0.3:
        header["messagePrefix"] = rng.choice([[{"role": "user", "content": "p"}], ["{{messagePrefix}}"], []])
    return header


def _delta(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.03:
        return rng.choice([[], "x", {}, {"bogus": 1}])
    delta: dict = {}
    if rng.random() < 0.8:
        arm = {
            "added": [_tool(rng) for _ in range(rng.randrange(3))],
            "removed": rng.sample(NAMES, rng.randrange(3)),
            "changed": [_tool(rng) for _ in range(rng.randrange(2))],
        }
        if rng.random() < 0.05:
            arm[rng.choice(["added", "removed", "changed"])] = rng.choice([None, [1], "x"])
        delta["tools"] = arm
    if rng.random() < 0.2:
        delta["system"] = {
            "keepStart": rng.randrange(7),
            "keepEnd": rng.randrange(4),
            "insert": rng.choice([["new"], [], [""], ["", ""], ["{{system}}"], ["{{s}}", ""], ["b", "c"], ["x"] * 3]),
        }
        if rng.random() < 0.05:
            delta["system"][rng.choice(["keepStart", "insert"])] = rng.choice([True, -1, "x", [1]])
    if rng.random() < 0.15:
        delta["config"] = rng.choice([{"model": "m2"}, {"model": "m1", "temperature": 0.5}, "bad"])
    if rng.random() < 0.15:
        delta["messagePrefix"] = rng.choice([[{"role": "user", "content": "q"}], [], "bad", ["{{p}}"]])
    if rng.random() < 0.05:
        delta["unknownArm"] = 1
    return delta


def _harness_delta(rng: random.Random, state: dict) -> dict | None:
    """What the harness's diff writes for a random change of ``state`` (sometimes tampered with)."""
    tools = state.get("tools", [])
    if not isinstance(tools, list) or any(not isinstance(t, dict) for t in tools):
        return None
    target = dict(state)
    kept = [t if rng.random() < 0.8 else _tool(rng, t.get("name")) for t in tools if rng.random() < 0.85]
    have = {t.get("name") for t in kept}
    target["tools"] = kept + [_tool(rng, n) for n in NAMES if n not in have and rng.random() < 0.3]
    if rng.random() < 0.3:
        lines = str(state.get("system", "")).split("\n")
        at = rng.randrange(len(lines) + 1)
        lines[at : at + rng.randrange(2)] = rng.choice([[], ["new"], ["one", "two"], [""]])
        target["system"] = "\n".join(lines)
    if rng.random() < 0.1:
        target["messagePrefix"] = [{"role": "user", "content": rng.choice(["p", "q"])}]
    delta = diff_header(state, canonical(target))
    if delta and "tools" in delta and rng.random() < 0.15:  # not what the diff writes: HDR003
        arm = delta["tools"]
        arm["removed"] = arm["removed"][::-1] if len(arm["removed"]) > 1 else arm["removed"] + ["zz"]
    return delta


def _events(rng: random.Random) -> list[Event]:
    events: list[Event] = []
    state: dict | None = None
    for seq in range(rng.randrange(1, 40)):
        if seq == 0 or rng.random() < 0.08:
            reason = "initial" if seq == 0 else rng.choice(["resume", "fallback", "change"])
            header = _header(rng)
            events.append(Event("request/header", seq, 0, {"header": header, "reason": reason}, line=seq + 2))
            state = canonical(header)
            continue
        delta = _harness_delta(rng, state) if state is not None and rng.random() < 0.5 else None
        delta = delta if delta is not None else _delta(rng)
        events.append(Event("request/header-delta", seq, 0, delta, line=seq + 2))
        try:
            state = apply_delta(state, delta).header if state is not None else None
        except HeaderShapeError:
            pass
    return events


def _fold(events: list[Event], fast: bool, monkeypatch, order: list[int]) -> tuple:
    monkeypatch.setattr(header_fold, "FAST_DELTAS", fast)
    emitted: list = []
    fold = HeaderFold(PROFILES["seed"], lambda code, message, **where: emitted.append((code, message, where)))
    for i, ev in enumerate(events):
        fold.dispatched_in_instance = i % 3 == 0
        fold.observe(ev, {"turn": 1, "step": 1})
    versions = [(v.seq, v.kind, v.instance, v.changed, v.arms) for v in fold.versions]
    headers = {i: orjson.dumps(fold.versions[i].header) for i in order if i < len(fold.versions)}
    return emitted, versions, headers, [(i.seq, i.reason, i.drift) for i in fold.instances]


@pytest.mark.parametrize("seed", range(300))
def test_live_deltas_fold_like_whole_headers(monkeypatch, seed):
    rng = random.Random(seed)
    events = _events(rng)
    order = list(range(len(events)))
    rng.shuffle(order)  # materialise versions out of order: checkpoints and replays
    assert _fold(events, True, monkeypatch, order) == _fold(events, False, monkeypatch, order)


def test_a_delta_that_adds_a_tool_costs_the_delta_not_the_list():
    tools = [{"name": f"t{i}", "description": "d"} for i in range(5000)]
    live = LiveHeader.of({"config": {"model": "m"}, "tools": tools})
    step = fast_delta(live, {"tools": {"added": [{"name": "new"}], "removed": [], "changed": []}})
    assert step is not None and not step.equal and step.changed == ["tools"]
    assert step.redo() == {"tools": {"added": [{"name": "new"}], "removed": [], "changed": []}}
    step.commit()
    assert list(live.tools)[-2:] == ["t4999", "new"] and live.header()["tools"][-1] == {"name": "new"}


def test_a_prompt_that_grows_a_line_per_delta_is_kept_as_lines(monkeypatch):
    monkeypatch.setattr(header_fold, "FAST_DELTAS", True)
    fold = HeaderFold(PROFILES["seed"], lambda *a, **k: None)
    fold.observe(
        Event("request/header", 0, 0, {"header": {"config": {"model": "m"}, "system": "a"}, "reason": "initial"}), {}
    )
    for k in range(1, 1001):
        fold.observe(
            Event("request/header-delta", k, 0, {"system": {"keepStart": k, "keepEnd": 0, "insert": [f"l{k}"]}}), {}
        )
    assert len(fold.store.whole) < 20
    assert fold.versions[500].header["system"] == "\n".join(["a", *(f"l{k}" for k in range(1, 501))])


def test_versions_keep_deltas_and_checkpoints_not_every_header(monkeypatch):
    monkeypatch.setattr(header_fold, "FAST_DELTAS", True)
    fold = HeaderFold(PROFILES["seed"], lambda *a, **k: None)
    fold.observe(Event("request/header", 0, 0, {"header": {"config": {"model": "m"}}, "reason": "initial"}), {})
    n = 2000
    for k in range(1, n + 1):
        fold.observe(
            Event(
                "request/header-delta", k, 0, {"tools": {"added": [{"name": f"t{k}"}], "removed": [], "changed": []}}
            ),
            {},
        )
    store = fold.store
    assert len(fold.versions) == n + 1
    assert len(store.whole) < 20  # checkpoints at geometric sizes, not one header per delta
    assert sum(len(h.get("tools", [])) for h in store.whole.values()) < 3 * n
    assert [t["name"] for t in fold.versions[1234].header["tools"]] == [f"t{k}" for k in range(1, 1235)]


def test_versions_asked_in_order_apply_each_delta_once(monkeypatch):
    """A check rebuilds its requests in log order: each version from the one before, not from the
    last checkpoint (a header changed every turn took 1,256 deltas applied for 216 versions)."""
    from invariants.replay import header_versions

    monkeypatch.setattr(header_fold, "FAST_DELTAS", True)
    fold = HeaderFold(PROFILES["seed"], lambda *a, **k: None)
    fold.observe(Event("request/header", 0, 0, {"header": {"config": {"model": "m"}}, "reason": "initial"}), {})
    n = 600
    for k in range(1, n + 1):
        delta = {"tools": {"added": [{"name": f"t{k}"}], "removed": [], "changed": []}}
        fold.observe(Event("request/header-delta", k, 0, delta), {})
    applied = []
    fast = header_versions.fast_delta
    monkeypatch.setattr(header_versions, "fast_delta", lambda live, delta: applied.append(1) or fast(live, delta))
    for k in range(1, n + 1):
        assert [t["name"] for t in fold.versions[k].header["tools"]][-1] == f"t{k}"
    assert len(applied) <= n
    assert [t["name"] for t in fold.versions[300].header["tools"]] == [f"t{k}" for k in range(1, 301)]
