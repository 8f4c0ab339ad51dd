"""The fork pass at the end of a check: children handed out one by one from a temporary table, in report order."""

from __future__ import annotations

import multiprocessing
import random
from typing import Any, Iterator

from invariants import check
from invariants.gate.executor import ProcessExecutor
from invariants.gate.fork_checks import Listed, checked_parent, fork_findings
from invariants.gate.pipeline import check_report
from invariants.gate.result import SessionSummary
from invariants.gate.session_table import OfId, SessionTable
from tests.support.logs import Log


def _summary(session: str, path: str, parent: str | None = None, has_header: bool = True) -> SessionSummary:
    return SessionSummary(
        session=session,
        file=path,
        era="seed",
        profile="seed",
        events=3,
        turns=1,
        steps=1,
        instances=1,
        requests=0,
        path=path,
        root="/r",
        parent_session=parent,
        seed_length=2 if parent else 0,
        has_header=has_header,
    )


def _names(pairs: Iterator[tuple[SessionSummary, OfId]], paths: set[str]) -> list[tuple[str, list[str]]]:
    """Each child's path, and the paths of the sessions of its parent's id among ``paths``."""
    return [(child.path, [c.path for c in same.at(paths)]) for child, same in pairs]


def test_the_table_hands_out_each_child_in_report_order_with_the_sessions_of_its_parents_id():
    sessions = [
        _summary("c1", "/r/a/c1.jsonl", parent="p"),  # before its parent in report order
        _summary("p", "/r/a/p.jsonl"),
        _summary("q", "/r/a/q.jsonl"),
        _summary("p", "/r/b/p.jsonl"),  # the same id elsewhere: a candidate too, in report order
        _summary("c2", "/r/a/c2.jsonl", parent="c1"),  # a child's child
        _summary("s", "/r/a/s.jsonl", parent="s"),  # names itself: never its own parent
        _summary("s", "/r/c/s.jsonl"),
        _summary("h", "/r/a/h.jsonl", parent="p", has_header=False),  # no header: not a fork
    ]
    table = SessionTable(s.to_json() for s in sessions)
    try:
        assert _names(table.forks(), {s.path for s in sessions}) == [
            ("/r/a/c1.jsonl", ["/r/a/p.jsonl", "/r/b/p.jsonl"]),
            ("/r/a/c2.jsonl", ["/r/a/c1.jsonl"]),
            ("/r/a/s.jsonl", ["/r/c/s.jsonl"]),
        ]
        child, _ = next(table.forks())
        assert child == sessions[0]  # the whole summary comes back, findings aside
    finally:
        table.close()


def test_a_value_orjson_refuses_survives_the_table():
    odd = _summary("p", "/r/a/p.jsonl")
    odd.created_at = 2**70  # beyond orjson's integers: the json module carries it
    table = SessionTable([_summary("c", "/r/a/c.jsonl", parent="p").to_json(), odd.to_json()])
    try:
        ((_, same),) = list(table.forks())
        [parent] = same.at({"/r/a/p.jsonl"})
        assert parent.created_at == 2**70
        assert same.summary(parent).created_at == 2**70
    finally:
        table.close()


class _Recording:
    """A result cache that answers nothing and notes, at each answer stored, how many children were read."""

    def __init__(self, read: list[int]) -> None:
        self.read = read
        self.at_put: list[int] = []

    def get(self, kind: str, identity: Any, key: Any) -> None:
        return None

    def put(self, kind: str, identity: Any, key: Any, value: Any) -> None:
        self.at_put.append(len(self.read))


def _families(root, n: int, tampered: set[int]) -> None:
    for i in range(n):
        parent = Log(f"parent-{i}")
        parent.clean_turn(1, header_reason="initial")
        child = parent.fork(f"child-{i}")
        if i in tampered:
            child.events[1] = {**child.events[1], "data": {"content": [{"type": "text", "text": "changed"}]}}
        child.clean_turn(2, header_reason="resume")
        parent.write(root / f"f{i}" / "b-parent.jsonl")
        child.write(root / f"f{i}" / "a-child.jsonl")  # the child comes first in report order


def test_the_fork_pass_reads_each_child_only_when_the_comparison_before_it_is_done(tmp_path):
    _families(tmp_path, 3, tampered={1})
    result = check([tmp_path])
    read: list[int] = []

    def counted(pairs: Iterator[tuple[SessionSummary, OfId]]) -> Iterator:
        for pair in pairs:
            read.append(1)
            yield pair

    table = SessionTable(s.to_json() for s in result.sessions)
    cache = _Recording(read)
    try:
        found, hits = fork_findings(counted(table.forks()), cache)
    finally:
        table.close()
    assert cache.at_put == [1, 2, 3]  # a list of every child first would have read 3 before the first answer
    assert hits == 0
    assert [(f.rule, f.session) for f in found] == [("FRK001", "child-1")]


class _Counting(ProcessExecutor):
    """A pool of two that notes the function of every map it is given."""

    def __init__(self) -> None:
        super().__init__(2)
        self.mapped: list[str] = []

    def imap(self, fn: Any, items: Any, costs: Any = None) -> Any:
        self.mapped.append(fn.__name__)
        return super().imap(fn, items, costs)


def _fork_rules(view: Any) -> list[tuple[str, str | None]]:
    try:
        return [(f.rule, f.session) for f in view.findings() if f.rule.startswith("FRK")]
    finally:
        view.close()


def test_a_fork_pass_that_reads_little_stays_here_and_a_larger_one_goes_to_the_workers(tmp_path, monkeypatch):
    """The seed comparisons go to the executor only when the children's logs are worth sending
    (AUTO_BYTES in all, as for units, and FORK_BYTES a child); the findings and their order are the same
    either way."""
    from invariants.gate import assemble

    _families(tmp_path, 12, tampered={2, 9})
    serial = _fork_rules(check_report([tmp_path], jobs=1))
    assert serial == [("FRK001", "child-2"), ("FRK001", "child-9")]
    with _Counting() as small:
        assert _fork_rules(check_report([tmp_path], executor=small)) == serial
        assert small.mapped == ["run_unit"]  # 12 small children: compared in this process
        assert not multiprocessing.active_children()  # and the workers let go before the fork pass
    monkeypatch.setattr(assemble, "AUTO_BYTES", 0)
    monkeypatch.setattr(assemble, "FORK_BYTES", 0)
    with _Counting() as large:
        assert _fork_rules(check_report([tmp_path], executor=large)) == serial
        assert large.mapped == ["run_unit", "fork_job"]  # on the workers that checked the units
        assert len(multiprocessing.active_children()) == 2
    assert not multiprocessing.active_children()


def test_the_table_chooses_the_parent_a_list_of_the_same_sessions_chooses(tmp_path):
    """Ids reused across folders, both layouts, sessions in a database, creation times: the table asks
    SQLite for the logs near the child, then for those at the store's places; the answer is the one the
    whole list of the parent's id gives."""
    rng = random.Random(7)
    (tmp_path / "a1.jsonl").write_text("")  # a root-level place the store could have used
    for d in ("p", "q"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "a1.jsonl").write_text("")
    places = [
        *(f"{tmp_path}/{d}/{n}.jsonl" for d in ("p", "q", "r") for n in ("a1", "b2", "c3", "x")),
        *(f"{tmp_path}/--proj--/{n}/session.jsonl" for n in ("a1", "b2", "c3", "x", "y")),
        f"{tmp_path}/a1.jsonl",
        f"{tmp_path}/store.sqlite",
    ]
    chosen = 0
    for _ in range(60):
        sessions = []
        for path in rng.sample(places, rng.randint(4, len(places))):
            s = _summary(rng.choice(["a1", "b2", "c3"]), path, parent=rng.choice([None, "a1", "b2", "c3"]))
            s.root = str(tmp_path)
            s.member = s.session if path.endswith(".sqlite") else None
            s.created_at = rng.choice([None, 1, 5, 9, "x"])
            sessions.append(s)
        table = SessionTable(s.to_json() for s in sessions)
        try:
            kids = [k for k, s in enumerate(sessions) if s.parent_session]
            for (child, same), k in zip(table.forks(), kids, strict=True):
                listed = Listed([s for i, s in enumerate(sessions) if s.session == child.parent_session and i != k])
                want = checked_parent(child.source, child.parent_session or "", child.created_at, listed)
                got = checked_parent(child.source, child.parent_session or "", child.created_at, same)
                assert (got and got.path) == (want and want.path), (child.path, child.parent_session)
                chosen += want is not None
        finally:
            table.close()
    assert chosen > 20  # the cases chose parents, near and at the store's places


def test_more_places_than_one_statement_takes_are_asked_in_parts():
    sessions = [_summary("c", "/r/c.jsonl", parent="p")] + [_summary("p", f"/r/d{i:04d}/p.jsonl") for i in range(1500)]
    table = SessionTable(s.to_json() for s in sessions)
    try:
        ((_, same),) = list(table.forks())
        places = {f"/r/d{i:04d}/p.jsonl" for i in range(0, 3000, 2)}  # 1,500 places, 750 of them checked logs
        assert [c.path for c in same.at(places)] == [f"/r/d{i:04d}/p.jsonl" for i in range(0, 1500, 2)]
    finally:
        table.close()
