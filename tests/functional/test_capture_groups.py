"""A folder with captures beside its logs is cut into the groups its captures route between.

The seed-era layout keeps every session of a project in one folder, ``<id>.requests.jsonl`` beside
``<id>.jsonl``; checked whole, a folder of n sessions held n models and went to one worker.  Each
unit of the cut must ask every routing question (by id, the last of an id winning; by the capture's
own name; is a hinted file a log of this run) with the whole folder's answer: the report is the
whole folder's, serial, in parallel and from the cache.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from invariants import ResultCache, RunStats, check
from invariants.gate.capture_groups import listed, route_groups
from invariants.gate.unit import iter_units, plan_units
from invariants.read.discover import discover, iter_discover
from tests.support.logs import Log
from tests.support.plans import reports, whole_folders


def _session(folder: Path, name: str, session_id: str, prompt: str = "hi") -> Log:
    log = Log(session_id, era="late")
    log.clean_turn(1, prompt, header_reason="initial", capture=True)
    log.write(folder / f"{name}.jsonl")
    return log


def _project(folder: Path) -> Path:
    """A seed-era project folder whose captures route across logs in every way routing can."""
    folder.mkdir(parents=True)
    _session(folder, "a", "a")
    p = _session(folder, "p", "p")
    _session(folder, "b", "b")
    c = _session(folder, "c", "c")  # p's capture also records c's requests (a parent's file covers its child)
    p.write_requests(folder / "p.requests.jsonl", p.requests + c.requests)
    d1 = _session(folder, "d1", "dup", "one")
    d2 = _session(folder, "d2", "dup", "two")  # two logs of one id: the lines naming it go to the last
    d1.write_requests(folder / "d1.requests.jsonl", d1.requests)  # so d1's own request diverges from d2
    d2.write_requests(folder / "d2.requests.jsonl", d2.requests)
    h = _session(folder, "h", "h")
    _session(folder, "k", "kk")
    ghost = [
        {**h.requests[0], "sessionId": "ghost", "sessionFile": "k.jsonl"},  # hints at a log this run checks: REQ004
        {**h.requests[0], "sessionId": "zz", "sessionFile": "notes.txt"},  # at a file that is no log: excused
        {**h.requests[0], "sessionId": "nohdr"},  # the id of a log without a header (its name)
    ]
    h.write_requests(folder / "h.requests.jsonl", h.requests + ghost)
    (folder / "notes.txt").write_text("not a log\n")
    (folder / "nohdr.jsonl").write_bytes(b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n')
    u = _session(folder, "u", "u")
    capture = [{k: v for k, v in r.items() if k != "sessionId"} for r in u.requests]  # lines naming no session
    (folder / "u.requests.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in capture) + b"not json\n")
    return folder


def test_the_groups_are_what_routing_can_connect(tmp_path: Path) -> None:
    folder = _project(tmp_path / "cwd-0123456789ab")
    for units in (list(iter_units(iter_discover([folder], []))), plan_units(discover([folder])[0], None)):
        planned = [([s.path.stem for s in u.sources], u.alone) for u in units]
        assert planned == [
            (["a"], True),
            (["b"], True),
            (["c", "p"], False),  # p's capture names c
            (["d1", "d2"], False),  # d2's capture names "dup", an id both have
            (["h", "k", "nohdr"], False),  # h's capture hints at k.jsonl and names nohdr
            (["u"], False),  # its lines name no session: they go to u, the log it is named after
        ]
        groups = {tuple(s.path.stem for s in u.sources): u.hints for u in units}
        every = (".jsonl", ".jsonl.zst", ".jsonl.zstd")
        assert (
            groups[("h", "k", "nohdr")]
            == sorted(  # what h's capture names that is no log here
                ["notes.txt", *(f"{sid}{sfx}" for sid in ("ghost", "zz") for sfx in every)]
                + [f"{sid}{sfx}" for sid in ("h", "nohdr") for sfx in every[1:]]
            )
        )
        assert groups[("u",)] == []


def test_a_cut_folder_gives_the_whole_folders_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _project(tmp_path / "cwd-0123456789ab")
    cut = check([folder], keep_models=True)
    rules = sorted(f.rule for f in cut.findings)
    assert {"REQ004", "LOG013", "DIV001"} <= set(rules)  # routing had something to decide
    assert sorted((r.status, r.session) for r in cut.requests).count(("ok", "c")) == 1
    reference = reports(cut)
    assert reports(check([folder], jobs=2)) == reference
    st = RunStats()
    assert reports(check([folder], cache=ResultCache(tmp_path / "cache"), stats=st)) == reference
    assert st.units == 6
    again = RunStats()
    assert reports(check([folder], cache=ResultCache(tmp_path / "cache"), stats=again)) == reference
    assert again.cache_hits == 6
    with monkeypatch.context() as m:
        whole_folders(m)
        assert reports(check([folder], keep_models=True)) == reference
        assert reports(check([folder], jobs=2)) == reference


def test_named_logs_of_a_folder_are_grouped_as_the_walk_groups_them(tmp_path: Path) -> None:
    folder = _project(tmp_path / "cwd-0123456789ab")
    named = sorted(p for p in folder.glob("*.jsonl") if ".requests." not in p.name)
    sources, _ = discover(named)
    assert all(s.beside is None for s in sources)
    assert [len(u.sources) for u in plan_units(sources, None)] == [1, 1, 2, 2, 3, 1]
    with pytest.MonkeyPatch.context() as m:
        whole_folders(m)
        whole = reports(check(named))
    assert reports(check(named)) == whole


def test_a_hinted_file_that_appears_is_not_served_from_the_cache(tmp_path: Path) -> None:
    """A line naming a session no log explains is REQ004, unless a log beside it that this run does
    not check is the one it names: the group's cache key holds whether the hinted files exist."""
    folder = tmp_path / "cwd-0123456789ab"
    folder.mkdir()
    h = _session(folder, "h", "h")
    h.write_requests(folder / "h.requests.jsonl", [*h.requests, {**h.requests[0], "sessionId": "ghost"}])
    _session(folder, "x", "x")
    named = [folder / "h.jsonl", folder / "x.jsonl"]
    assert [u.hints is not None for u in plan_units(discover(named)[0], None)] == [True, False]
    cache = tmp_path / "cache"
    before = check(named, cache=ResultCache(cache))
    assert [f.rule for f in before.findings] == ["REQ004"]
    _session(folder, "ghost", "ghost")  # a log this run is not asked to check
    st = RunStats()
    after = check(named, cache=ResultCache(cache), stats=st)
    assert (st.cache_hits, st.cache_misses) == (1, 1)  # x, alone, is served; h's group is checked again
    assert [f.rule for f in after.findings] == []
    assert reports(after) == reports(check(named))


@pytest.mark.parametrize("doubt", ["requests.jsonl", "long line"])
def test_what_is_not_known_for_certain_keeps_the_folder_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doubt: str
) -> None:
    folder = _project(tmp_path / "cwd-0123456789ab")
    if doubt == "requests.jsonl":  # a folder capture: any line may go to any log
        (folder / "requests.jsonl").write_bytes(b"")
    else:  # a capture line longer than the limit: a run with a larger one reads what it names
        monkeypatch.setattr("invariants.read.capture.DEFAULT_MAX_LINE", 100)
    sources = list(iter_discover([folder], []))
    logs = listed(sources)
    assert logs is not None and route_groups(logs) is None
    units = list(iter_units(iter_discover([folder], [])))
    assert len(units) == 1 and len(units[0].sources) == len(sources)


def test_a_capture_that_comes_to_name_another_log_is_planned_again(tmp_path: Path) -> None:
    """The plan of a folder is kept in the result cache (a warm run reads no capture to plan it), keyed
    by its logs' and captures' revisions: a capture rewritten to name another log joins the two."""
    folder = tmp_path / "cwd-0123456789ab"
    folder.mkdir()
    p = _session(folder, "p", "p")
    c = _session(folder, "c", "c")
    p.write_requests(folder / "p.requests.jsonl", p.requests)
    cache = tmp_path / "cache"
    st = RunStats()
    check([folder], cache=ResultCache(cache), stats=st)
    assert st.units == 2
    p.write_requests(folder / "p.requests.jsonl", p.requests + c.requests)
    st = RunStats()
    after = check([folder], cache=ResultCache(cache), stats=st)
    assert st.units == 1
    assert sorted((r.status, r.session) for r in after.requests) == [("ok", "c"), ("ok", "p")]
    assert reports(after) == reports(check([folder]))


def test_a_folders_plan_is_cached_under_a_key_of_fixed_size(tmp_path: Path) -> None:
    """The cached plan's identity and key are digests: spelled out they held every log's path and
    revision at once (a flat folder of 100,000 sessions peaked at 171 MB with the cache, 73 MB without)."""
    sizes = []
    for n in (2, 40):
        folder = tmp_path / f"cwd-{n:012d}"
        folder.mkdir()
        for k in range(n):
            log = _session(folder, f"s{k}", f"s{k}")
            if k % 2 == 0:
                log.write_requests(folder / f"s{k}.requests.jsonl", log.requests)
        cache = ResultCache(tmp_path / f"cache{n}")
        check([folder], cache=cache)
        rows = cache._run("SELECT length(slot) + length(key) FROM entries WHERE slot LIKE 'groups:%'", (), fetch=True)
        assert rows is not None
        sizes.append(rows[0])
        st = RunStats()
        check([folder], cache=ResultCache(tmp_path / f"cache{n}"), stats=st)
        assert st.cache_misses == 0  # the plan and every unit served
    assert sizes[0] == sizes[1]


def test_a_folder_past_the_spill_is_planned_and_reported_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``SPILL`` logs a folder's plan keeps their names on disk: the units, the report and the
    cached plan are the same as from the lists a smaller folder is held in."""
    folder = _project(tmp_path / "cwd-0123456789ab")
    units = [(u.sources, u.indexes, u.alone, u.hints) for u in iter_units(iter_discover([folder], []))]
    reference = reports(check([folder]))
    monkeypatch.setattr("invariants.gate.capture_groups.SPILL", 2)
    logs = listed(list(iter_discover([folder], [])))
    assert logs is not None and logs._spilled is not None  # (spilled)
    assert [(u.sources, u.indexes, u.alone, u.hints) for u in iter_units(iter_discover([folder], []))] == units
    assert reports(check([folder])) == reference
    st = RunStats()
    assert reports(check([folder], cache=ResultCache(tmp_path / "cache"), stats=st)) == reference
    again = RunStats()
    assert reports(check([folder], cache=ResultCache(tmp_path / "cache"), stats=again)) == reference
    assert again.cache_hits == st.units
