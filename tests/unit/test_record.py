"""The plain records that replace dataclasses on the check path keep a dataclass's behaviour."""

from __future__ import annotations

import copy
import pickle

import pytest

from invariants.model.record import FrozenRecord, Record
from invariants.model.records import Event
from invariants.model.registry import RULES
from invariants.read.profiles import PROFILES


class _Pair(FrozenRecord):
    a: int
    b: list
    __slots__ = ("a", "b")

    def __init__(self, a: int, b: list) -> None:
        self._init(a, b)


def test_a_record_equals_one_of_its_class_with_equal_fields_and_is_unhashable():
    e = Event("user/message", 3, 0, {"x": 1}, line=5)
    assert e == Event("user/message", 3, 0, {"x": 1}, line=5)
    assert e != Event("user/message", 3, 0, {"x": 1}, line=6)
    assert e != ("user/message", 3, 0, {"x": 1})  # another class never equals
    with pytest.raises(TypeError):
        hash(e)
    assert repr(e).startswith("Event(type='user/message', seq=3, time=0, data={'x': 1}, surface_op=None")


def test_a_record_pickles_and_copies_by_its_fields():
    e = Event("user/message", 3, 0, {"x": [1]}, line=5, offset=40)
    assert pickle.loads(pickle.dumps(e)) == e and copy.deepcopy(e) == e
    rule = next(iter(RULES.values()))
    assert pickle.loads(pickle.dumps(rule)) == rule


def test_a_frozen_record_cannot_change_and_hashes_by_its_fields():
    p = _Pair(1, [2])
    with pytest.raises(AttributeError):
        p.a = 2
    with pytest.raises(AttributeError):
        del p.a
    assert p.a == 1 and hash(_Pair(1, ())) == hash(_Pair(1, ()))
    assert pickle.loads(pickle.dumps(p)) == p
    assert isinstance(p, Record) and not hasattr(p, "__dict__")


def test_a_frozen_record_takes_exactly_its_fields():
    class Short(FrozenRecord):
        __slots__ = ("a", "b")

        def __init__(self, a: int) -> None:
            self._init(a)

    with pytest.raises(ValueError):
        Short(1)


def test_a_profile_still_pickles_as_the_table_entry():
    assert pickle.loads(pickle.dumps(PROFILES["seed"])) is PROFILES["seed"]


def test_url_paths_order_by_their_text_and_log_sources_key_dicts():
    from pathlib import Path

    from invariants.read.source import LogSource, UrlPath

    a, b = UrlPath("s3://b/x"), UrlPath("s3://a/y")
    assert sorted([a, b]) == [b, a] and b < a <= a and a > b >= b
    with pytest.raises(TypeError):
        _ = a < Path("x")
    src = LogSource(Path("/l/s.jsonl"), Path("/l"))
    assert {src: 1}[LogSource(Path("/l/s.jsonl"), Path("/l"), None)] == 1
    assert pickle.loads(pickle.dumps(LogSource(a, a.parent, "m"))) == LogSource(a, a.parent, "m")
