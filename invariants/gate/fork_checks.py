"""The cross-session step: each forked child's seed against its parent.

:func:`resolve_parent` is the one choice of a child's parent (a checked
log, else the log the store would have written), used by the pipeline (over
the sessions of a run) and the index (over the sessions it holds under the
child's root).  :func:`fork_findings` runs the seed checks of
a run's children, cached per child in the result cache.
"""

from __future__ import annotations

import os
from typing import Any, Generic, Iterable, Iterator, Protocol, Sequence, TypeVar

from invariants.analysis.forks import (
    ForkSide,
    could_be_parent,
    find_parent_log,
    parent_candidates,
    root_index_scope,
)
from invariants.gate.executor import Executor, SerialExecutor, completed
from invariants.gate.result import SessionSummary
from invariants.gate.result_cache import ResultCache, revision
from invariants.gate.unit import fork_job
from invariants.model.findings import Finding
from invariants.read.source import LogSource


class Checked(Protocol):
    """A log among those checked (a session summary, a row): its path as written in the report, when it
    was created."""

    @property
    def path(self) -> str: ...

    @property
    def created_at(self) -> Any: ...


C = TypeVar("C", bound=Checked)


class SameId(Protocol[C]):
    """The checked logs of a parent's id (the child excluded), asked only what the choice of the parent
    needs: those near the child, whether there is any, those at given places.  A child whose parent's id
    a test suite gave thousands of logs is then not compared with each of them."""

    def near(self, folder: str, project: str | None) -> list[C]: ...

    def any(self) -> bool: ...

    def at(self, places: set[str]) -> list[C]: ...


class Summarized(SameId[C], Protocol):
    """:class:`SameId` that also gives a log's whole summary (:class:`~invariants.gate.session_table.OfId`)."""

    def summary(self, c: C) -> SessionSummary: ...


def place(path: str) -> tuple[str, str | None]:
    """A log's folder, and its project directory when it is ``<id>/session.jsonl*`` (late layout)."""
    folder = os.path.dirname(path)
    return folder, os.path.dirname(folder) if os.path.basename(path).startswith("session.jsonl") else None


class Listed(Generic[C]):
    """:class:`SameId` over a list (the index's rows of the parent's id)."""

    def __init__(self, logs: Sequence[C]) -> None:
        self.logs = logs

    def near(self, folder: str, project: str | None) -> list[C]:
        """Logs a fork keeps together: one folder (a database is in one), one project directory."""
        out = []
        for c in self.logs:
            f, p = place(c.path)
            if f == folder or (project is not None and p == project):
                out.append(c)
        return out

    def any(self) -> bool:
        return bool(self.logs)

    def at(self, places: set[str]) -> list[C]:
        return [c for c in self.logs if c.path in places]


def checked_parent(child: LogSource, parent_id: str, created_at: Any, same_id: SameId[C]) -> C | None:
    """The parent among the checked logs with the parent's id (``same_id``, the child excluded).

    The one beside the child (a fork inherits its parent's cwd, so the store
    keeps both in one folder, project directory or database), else the one
    at a root-level place the store would have used that was created before
    the child.  Ids repeat across unrelated folders (test suites reuse them),
    so a log of that id anywhere else is never taken for the parent.
    """
    pick = same_id.near(*place(str(child.path)))
    if not pick and same_id.any():
        places = {str(p) for p in parent_candidates(child, parent_id)}
        pick = [c for c in same_id.at(places) if could_be_parent(created_at, c.created_at)]
    return pick[0] if len(pick) == 1 else None


def stored_parent(child: LogSource, parent_id: str, created_at: Any, seed_length: int) -> LogSource | None:
    """When no checked log is the parent and there is a seed to compare: the log the store would have
    written (:func:`~invariants.analysis.forks.find_parent_log`, read only as far as its header)."""
    return find_parent_log(child, parent_id, created_at) if seed_length > 0 else None


def resolve_parent(
    child: LogSource, parent_id: str, created_at: Any, seed_length: int, same_id: SameId[C]
) -> C | LogSource | None:
    """The child's parent: :func:`checked_parent`, else :func:`stored_parent`, else None."""
    parent = checked_parent(child, parent_id, created_at, same_id)
    return parent if parent is not None else stored_parent(child, parent_id, created_at, seed_length)


def fork_findings(
    forks: Iterable[tuple[SessionSummary, Summarized]],
    cache: ResultCache | None = None,
    executor: Executor | None = None,
    problems: list[str] | None = None,
) -> tuple[list[Finding], int]:
    """The seed findings of every forked child of ``forks`` (each child with the checked sessions of its
    parent's id: :meth:`~invariants.gate.session_table.SessionTable.forks`), in the children's order,
    and how many children the cache answered.  A comparison whose worker died on it every time is a
    sentence appended to ``problems`` (without a list to take it, it raises ``RuntimeError``).

    ``forks`` is read as the executor asks for work and the seed comparisons, which read both logs'
    heads, go to its workers and come back as they finish, so what is held is the comparisons in
    flight, not the run's children."""
    answers: dict[int, list[Finding]] = {}  # child number -> its findings, until those before it are out
    asked: dict[int, tuple[int, list, list]] = {}  # job number -> (child number, cache identity, key)
    out: list[Finding] = []
    hits = 0
    issued = 0  # jobs handed to the executor
    done = 0  # children whose findings are in ``out``

    def jobs() -> Iterator[tuple[ForkSide, ForkSide | None]]:
        nonlocal hits, issued
        for n, (child, same_id) in enumerate(forks):
            found, identity, key, sides = _one_child(child, same_id, cache)
            if found is not None:
                hits += 1
                answers[n] = found
                continue
            asked[issued] = (n, identity, key)
            issued += 1
            yield sides

    def flush() -> None:
        """Every child's findings whose turn has come (those before it are all out)."""
        nonlocal done
        while done in answers:
            out.extend(answers.pop(done))
            done += 1

    with root_index_scope():  # each root scanned once for all the fork checks
        for k, result in completed(executor or SerialExecutor(), fork_job, jobs()):
            n, identity, key = asked.pop(k)
            found_json: list[dict[str, Any]] | str = result  # a str: an executor's ``lost_result``
            if isinstance(found_json, str):  # its worker died on it every time: not cached
                if problems is None:
                    raise RuntimeError(found_json)
                problems.append(found_json)
                answers[n] = []
            else:
                answers[n] = [Finding(**f) for f in found_json]
                if cache is not None and key[0] is not None:
                    cache.put("fork", identity, key, found_json)
            flush()
    flush()  # children the cache answered after the last comparison
    return out, hits


def _side(m: SessionSummary) -> ForkSide:
    return ForkSide(m.source, m.id, m.events, m.era, m.parent_session, m.seed_length)


def _one_child(
    m: SessionSummary, same_id: Summarized, cache: ResultCache | None
) -> tuple[list[Finding] | None, list, list, tuple[ForkSide, ForkSide | None]]:
    """The cached findings of ``m`` (None on a miss), its cache identity and key, and the two sides to compare."""
    pid = m.parent_session or ""
    child_rev = revision(m.path)
    checked = checked_parent(m.source, pid, m.created_at, same_id)
    parent = same_id.summary(checked) if checked is not None else None
    if parent is not None:
        where: list = ["checked", parent.path, revision(parent.path), parent.events]
    else:  # the parent's log, if any, is one of these places: their revisions key the entry
        cands = parent_candidates(m.source, pid) if m.seed_length > 0 else []
        where = ["search", [[str(c), revision(c)] for c in cands if revision(c) is not None]]
    identity = [m.path, m.root]
    key = [child_rev, m.events, m.era, m.parent_session, m.seed_length, where]
    if cache is not None and child_rev is not None:
        hit = cache.get("fork", identity, key)
        if hit is not None:
            return [Finding(**f) for f in hit], identity, key, (_side(m), None)
    if parent is not None:  # resolve_parent, its first half already done for the cache key
        parent_side: ForkSide | None = _side(parent)
    else:
        stored = stored_parent(m.source, pid, m.created_at, m.seed_length)
        parent_side = ForkSide(stored, pid, None) if stored is not None else None
    return None, identity, key, (_side(m), parent_side)
