"""--jobs N, the result cache and an in-process run that keeps its models give the same report byte for byte;
the result cache hit path parses nothing."""

from __future__ import annotations

import shutil

import pytest

from inspector.cli import main
from invariants import CheckOptions, ResultCache, RunStats, check
from invariants.gate.formats import render
from tests.conftest import CORPUS, SAMPLES
from tests.support.plans import reports


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tree(tmp_path):
    """Samples spread over folders, with a forked child whose parent sits in another folder of the root."""
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    for p in SAMPLES.glob("*.jsonl"):  # the top-level samples with their captures
        shutil.copy(p, root / "a" / p.name)
    fork = SAMPLES / "fork"
    (root / "b").mkdir()
    (root / "c").mkdir()
    for p in fork.iterdir():
        head = p.read_bytes()[:300]
        target = root / ("c" if b"parentSession" in head else "b")
        shutil.copy(p, target / p.name)
    return root


def test_parallel_and_cached_runs_equal_an_in_process_run(tree, tmp_path):
    reference = reports(check([tree], keep_models=True))
    assert "FRK003" not in reference[0]  # the parent, in another folder, is among the checked logs
    assert reports(check([tree])) == reference
    assert reports(check([tree], jobs=2)) == reference
    cache = tmp_path / "cache"
    st = RunStats()
    assert reports(check([tree], cache=ResultCache(cache), stats=st)) == reference
    assert st.cache_hits == 0 and st.cache_misses == st.units > 1
    st = RunStats()
    assert reports(check([tree], jobs=2, cache=ResultCache(cache), stats=st)) == reference
    assert st.cache_hits == st.units


def test_cli_jobs_output_is_identical_to_serial(capsys, tree):
    for fmt in ("text", "json", "sarif"):
        serial = run(capsys, "check", str(tree), "--no-cache", "--format", fmt, "-q")
        parallel = run(capsys, "check", str(tree), "--no-cache", "--format", fmt, "-q", "--jobs", "2")
        assert serial == parallel and serial[0] == 1


def test_explicit_captures_run_in_parallel_too(tree):
    cap = tree / "a" / "capture-divergence.requests.jsonl"
    logs = [tree / "a" / "capture-divergence.jsonl", tree / "a" / "clean-multi-turn.jsonl"]
    opts = CheckOptions(captures=[cap])
    assert reports(check(logs, opts, jobs=2)) == reports(check(logs, opts, keep_models=True))


def test_cache_hit_parses_nothing(tree, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    first = reports(check([tree], cache=ResultCache(cache_dir)))

    def boom(*a, **k):
        raise AssertionError("parsed on a cache hit")

    import invariants.analysis.forks
    import invariants.gate.unit
    import invariants.read.load

    monkeypatch.setattr(invariants.read.load.LogReader, "iter_objects", boom)
    monkeypatch.setattr(invariants.gate.unit, "replay", boom)
    monkeypatch.setattr(invariants.gate.unit, "iter_capture", boom)
    monkeypatch.setattr(invariants.analysis.forks, "_head", boom)
    monkeypatch.setattr(invariants.read.load, "parse_json", boom)
    st = RunStats()
    assert reports(check([tree], cache=ResultCache(cache_dir), stats=st)) == first
    assert st.cache_hits == st.units and st.fork_hits == 1


def test_a_changed_log_or_capture_is_checked_again(tree, tmp_path):
    cache_dir = tmp_path / "cache"
    check([tree], cache=ResultCache(cache_dir))
    cap = tree / "a" / "capture-key-order.requests.jsonl"
    cap.write_bytes(cap.read_bytes().replace(b'"content"', b'"content" ', 1))  # same JSON, new revision
    st = RunStats()
    again = check([tree], cache=ResultCache(cache_dir), stats=st)
    assert st.cache_misses == 1 and st.cache_hits == st.units - 1
    assert reports(again) == reports(check([tree], keep_models=True))
    # a real change to a capture changes the result, not a stale answer
    lines = cap.read_bytes().splitlines()
    lines[0] = lines[0].replace(b'"model":"', b'"model":"x', 1)
    cap.write_bytes(b"\n".join(lines) + b"\n")
    changed = check([tree], cache=ResultCache(cache_dir))
    assert reports(changed) == reports(check([tree], keep_models=True))
    assert any(f.rule == "DIV010" and f.file.endswith("capture-key-order.jsonl") for f in changed.findings)


def test_cli_cache_dir_and_no_cache(capsys, tree, tmp_path):
    cache_dir = tmp_path / "c"
    a = run(capsys, "check", str(tree), "--cache-dir", str(cache_dir), "--format", "json")
    b = run(capsys, "check", str(tree), "--cache-dir", str(cache_dir), "--format", "json")
    units = RunStats()
    check([tree], stats=units)
    assert a[:2] == b[:2] and "cache 0/" in a[2] and f"cache {units.units}/{units.units} units" in b[2]
    assert (cache_dir / "CACHEDIR.TAG").exists() and (cache_dir / ".gitignore").read_text().strip().endswith("*")
    c = run(capsys, "check", str(tree), "--no-cache", "--format", "json")
    assert c[:2] == a[:2] and "cache" not in c[2]


@pytest.mark.corpus
def test_corpus_jobs_and_cache_equal_serial(tmp_path):
    corpus = CORPUS / "upstream-seed-era"
    if not corpus.is_dir():
        pytest.skip("conformance corpus not present")
    reference = [render(check([corpus], keep_models=True), f) for f in ("json", "text")]
    assert [render(check([corpus], jobs=2), f) for f in ("json", "text")] == reference
    check([corpus], cache=ResultCache(tmp_path))
    assert [render(check([corpus], cache=ResultCache(tmp_path)), f) for f in ("json", "text")] == reference


def _pack(cache_dir):
    (pack,) = list(cache_dir.glob("*/pack-*.sqlite"))
    return pack


def _slots(pack) -> set[str]:
    import sqlite3

    con = sqlite3.connect(pack)
    try:
        return {slot for (slot,) in con.execute("SELECT slot FROM entries")}
    finally:
        con.close()


def test_a_pack_keeps_what_a_run_used_and_a_run_that_only_read_writes_nothing(tree, tmp_path):
    cache_dir = tmp_path / "cache"
    st = RunStats()
    check([tree], cache=ResultCache(cache_dir), stats=st)
    pack = _pack(cache_dir)
    used = _slots(pack)
    assert len([s for s in used if s.startswith("unit:")]) == st.units and any(s.startswith("fork:") for s in used)
    assert len([s for s in used if s.startswith("groups:")]) == 1  # folder a's plan: its logs have captures
    stamp = (pack.stat().st_mtime_ns, pack.read_bytes())
    cache = ResultCache(cache_dir)
    check([tree], cache=cache)
    assert cache.writes == 0 and (pack.stat().st_mtime_ns, pack.read_bytes()) == stamp  # all answered: untouched
    shutil.rmtree(tree / "b")  # the fork's parent folder goes: its entry is dropped, the child's changes
    cache = ResultCache(cache_dir)
    check([tree], cache=cache)
    assert cache.writes == 1
    left = _slots(pack)
    assert len([s for s in left if s.startswith("unit:")]) == st.units - 1 and left != used


def test_a_link_or_garbage_where_the_pack_goes_is_replaced_not_written_through(tree, tmp_path):
    cache_dir = tmp_path / "cache"
    reference = reports(check([tree], cache=ResultCache(cache_dir)))
    pack = _pack(cache_dir)
    victim = tmp_path / "victim.sqlite"
    pack.rename(victim)
    before = victim.read_bytes()
    pack.symlink_to(victim)
    st = RunStats()
    assert reports(check([tree], cache=ResultCache(cache_dir), stats=st)) == reference
    assert victim.read_bytes() == before and not pack.is_symlink() and st.cache_hits == 0
    assert len(_slots(pack)) == len(_slots(victim))
    pack.write_bytes(b"not a database, " * 512)
    st = RunStats()
    assert reports(check([tree], cache=ResultCache(cache_dir), stats=st)) == reference
    assert st.cache_misses == st.units and len(_slots(pack)) == len(_slots(victim))


def test_cache_answers_reach_the_report_as_found_not_when_the_next_unit_finishes(tree, tmp_path):
    """A warm run holds no answers: each is handed on before the executor is asked for the next unit
    (held until a checked unit came back, every answer of a run that checks nothing was held to its end)."""
    from invariants.gate import pipeline
    from invariants.gate.executor import SerialExecutor

    cache_dir = tmp_path / "cache"
    st = RunStats()
    check([tree], cache=ResultCache(cache_dir), stats=st)
    last = st.units - 1
    for p in (tree / "c").iterdir():
        p.touch()  # a new revision: the last folder, "c", is checked again; "a" and "b" are answered
    events: list[str] = []
    delivered: list[int] = []

    class Watching(SerialExecutor):
        def imap(self, fn, items, costs=None):
            for i, x in enumerate(items):
                events.append(f"run {len(delivered)}")
                yield i, fn(x)

    add = pipeline.Assembler.add

    def watched(self, n, unit, outcome):
        delivered.append(n)
        events.append(f"deliver {n}")
        add(self, n, unit, outcome)

    pipeline.Assembler.add = watched  # type: ignore[method-assign]
    try:
        check([tree], cache=ResultCache(cache_dir), executor=Watching())
    finally:
        pipeline.Assembler.add = add  # type: ignore[method-assign]
    assert sorted(delivered) == list(range(st.units))
    # every answer handed on, then the last unit run and delivered; then the fork pass (the child changed)
    assert events[: last + 2] == [*(f"deliver {n}" for n in range(last)), f"run {last}", f"deliver {last}"]


def test_an_entry_that_is_not_json_is_a_miss(tree, tmp_path):
    import sqlite3

    cache_dir = tmp_path / "cache"
    reference = reports(check([tree], cache=ResultCache(cache_dir)))
    con = sqlite3.connect(_pack(cache_dir))
    con.execute("UPDATE entries SET value = x'7b7b7b' WHERE slot LIKE 'unit:%'")  # "{{{"
    con.commit()
    con.close()
    st = RunStats()
    assert reports(check([tree], cache=ResultCache(cache_dir), stats=st)) == reference
    assert st.cache_hits == 0 and st.cache_misses == st.units
