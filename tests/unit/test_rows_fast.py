"""The fast row expansion agrees with the validating decoder on every row it accepts."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.read.chunk_rows import ChunkRowError, expand_row, pack_events
from invariants.read.rows_fast import expand_row_fast

ints = st.integers(min_value=-(2**53), max_value=2**53)
text = st.text(max_size=6)


@st.composite
def rows(draw):
    kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
    n = draw(st.integers(min_value=3, max_value=12))
    seq0 = draw(st.integers(min_value=0, max_value=2**53 - 20))
    time = draw(st.integers(min_value=-(2**40), max_value=2**40))
    named = draw(st.booleans())
    events = []
    for j in range(n):
        if kind == "tool-call-delta":
            chunk = {
                "type": kind,
                "index": 1,
                "id": "c",
                **({"name": "read"} if named else {}),
                "argumentsDelta": draw(text),
            }
        else:
            chunk = {"type": kind, "index": 0, "text": draw(text)}
        events.append(
            {"type": "assistant/chunk", "seq": seq0 + j, "time": time, "data": {"turn": 1, "step": 2, "chunk": chunk}}
        )
        time += draw(st.integers(min_value=-5, max_value=50))
    (row,) = pack_events(events)
    return row, events


@given(rows())
def test_fast_equals_slow_on_packed_runs(case):
    row, events = case
    assert expand_row_fast(row) == expand_row(row) == events


mutations = st.sampled_from(["seq0", "time0", "dt", "texts", "extra", "turn", "float-dt", "name", "huge-time"])


@settings(max_examples=300)
@given(rows(), mutations, ints)
def test_fast_never_accepts_what_slow_refuses(case, how, value):
    row = copy.deepcopy(case[0])
    data = row["data"]
    key = "args" if "args" in data else "texts"
    if how == "seq0":
        row["seq0"] = value
    elif how == "time0":
        row["time0"] = value * 1024
    elif how == "dt":
        data["dt"] = data["dt"][:-1]
    elif how == "texts":
        data[key] = data[key] + [value]
    elif how == "extra":
        data["x"] = 1
    elif how == "turn":
        data["turn"] = str(value)
    elif how == "float-dt":
        data["dt"] = [float(x) for x in data["dt"]]
    elif how == "name":
        data["name"] = value
    elif how == "huge-time":
        data["dt"][0] = 2**53
    fast = expand_row_fast(row)
    try:
        slow = expand_row(row)
    except ChunkRowError:
        assert fast is None
    else:
        assert fast is None or fast == slow
