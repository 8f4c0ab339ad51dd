"""Chunk-row codec: decoder validation, encoder packing rules, round trip."""

from __future__ import annotations

import copy

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.read.chunk_rows import (
    CHUNK_ROW_TYPES,
    MAX_SAFE_INTEGER,
    ChunkRowError,
    decode_record,
    expand_row,
    pack_events,
)


def ev(seq, time, chunk, turn=1, step=1):
    return {"type": "assistant/chunk", "seq": seq, "time": time, "data": {"turn": turn, "step": step, "chunk": chunk}}


def text(t, index=0, kind="text-delta"):
    return {"type": kind, "index": index, "text": t}


def call(args, id="c1", name=None, index=0):
    chunk = {"type": "tool-call-delta", "index": index, "id": id}
    if name is not None:
        chunk["name"] = name
    chunk["argumentsDelta"] = args
    return chunk


def flatten(records):
    return [event for record in records for event in decode_record(record)]


def dumps(value):
    return orjson.dumps(value)  # keeps dict insertion order, so it compares key order too


def text_row(**over):
    row = {
        "type": "text-chunks",
        "seq0": 0,
        "time0": 1,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"]},
    }
    data = over.pop("data", {})
    row.update(over)
    row["data"].update(data)
    return row


def tool_row(**over):
    row = {
        "type": "tool-call-chunks",
        "seq0": 0,
        "time0": 1,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "id": "c", "args": ["{"]},
    }
    data = over.pop("data", {})
    row.update(over)
    row["data"].update(data)
    return row


# --- encoder ------------------------------------------------------------------


def test_packs_a_text_run_into_one_row():
    events = [ev(4, 100, text("a")), ev(5, 103, text("b")), ev(6, 102, text("c"))]
    out = pack_events(events)
    assert dumps(out) == dumps(
        [
            {
                "type": "text-chunks",
                "seq0": 4,
                "time0": 100,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [3, -1], "texts": ["a", "b", "c"]},
            }
        ]
    )
    assert dumps(flatten(out)) == dumps(events)


def test_reasoning_run_uses_its_own_tag():
    events = [ev(i, 10, text("x", kind="reasoning-delta")) for i in range(3)]
    [row] = pack_events(events)
    assert row["type"] == "reasoning-chunks"
    assert row["data"]["dt"] == [0, 0]


def test_tool_call_row_key_order_with_and_without_name():
    named = [ev(i, i, call(str(i), name="write")) for i in range(3)]
    [row] = pack_events(named)
    assert list(row) == ["type", "seq0", "time0", "data"]
    assert list(row["data"]) == ["turn", "step", "index", "dt", "id", "name", "args"]
    assert list(expand_row(row)[0]["data"]["chunk"]) == ["type", "index", "id", "name", "argumentsDelta"]
    assert dumps(flatten([row])) == dumps(named)

    bare = [ev(i, i, call(str(i))) for i in range(3)]
    [row] = pack_events(bare)
    assert list(row["data"]) == ["turn", "step", "index", "dt", "id", "args"]
    assert list(expand_row(row)[0]["data"]["chunk"]) == ["type", "index", "id", "argumentsDelta"]
    assert dumps(flatten([row])) == dumps(bare)


def test_runs_shorter_than_three_stay_verbatim():
    events = [ev(0, 0, text("a")), ev(1, 0, text("b"))]
    assert pack_events(events) == events
    assert all(a is b for a, b in zip(pack_events(events), events))


@pytest.mark.parametrize(
    "breaker",
    [
        lambda: ev(3, 0, text("x", kind="reasoning-delta")),  # other kind
        lambda: ev(4, 0, text("x")),  # seq gap
        lambda: ev(3, 0, text("x"), turn=2),  # other turn
        lambda: ev(3, 0, text("x"), step=2),  # other step
        lambda: ev(3, 0, text("x", index=1)),  # other block index
        lambda: ev(3, 0, text("x"), turn=1.0),  # same value, other type
    ],
)
def test_a_break_ends_the_run(breaker):
    head = [ev(i, 0, text(str(i))) for i in range(3)]
    tail = breaker()
    out = pack_events(head + [tail])
    assert len(out) == 2 and out[0]["type"] == "text-chunks" and out[1] is tail


@pytest.mark.parametrize(
    "events",
    [
        [
            ev(0, 0, call("a", id="c1", name="w")),
            ev(1, 0, call("b", id="c1", name="w")),
            ev(2, 0, call("c", id="c2", name="w")),
        ],
        [ev(0, 0, call("a", name="w")), ev(1, 0, call("b", name="w")), ev(2, 0, call("c"))],
        [ev(0, 0, call("a", name="w")), ev(1, 0, call("b", name="w")), ev(2, 0, call("c", name="r"))],
    ],
)
def test_tool_call_runs_need_same_id_and_name(events):
    assert pack_events(events) == events


def _decorate(event, how):
    event = copy.deepcopy(event)
    if how == "surfaceOp":
        event["surfaceOp"] = "append"
    elif how == "sourceEventSeqs":
        event["sourceEventSeqs"] = [0]
    elif how == "ignorable":
        event["ignorable"] = True
    elif how == "data-extra":
        event["data"]["extra"] = 1
    elif how == "chunk-extra":
        event["data"]["chunk"]["extra"] = 1
    elif how == "float-time":
        event["time"] = 1.5
    elif how == "integral-float-seq":
        event["seq"] = float(event["seq"])
    elif how == "bool-turn":
        event["data"]["turn"] = True
    elif how == "string-index":
        event["data"]["chunk"]["index"] = "0"
    elif how == "int-text":
        event["data"]["chunk"]["text"] = 7
    elif how == "reordered":
        event = {"seq": event["seq"], "type": event["type"], "time": event["time"], "data": event["data"]}
    elif how == "block-start":
        event["data"]["chunk"] = {"type": "block-start", "index": 0, "blockType": "text"}
    elif how == "other-event":
        event["type"] = "assistant/usage"
    return event


@pytest.mark.parametrize(
    "how",
    [
        "surfaceOp",
        "sourceEventSeqs",
        "ignorable",
        "data-extra",
        "chunk-extra",
        "float-time",
        "integral-float-seq",
        "bool-turn",
        "string-index",
        "int-text",
        "reordered",
        "block-start",
        "other-event",
    ],
)
def test_off_whitelist_event_is_stored_verbatim_and_splits_runs(how):
    events = [ev(i, 0, text(str(i))) for i in range(5)]
    events[2] = _decorate(events[2], how)
    out = pack_events(events)
    assert out == events  # both halves are too short to pack
    assert out[2] is events[2]


def test_tool_call_name_must_be_string():
    events = [ev(i, 0, call("a", name="w")) for i in range(3)]
    events[1]["data"]["chunk"]["name"] = 7
    assert pack_events(events) == events


def test_time_gap_beyond_safe_range_breaks_the_run():
    a, b = -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER - 1
    events = [ev(0, a, text("x")), ev(1, b, text("y")), ev(2, b + 1, text("z"))]
    assert pack_events(events) == events
    events = [ev(0, 0, text("x")), ev(1, MAX_SAFE_INTEGER, text("y")), ev(2, 0, text("z"))]
    [row] = pack_events(events)
    assert row["data"]["dt"] == [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]


def test_rows_are_not_capped():
    events = [ev(i, i, text("t")) for i in range(5000)]
    [row] = pack_events(events)
    assert len(row["data"]["texts"]) == 5000
    assert flatten([row]) == events


def test_non_events_pass_through():
    values = [None, "junk", 3, [], {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}]
    assert pack_events(values) == values
    for value in values:
        assert decode_record(value) == [value]


# --- decoder ------------------------------------------------------------------


def test_expand_rebuilds_seq_time_and_shape():
    row = text_row(
        seq0=7, time0=1000, data={"dt": [5, -20, 0], "texts": ["a", "b", "c", "d"], "turn": 3, "step": 2, "index": 1}
    )
    events = expand_row(row)
    assert [e["seq"] for e in events] == [7, 8, 9, 10]
    assert [e["time"] for e in events] == [1000, 1005, 985, 985]
    assert dumps(events[1]) == dumps(
        {
            "type": "assistant/chunk",
            "seq": 8,
            "time": 1005,
            "data": {"turn": 3, "step": 2, "chunk": {"type": "text-delta", "index": 1, "text": "b"}},
        }
    )


def test_expand_named_tool_row_copies_name_to_every_member():
    row = tool_row(data={"name": "read", "dt": [1, 1], "args": ["{", "}", ""]})
    chunks = [e["data"]["chunk"] for e in expand_row(row)]
    assert chunks == [
        {"type": "tool-call-delta", "index": 0, "id": "c", "name": "read", "argumentsDelta": a} for a in ["{", "}", ""]
    ]


def test_expand_accepts_javascript_safe_integers_as_floats():
    events = expand_row(text_row(seq0=2.0, time0=-5.0, data={"dt": [1e3]}))
    assert [(e["seq"], e["time"]) for e in events] == [(2, -5), (3, 995)]
    assert all(type(e["seq"]) is int and type(e["time"]) is int for e in events)


def test_expand_accepts_non_integer_turn_step_index_like_upstream():
    [event] = expand_row(text_row(data={"turn": 1.5, "step": -2, "index": 10**30, "dt": [], "texts": ["a"]}))
    assert event["data"]["turn"] == 1.5 and event["data"]["chunk"]["index"] == 10**30


def test_expand_at_the_safe_integer_edges():
    assert expand_row(text_row(seq0=MAX_SAFE_INTEGER - 1, data={"dt": [0]}))[-1]["seq"] == MAX_SAFE_INTEGER
    assert (
        expand_row(
            text_row(time0=-MAX_SAFE_INTEGER, data={"dt": [MAX_SAFE_INTEGER, MAX_SAFE_INTEGER], "texts": list("abc")})
        )[-1]["time"]
        == MAX_SAFE_INTEGER
    )


BAD_ROWS = {
    "not a dict": ([1, 2], "not a chunk row"),
    "untagged": ({"type": "assistant/chunk"}, "not a chunk row"),
    "unhashable tag": ({"type": ["text-chunks"]}, "not a chunk row"),
    "extra envelope key": (text_row(extra=1), "exactly the keys type, seq0, time0, data"),
    "missing seq0": ({k: v for k, v in text_row().items() if k != "seq0"}, "exactly the keys"),
    "negative seq0": (text_row(seq0=-1), "seq0"),
    "bool seq0": (text_row(seq0=True), "seq0"),
    "string seq0": (text_row(seq0="0"), "seq0"),
    "huge seq0": (text_row(seq0=2**53), "seq0"),
    "fractional time0": (text_row(time0=1.5), "time0"),
    "infinite time0": (text_row(time0=float("inf")), "time0"),
    "nan time0": (text_row(time0=float("nan")), "time0"),
    "huge time0": (text_row(time0=-(2**60)), "time0"),
    "bool time0": (text_row(time0=False), "time0"),
    "non-object data": ({**text_row(), "data": "x"}, "data must be an object"),
    "list data": ({**tool_row(), "data": [1]}, "data must be an object"),
    "text row with args": (
        {**text_row(), "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]}},
        "exactly the keys turn, step, index, dt, texts",
    ),
    "text row extra data key": (text_row(data={"id": "c"}), "exactly the keys turn"),
    "tool row without id": (
        {**tool_row(), "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]}},
        "name (optional), dt, args",
    ),
    "tool row with texts": (
        {**tool_row(), "data": {"turn": 1, "step": 1, "index": 0, "id": "c", "dt": [], "texts": ["a"]}},
        "name (optional), dt, args",
    ),
    "tool row non-string id": (tool_row(data={"id": 7}), "id, and name"),
    "tool row non-string name": (tool_row(data={"name": None}), "id, and name"),
    "string turn": (text_row(data={"turn": "1"}), "turn, step and index"),
    "bool step": (text_row(data={"step": True}), "turn, step and index"),
    "null index": (tool_row(data={"index": None}), "turn, step and index"),
    "texts not a list": (text_row(data={"texts": "ab", "dt": [1]}), "texts must be a non-empty list of strings"),
    "empty texts": (text_row(data={"texts": [], "dt": []}), "texts must be"),
    "non-string text": (text_row(data={"texts": ["a", 7]}), "texts must be"),
    "non-string arg": (tool_row(data={"args": [None]}), "args must be"),
    "dt not a list": (text_row(data={"dt": 1}), "dt must be a list of safe integers"),
    "fractional dt": (text_row(data={"dt": [0.5]}), "dt must be a list"),
    "bool dt": (text_row(data={"dt": [True]}), "dt must be a list"),
    "nan dt": (text_row(data={"dt": [float("nan")]}), "dt must be a list"),
    "huge dt": (text_row(data={"dt": [2**53]}), "dt must be a list"),
    "dt too long": (text_row(data={"dt": [1, 2]}), "dt has 2 entries but 2 members need 1"),
    "dt too short": (text_row(data={"dt": [], "texts": ["a", "b"]}), "dt has 0 entries"),
    "seq leaves safe range": (
        text_row(seq0=MAX_SAFE_INTEGER, data={"dt": [0, 0], "texts": ["a", "b", "c"]}),
        "member seqs",
    ),
    "time leaves safe range": (text_row(time0=MAX_SAFE_INTEGER, data={"dt": [1]}), "member times"),
    "time leaves safe range midway": (
        text_row(time0=0, data={"dt": [MAX_SAFE_INTEGER, 1, -5], "texts": list("abcd")}),
        "member times",
    ),
    "time leaves negative range": (text_row(time0=-MAX_SAFE_INTEGER, data={"dt": [-1]}), "member times"),
}


@pytest.mark.parametrize("name", list(BAD_ROWS))
def test_expand_rejects(name):
    row, reason = BAD_ROWS[name]
    with pytest.raises(ChunkRowError) as info:
        expand_row(row)
    assert reason in str(info.value)
    assert isinstance(info.value, ValueError)
    if isinstance(row, dict) and isinstance(row.get("type"), str) and row["type"] in CHUNK_ROW_TYPES:
        assert str(info.value).startswith(f"malformed {row['type']} chunk row: ")
        with pytest.raises(ChunkRowError):
            decode_record(row)


# --- properties ---------------------------------------------------------------

DECORATIONS = [
    "surfaceOp",
    "ignorable",
    "data-extra",
    "chunk-extra",
    "float-time",
    "reordered",
    "block-start",
    "other-event",
]

_spec = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["text-delta", "reasoning-delta", "tool", "tool-named"]),
        "turn": st.integers(0, 1),
        "step": st.integers(0, 1),
        "index": st.integers(0, 1),
        "id": st.sampled_from(["c1", "c2"]),
        "name": st.sampled_from(["w", "r"]),
        "payload": st.text(max_size=4),
        "seq_step": st.sampled_from([1] * 12 + [0, 2]),
        "time": st.one_of(
            st.tuples(st.just("delta"), st.integers(-5, 40)),
            st.tuples(st.just("delta"), st.integers(-5, 40)),
            st.tuples(st.just("delta"), st.integers(-5, 40)),
            st.tuples(st.just("abs"), st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)),
        ),
        "decoration": st.one_of(st.none(), st.none(), st.none(), st.none(), st.none(), st.sampled_from(DECORATIONS)),
        # Which block attributes to take from this spec rather than the previous
        # event, so that runs form and then break on one attribute at a time.
        "change": st.sampled_from([()] * 12 + [(k,) for k in ("kind", "turn", "step", "index", "id", "name")] + [None]),
    }
)
_BLOCK = ("kind", "turn", "step", "index", "id", "name")


def _build(specs):
    """Events from specs; returns them, which are exact-shape deltas, and the resolved specs."""
    events, plain, resolved = [], [], []
    seq, time = 0, 1_000
    for spec in specs:
        if spec["change"] is not None and resolved:
            spec = {**spec, **{k: resolved[-1][k] for k in _BLOCK if k not in spec["change"]}}
        resolved.append(spec)
        seq += spec["seq_step"] if events else 0
        mode, value = spec["time"]
        time = time + value if mode == "delta" else value
        time = max(-MAX_SAFE_INTEGER, min(MAX_SAFE_INTEGER, time))
        if spec["kind"].startswith("tool"):
            chunk = call(
                spec["payload"],
                id=spec["id"],
                name=spec["name"] if spec["kind"] == "tool-named" else None,
                index=spec["index"],
            )
        else:
            chunk = text(spec["payload"], index=spec["index"], kind=spec["kind"])
        event = ev(seq, time, chunk, turn=spec["turn"], step=spec["step"])
        if spec["decoration"]:
            event = _decorate(event, spec["decoration"])
        events.append(event)
        plain.append(spec["decoration"] is None)
    return events, plain, resolved


def _expected_layout(events, plain, specs):
    """Reference grouping straight from the §1.4 rules: member counts per output record."""

    def joins(i):
        a, b = specs[i - 1], specs[i]
        ea, eb = events[i - 1], events[i]
        return (
            plain[i - 1]
            and plain[i]
            and a["kind"] == b["kind"]
            and eb["seq"] == ea["seq"] + 1
            and abs(eb["time"] - ea["time"]) <= MAX_SAFE_INTEGER
            and (a["turn"], a["step"], a["index"]) == (b["turn"], b["step"], b["index"])
            and (
                not a["kind"].startswith("tool")
                or (a["id"] == b["id"] and (a["kind"] == "tool" or a["name"] == b["name"]))
            )
        )

    layout, chain = [], 0
    for i in range(len(events)):
        if i and chain and joins(i):
            chain += 1
            continue
        layout += [chain] if chain >= 3 else [1] * chain
        chain = 1
    layout += [chain] if chain >= 3 else [1] * chain
    return layout


@settings(max_examples=400, deadline=None)
@given(st.lists(_spec, max_size=40))
def test_pack_then_expand_is_identity(specs):
    events, plain, specs = _build(specs)
    packed = pack_events(events)
    assert dumps(flatten(packed)) == dumps(events)
    assert flatten(packed) == events
    # the way a log is actually read: serialized, parsed, decoded
    assert dumps(flatten(orjson.loads(dumps(packed)))) == dumps(events)
    layout = [len(expand_row(r)) if isinstance(r, dict) and r.get("type") in CHUNK_ROW_TYPES else 1 for r in packed]
    assert all(n >= 3 for r, n in zip(packed, layout) if r.get("type") in CHUNK_ROW_TYPES)
    assert layout == _expected_layout(events, plain, specs)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def _mutated_row(draw):
    row = copy.deepcopy(
        draw(st.sampled_from([text_row(), tool_row(), tool_row(data={"name": "n"}), text_row(type="reasoning-chunks")]))
    )
    target = draw(st.sampled_from(["row", "data"]))
    obj = row if target == "row" else row["data"]
    key = draw(st.sampled_from(sorted(obj) + ["extra"]))
    if draw(st.booleans()):
        obj[key] = draw(_json)
    else:
        obj.pop(key, None)
    return row


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        _json,
        _mutated_row(),
        st.builds(
            lambda tag, d: {"type": tag, **d},
            st.sampled_from(sorted(CHUNK_ROW_TYPES)),
            st.dictionaries(st.sampled_from(["seq0", "time0", "data"]), _json),
        ),
    )
)
def test_expand_raises_only_chunk_row_error(value):
    try:
        events = expand_row(value)
    except ChunkRowError:
        return
    payload = value["data"]["args" if value["type"] == "tool-call-chunks" else "texts"]
    assert len(events) == len(payload)
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + len(events)))
