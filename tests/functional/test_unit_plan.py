"""How a run is cut into units: a folder's logs each alone, or in the groups its captures route between.

A folder without a capture (the seed-era layout keeps every session of a project in one folder)
is cut into one unit a log, so it is never held whole and spreads over the workers; one with
captures beside its logs into the groups they route between (tests/functional/test_capture_groups.py);
a folder ``requests.jsonl`` keeps its folder whole.  The report must be the one the whole folder
gives, serial, in parallel and from the cache, and a capture that appears later must be checked,
not hidden behind a cached one-log answer.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from invariants import ResultCache, RunStats, check
from invariants.gate.unit import iter_units, plan_units
from invariants.read.discover import discover, iter_discover
from tests.conftest import SAMPLES
from tests.support.logs import Log
from tests.support.plans import reports, whole_folders


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """``flat``: every sample log and the fork pair, no capture (a parent and its child share it);
    ``with-capture``: two logs and one capture; ``single``: one log and its capture."""
    root = tmp_path / "root"
    flat = root / "flat"
    flat.mkdir(parents=True)
    for p in sorted(SAMPLES.glob("*.jsonl")):
        if not p.name.endswith(".requests.jsonl"):
            shutil.copy(p, flat / p.name)
    for p in (SAMPLES / "fork").glob("*.jsonl"):
        if p.name != "requests.jsonl":
            shutil.copy(p, flat / p.name)
    both = root / "with-capture"
    both.mkdir()
    for name in ("capture-divergence", "clean-multi-turn"):
        shutil.copy(SAMPLES / f"{name}.jsonl", both / f"{name}.jsonl")
    shutil.copy(SAMPLES / "capture-divergence.requests.jsonl", both / "capture-divergence.requests.jsonl")
    single = root / "single"
    single.mkdir()
    shutil.copy(SAMPLES / "compaction.jsonl", single / "compaction.jsonl")
    shutil.copy(SAMPLES / "compaction.requests.jsonl", single / "compaction.requests.jsonl")
    return root


def test_a_folder_without_a_capture_is_one_unit_a_log(root: Path) -> None:
    sources, _ = discover([root])
    streamed = list(iter_units(iter_discover([root], [])))
    listed = plan_units(sources, None)
    for units in (streamed, listed):
        flat = [u for u in units if u.sources[0].path.parent.name == "flat"]
        logs = [s for s in sources if s.path.parent.name == "flat"]
        assert len(flat) == len(logs) > 2
        assert all(u.alone and len(u.sources) == 1 for u in flat)
        assert [u.indexes[0] for u in flat] == [i for i, s in enumerate(sources) if s.path.parent.name == "flat"]
        others = [(u.sources[0].path.name, len(u.sources), u.alone) for u in units if u not in flat]
        # with-capture: the log whose capture names its own session only, and the other alone
        assert others == [
            ("compaction.jsonl", 1, False),
            ("capture-divergence.jsonl", 1, False),
            ("clean-multi-turn.jsonl", 1, True),
        ]
    assert sorted(i for u in streamed for i in u.indexes) == list(range(len(sources)))


@pytest.mark.parametrize("name", ["requests.jsonl", "requests.jsonl.zstd", "requests.jsonl.zst"])
def test_a_folders_own_capture_keeps_the_folder_whole(root: Path, name: str) -> None:
    (root / "flat" / name).write_bytes(b"")
    for units in (list(iter_units(iter_discover([root / "flat"], []))), plan_units(discover([root / "flat"])[0], None)):
        assert len(units) == 1 and not units[0].alone


@pytest.mark.parametrize("name", ["other.requests.jsonl", "requests-1.jsonl"])
def test_a_capture_name_no_log_looks_up_does_not(root: Path, name: str) -> None:
    """No log's lookup reads ``other.requests.jsonl`` (no log ``other.jsonl``) or ``requests-1.jsonl``:
    the folder is cut, and the report is the one the whole folder gives."""
    shutil.copy(SAMPLES / "compaction.requests.jsonl", root / "flat" / name)
    units = list(iter_units(iter_discover([root / "flat"], [])))
    assert len(units) > 2 and all(u.alone for u in units)
    reference = reports(check([root / "flat"]))
    with pytest.MonkeyPatch.context() as m:
        whole_folders(m)
        assert reports(check([root / "flat"])) == reference


def test_a_capture_that_is_a_symlink_keeps_the_folder_whole(root: Path) -> None:
    os.symlink(SAMPLES / "compaction.requests.jsonl", root / "flat" / "requests.jsonl")
    units = list(iter_units(iter_discover([root / "flat"], [])))
    assert len(units) == 1  # the lookup ignores it; keeping the folder whole is never wrong


def test_cut_units_give_the_report_the_whole_folder_gives(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = check([root], keep_models=True)
    assert any(f.file and "/flat/" in f.file for f in cut.findings)  # the samples' own findings
    reference = reports(cut)
    assert reports(check([root])) == reference
    assert reports(check([root], jobs=2)) == reference
    st = RunStats()
    assert reports(check([root], cache=ResultCache(tmp_path / "cache"), stats=st)) == reference
    assert st.units == len(list((root / "flat").iterdir())) + 3  # with-capture: a group and a log alone
    with monkeypatch.context() as m:
        whole_folders(m)
        assert reports(check([root], keep_models=True)) == reference
        assert reports(check([root], jobs=2)) == reference


def test_a_capture_added_later_is_checked_not_served_from_the_cache(root: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = check([root], cache=ResultCache(cache))
    assert not any(
        f.file and f.file.endswith("/flat/capture-divergence.jsonl") and f.rule.startswith("DIV")
        for f in before.findings
    )
    shutil.copy(SAMPLES / "capture-divergence.requests.jsonl", root / "flat" / "capture-divergence.requests.jsonl")
    st = RunStats()
    after = check([root], cache=ResultCache(cache), stats=st)
    assert reports(after) == reports(check([root], keep_models=True))
    assert any(
        f.file and f.file.endswith("/flat/capture-divergence.jsonl") and f.rule.startswith("DIV")
        for f in after.findings
    )
    # Only the log the new capture routes to is checked again: the rest of its folder, and the other
    # folders, are served from the cache.
    assert st.cache_misses == 1 and st.cache_hits == st.units - 1


def test_a_walked_folder_is_never_listed_again(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk's own listing says what captures a folder holds: planning the cut and looking up each
    log's capture list nothing again (a seed-era folder of n logs was once listed once a log, n
    listings of n names each; a harness session folder once a session).  The cache's key of a group
    of logs with captures holds what the walk saw beside each; only a folder of one log with its
    capture, kept whole, is listed for its key, once."""
    listed: list[str] = []
    real = os.listdir

    def counting(path: os.PathLike | str = ".") -> list[str]:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", counting)
    result = check([root])
    assert listed == []
    assert sum(1 for f in result.findings if f.rule.startswith("DIV")) > 0  # the captures were still found
    check([root], cache=ResultCache(tmp_path / "cache"))
    assert listed == [str(root / "single")]


def test_a_log_named_alone_still_finds_its_capture(root: Path) -> None:
    """A log named on the command line was found by no walk: its folder is listed for its capture."""
    log = root / "with-capture" / "capture-divergence.jsonl"
    assert next(iter_discover([log], [])).beside is None
    named = [f.to_json() for f in check([log]).findings if f.rule.startswith("DIV")]
    walked = [f.to_json() for f in check([root / "with-capture"]).findings if f.rule.startswith("DIV")]
    assert named and named == walked


def test_a_session_folder_without_a_capture_is_a_unit_alone(tmp_path: Path) -> None:
    """The harness layout (a folder a session): a session with no capture needs no lookup at all."""
    root = tmp_path / "sessions"
    for name, capture in (("a", False), ("b", True)):
        (root / name).mkdir(parents=True)
        shutil.copy(SAMPLES / "capture-divergence.jsonl", root / name / "session.jsonl")
        if capture:
            shutil.copy(SAMPLES / "capture-divergence.requests.jsonl", root / name / "requests.jsonl")
    units = list(iter_units(iter_discover([root], [])))
    assert [(u.sources[0].path.parent.name, u.alone) for u in units] == [("a", True), ("b", False)]
    assert units[1].sources[0].beside == ("requests.jsonl",)


def test_a_capture_added_to_a_session_folder_is_checked(tmp_path: Path) -> None:
    """A session checked alone (no capture), then given one: the cached one-log answer is not served."""
    folder = tmp_path / "sessions" / "a"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLES / "capture-divergence.jsonl", folder / "session.jsonl")
    cache = tmp_path / "cache"
    assert not any(f.rule.startswith("DIV") for f in check([folder.parent], cache=ResultCache(cache)).findings)
    shutil.copy(SAMPLES / "capture-divergence.requests.jsonl", folder / "requests.jsonl")
    st = RunStats()
    after = check([folder.parent], cache=ResultCache(cache), stats=st)
    assert st.cache_hits == 0
    assert any(f.rule.startswith("DIV") for f in after.findings)
    assert reports(after) == reports(check([folder.parent]))


@pytest.mark.parametrize(("name", "cut"), [(None, True), ("other.requests.jsonl", True), ("requests.jsonl", False)])
def test_logs_named_alone_are_planned_by_their_folder_listing(root: Path, name: str | None, cut: bool) -> None:
    """Logs named one by one were found by no walk: their folder is listed, once, and decides alike."""
    if name is not None:
        shutil.copy(SAMPLES / "compaction.requests.jsonl", root / "flat" / name)
    logs = sorted(p for p in (root / "flat").glob("*.jsonl") if ".requests." not in p.name and p.name != name)[:3]
    sources, _ = discover(logs)
    assert all(s.beside is None for s in sources)
    units = plan_units(sources, None)
    assert [len(u.sources) for u in units] == ([1, 1, 1] if cut else [3])
    assert all(u.alone == cut for u in units)


def test_a_walked_folder_is_held_by_its_logs_names(tmp_path: Path) -> None:
    """While a folder is planned, the walk's sources of its logs are let go: it is held as names (a
    source and its path object were about 1 KB a log of a seed-era folder of thousands).  The units
    it gives are the ones the listed plan gives."""
    import gc

    from invariants.gate.capture_groups import route_groups
    from invariants.read.source import LogSource

    folder = tmp_path / "cwd-0123456789ab"
    folder.mkdir()
    for k in range(40):
        log = Log(f"s{k:02d}", era="late")
        log.clean_turn(1, header_reason="initial", capture=True)
        log.write(folder / f"s{k:02d}.jsonl")
        if k == 7:
            log.write_requests(folder / "s07.requests.jsonl")
    alive: list[int] = []

    def counted(logs):
        gc.collect()
        alive.append(sum(type(o) is LogSource and o.path.parent == folder for o in gc.get_objects()))
        return route_groups(logs)

    streamed = list(iter_units(iter_discover([folder], []), counted))
    assert alive == [2]  # the first log's source, kept as given, and the last one the walk gave (40 before)
    sources = discover([folder])[0]
    assert [(u.sources, u.indexes, u.alone, u.hints) for u in streamed] == [
        (u.sources, u.indexes, u.alone, u.hints) for u in plan_units(sources, None)
    ]
    assert len(streamed) == 40


def test_a_folder_is_walked_holding_its_names_not_its_entries(tmp_path: Path) -> None:
    """The walk lists a folder once and keeps only names while it is below it: an entry of the
    listing also holds its whole path, and a flat folder of 100,000 sessions held as entries took
    49 MB at once.  Here the walk's peak is about a name and its place in two collections a file."""
    import tracemalloc

    from invariants.read.discover import _walk_files

    folder = tmp_path / "cwd-0123456789ab"
    folder.mkdir()
    for k in range(2000):
        (folder / f"fleet-{k:06d}.jsonl").touch()
    tracemalloc.start()
    try:
        walked = sum(1 for _ in _walk_files(str(tmp_path)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert walked == 2000
    assert peak / walked < 250, peak / walked  # entries: 367 B a file; names: 166
