"""The collector during a check: paused, the run's objects frozen after it, cyclic garbage freed later."""

from __future__ import annotations

import gc
import weakref

import pytest

from invariants.gate import collector
from invariants.gate.collector import collector_paused


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def _restore_collector():
    yield
    gc.unfreeze()
    gc.enable()
    collector._Frozen.after_collect = 0


def test_paused_during_the_run_and_frozen_after_it():
    gc.unfreeze()
    with collector_paused():
        assert not gc.isenabled()
        kept = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(kept)
    young = {id(o) for g in range(3) for o in gc.get_objects(generation=g)}
    assert not any(id(x) in young for x in kept)  # no collection will walk them


def test_a_nested_run_leaves_freezing_to_the_outer_one():
    gc.unfreeze()
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    assert gc.get_freeze_count() > 0


def test_cyclic_garbage_frozen_by_one_run_is_freed_once_the_frozen_heap_doubles(monkeypatch):
    monkeypatch.setattr(collector, "MIN_COLLECT", 0)
    gc.unfreeze()
    gc.collect()
    with collector_paused():
        node = Node()
    ref = weakref.ref(node)
    del node
    assert ref() is not None  # frozen: no collection may free it yet
    collector._Frozen.after_collect = gc.get_freeze_count()
    with collector_paused():
        pass
    assert ref() is not None  # the frozen heap has not doubled: this run started without a full collection
    collector._Frozen.after_collect = gc.get_freeze_count() // 3
    with collector_paused():
        pass
    assert ref() is None
