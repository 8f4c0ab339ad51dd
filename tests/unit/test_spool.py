"""The report spool: what is appended comes back in order, on disk or in memory, however reads and appends mix."""

from __future__ import annotations

import pytest

from invariants.gate.spool import Spool


@pytest.mark.parametrize("on_disk", [True, False])
def test_appends_after_a_read_go_to_the_end(on_disk: bool) -> None:
    spool: Spool[dict] = Spool(dict, dict) if on_disk else Spool()
    assert spool.on_disk is on_disk
    for i in range(3):
        spool.append({"n": i, "text": "x" * i})
    assert [x["n"] for x in spool] == [0, 1, 2]
    assert next(iter(spool))["n"] == 0  # a read stopped part way
    spool.append({"n": 3, "text": "\ud800"})  # a lone surrogate: orjson cannot, the json module carries it
    spool.append({"n": 4, "text": ""})
    assert [x["n"] for x in spool] == [0, 1, 2, 3, 4]
    assert [x["text"] for x in spool][3] == "\ud800"
    assert len(spool) == 5 and spool.fallbacks == (1 if on_disk else 0)
    spool.close()
    assert list(spool) == []
