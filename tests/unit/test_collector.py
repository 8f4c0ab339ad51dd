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


_made: list[weakref.ref] = []


def _cyclic(i: int) -> int:
    node = Node()
    _made.append(weakref.ref(node))
    return i


@pytest.mark.parametrize("enabled", [True, False], ids=["dask-worker", "forked-pool-worker"])
def test_a_worker_batch_frees_each_items_cycles_and_restores_the_collector(enabled):
    """A forked pool worker inherits the parent's paused collector and never resumes it, so without a
    collection after each item every replayed model stayed in the worker to the end (its memory grew
    with the items); a Dask worker's collector is on and must be again after the batch."""
    from invariants.gate.executor import run_batch

    _made.clear()
    gc.enable() if enabled else gc.disable()
    assert run_batch(_cyclic, [1, 2, 3]) == [1, 2, 3]
    assert gc.isenabled() is enabled
    assert len(_made) == 3 and all(ref() is None for ref in _made)


def test_a_replayed_session_holds_no_reference_cycle(tmp_path):
    """A replay's parts report to a findings sink and dispatch through tables of plain functions: no
    part refers back to the replay, so reference counting frees a unit's objects when its result is
    taken (the cycles it had were 5 % of a serial run of small sessions, freed by the collector)."""
    from pathlib import Path

    from invariants.read.discover import discover
    from invariants.replay.session import replay

    sources, _ = discover([Path(__file__).resolve().parents[2] / "sample_logs"])
    assert len(sources) > 20
    with_findings = 0
    for source in sources:  # every era and storage, clean or not, torn, forked
        gc.collect()
        gc.disable()
        try:
            model = replay(source)
            with_findings += bool(model.findings)
            del model
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            left = sorted({type(o).__qualname__ for o in gc.garbage})
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert left == [], source.path
    assert with_findings > 5


def test_a_serial_check_frees_each_units_models_before_the_next_unit(tmp_path, monkeypatch):
    """What a unit leaves cyclic (here each model is held by a reference cycle) is freed, with the
    collector paused, only by the young-generation pass before the next unit, so a serial run of many
    units holds one unit's models at a time, not every unit's."""
    import shutil
    from pathlib import Path

    from invariants.gate import unit
    from invariants.gate.pipeline import check

    sample = Path(__file__).resolve().parents[2] / "sample_logs" / "clean-multi-turn.jsonl"
    for i in range(4):
        (tmp_path / f"s{i}").mkdir()
        shutil.copy(sample, tmp_path / f"s{i}" / "session.jsonl")
    made: list[weakref.ref] = []
    alive_at_start: list[int] = []
    replay_source, check_unit = unit.replay_source, unit.check_unit

    def replayed(*args, **kwargs):
        model = replay_source(*args, **kwargs)
        made.append(weakref.ref(model))
        Node().model = model  # garbage only the cyclic collector frees, holding the model
        return model

    def checked(*args, **kwargs):
        alive_at_start.append(sum(ref() is not None for ref in made))
        return check_unit(*args, **kwargs)

    monkeypatch.setattr(unit, "replay_source", replayed)
    monkeypatch.setattr(unit, "check_unit", checked)
    gc.unfreeze()
    result = check([tmp_path], jobs=1)
    assert len(result.sessions) == 4 and len(made) == 4
    assert alive_at_start == [0, 0, 0, 0]


class _MapOnly:
    """An executor that says nothing of where its items run (as the public API allows): in this process."""

    jobs = 1

    def map(self, fn, items, costs=None):
        return [fn(x) for x in items]


class _Client:
    def nthreads(self):
        return {"worker": 1}


def test_only_a_run_whose_units_replay_here_collects_between_them(tmp_path, monkeypatch):
    """The pass before each unit frees models replayed in this process; a client of worker processes or
    of a cluster replays none, and scanning what it allocated since the last unit would be work for nothing."""
    import shutil
    from pathlib import Path

    from invariants.gate import pipeline
    from invariants.gate.executor import AutoExecutor, ProcessExecutor, SerialExecutor
    from invariants.gate.executor_dask import DaskExecutor

    sample = Path(__file__).resolve().parents[2] / "sample_logs" / "clean-multi-turn.jsonl"
    for i in range(4):
        (tmp_path / f"s{i}").mkdir()
        shutil.copy(sample, tmp_path / f"s{i}" / "session.jsonl")
    passes: list[int] = []
    monkeypatch.setattr(pipeline, "collect_young", lambda: passes.append(1))
    with ProcessExecutor(2) as workers:
        for executor, expected in ((SerialExecutor(), 3), (_MapOnly(), 3), (workers, 0)):
            passes.clear()
            view = pipeline.check_report([tmp_path], executor=executor)
            view.close()
            assert len(passes) == expected, executor
    assert SerialExecutor().here and ProcessExecutor(1).here and not ProcessExecutor(2).here
    auto = AutoExecutor(2)
    assert not auto.here  # nothing has run before it chooses
    assert list(auto.imap(abs, [-1, -2], [1, 1])) == [(0, 1), (1, 2)] and auto.here  # small: this process
    assert DaskExecutor(_Client()).here is False


def _models_of(tmp_path, monkeypatch) -> list[weakref.ref]:
    """A folder of one log, and weak references to the models its checks replay, each held by cyclic
    garbage (what a unit may leave: only the cyclic collector frees it)."""
    import shutil
    from pathlib import Path

    from invariants.gate import unit

    sample = Path(__file__).resolve().parents[2] / "sample_logs" / "clean-multi-turn.jsonl"
    shutil.copy(sample, tmp_path / "session.jsonl")
    made: list[weakref.ref] = []
    replay_source = unit.replay_source

    def replayed(*args, **kwargs):
        model = replay_source(*args, **kwargs)
        made.append(weakref.ref(model))
        Node().model = model
        return model

    monkeypatch.setattr(unit, "replay_source", replayed)
    gc.unfreeze()
    return made


def test_a_run_that_ends_without_collecting_leaves_its_last_garbage():
    gc.unfreeze()
    for collect_last in (True, False):
        with collector_paused(collect_last):
            node = Node()
            ref = weakref.ref(node)
            del node
        assert (ref() is None) is collect_last


@pytest.mark.parametrize("exits", [False, True])
def test_the_check_command_leaves_its_last_garbage_only_when_the_process_exits(tmp_path, monkeypatch, capsys, exits):
    """``inspector check`` exits when its report is written: a last young-generation pass would visit
    what the run allocated since its last unit, to free what it left cyclic, for nothing.  Called as a
    library (``main``), as tests and the TUI do, it leaves nothing behind."""
    from inspector.cli import main

    made = _models_of(tmp_path, monkeypatch)
    assert main(["check", str(tmp_path), "--no-cache", "-q"], exits=exits) == 0
    assert len(made) == 1 and (made[0]() is not None) is exits


def test_a_check_leaves_no_model_of_its_run_behind(tmp_path, monkeypatch):
    """A long-lived process (the TUI, the pytest plugin, a library caller) runs check after check: a
    model left as garbage when a run ends would be frozen with what the run keeps, and only a later
    full collection frees it (a loop of checks of one large log grew from 28 to 82 MB that way)."""
    from invariants.gate.pipeline import check

    made = _models_of(tmp_path, monkeypatch)
    assert len(check([tmp_path]).sessions) == 1
    assert len(made) == 1 and made[0]() is None
