"""The one check: paths (or sources) + options + configuration -> :class:`CheckResult`.

read -> replay (the rules run during the one pass) -> captures routed and
compared: the per-unit half (:mod:`invariants.gate.unit`), run here or by an
executor's workers, or served by the result cache.  Then the cross-session
half, here: fork seeds, the ledger, the configuration (select, ignore,
severity, per-path ignores, baseline) and the report order.

``inspector check`` (serial, ``--jobs N``, cached), the TUI (follow mode
hands in resumed models and a caching capture reader), ``replay`` and
``cache-report`` (the replay step) and the index (the router, the fork
resolution and the policy, per folder) all go through these functions, so
they agree on every finding.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterable, Iterator

from invariants.gate.assemble import Assembler
from invariants.gate.capture_groups import GroupsOf, cached_groups, route_groups
from invariants.gate.collector import collect_young
from invariants.gate.config import Config
from invariants.gate.executor import AutoExecutor, Executor, SerialExecutor, completed, owned
from invariants.gate.policy import FindingPolicy
from invariants.gate.result import CheckOptions, CheckResult, SessionSummary
from invariants.gate.result_cache import ResultCache
from invariants.gate.unit import (
    SourceProgress,
    Unit,
    UnitOutcome,
    check_unit,
    iter_units,
    plan_units,
    replay_job,
    run_unit,
    unit_identity,
    unit_key,
)
from invariants.gate.view import ReportView
from invariants.model.findings import Finding
from invariants.read.discover import discover, disjoint, iter_discover
from invariants.read.source import LogPath, LogSource, UrlPath, absolute_name, is_url
from invariants.replay.model import SessionModel

PathLike = str | os.PathLike


@dataclass
class RunStats:
    """How a run went: units, result-cache hits and misses, fork checks served by the cache."""

    units: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    fork_hits: int = 0


@contextmanager
def cyclic_gc_paused(collect_last: bool = True) -> Iterator[None]:
    """The cyclic collector paused for a check, and what the check kept frozen
    afterwards instead of rescanned (see :mod:`invariants.gate.collector`)."""
    from invariants.gate.collector import collector_paused

    with collector_paused(collect_last):
        yield


def check(
    paths: PathLike | Iterable[PathLike],
    options: CheckOptions | None = None,
    *,
    config: Config | None = None,
    jobs: int = 1,
    executor: Executor | None = None,
    cache: ResultCache | None = None,
    stats: RunStats | None = None,
    ledger: PathLike | None = None,
    keep_models: bool = False,
    allow_empty: bool = False,
    progress: SourceProgress | None = None,
) -> CheckResult:
    """Check the session logs under ``paths`` (files, folders, sessions roots, session databases).

    ``options`` say how to read (explicit capture files, a forced profile);
    ``config`` what to report (:func:`~invariants.gate.config.load_config`
    reads ``inspector.toml`` / ``[tool.inspector]``; None reports every
    finding at its default severity).  ``jobs`` worker processes (0: one per
    CPU) or an ``executor`` run the per-folder half; ``cache`` serves unchanged
    folders; ``ledger`` names a log ledger to verify and update (RSM001).
    ``keep_models`` keeps the replayed sessions in ``result.models`` (the run
    then stays in this process and bypasses the cache).  A named folder with
    no session log is a problem unless ``allow_empty``.  ``progress(source,
    findings, bytes_read)`` is called while each log is replayed, each time
    another few MB are folded, with the findings so far as the configuration
    reports them (the baseline is applied at the end); it keeps the run in this
    process, like ``keep_models``.

    Raises :class:`~invariants.gate.baseline.BaselineError` for an unreadable
    baseline and :class:`~invariants.gate.ledger.LedgerError` for a bad ledger.
    """
    named = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    options = options or CheckOptions()
    policy = FindingPolicy.of(config)
    with cyclic_gc_paused(), owned(executor, jobs) as executor:
        notes: list[str] = []
        said = len(getattr(executor, "notes", ()))  # an executor's notes of earlier runs were said then
        sources, problems = _discovered(named, options, cache, allow_empty, notes)
        result = check_sources(
            sources,
            options,
            policy,
            problems=problems,
            executor=executor,
            cache=cache,
            stats=stats,
            ledger=ledger,
            keep_models=keep_models,
            progress=progress,
        )
        notes.extend(getattr(executor, "notes", [])[said:])
        if cache is not None:
            cache.flush()
    result.notes.extend(notes)
    return result


def check_report(
    paths: PathLike | Iterable[PathLike],
    options: CheckOptions | None = None,
    *,
    config: Config | None = None,
    jobs: int | None = 1,
    executor: Executor | None = None,
    cache: ResultCache | None = None,
    stats: RunStats | None = None,
    ledger: PathLike | None = None,
    allow_empty: bool = False,
    observer: RunObserver | None = None,
    process_ends: bool = False,
) -> ReportView:
    """:func:`check`, streamed: each unit's sessions are written to a temporary spool as the unit
    completes (in report order), and what is returned is the :class:`ReportView` the report writers
    read, backed by that spool (close it when written).  Memory is what the reorder window and one
    unit hold, not the run.  ``observer`` hears of the plan and of each session as it leaves the
    window (progress).  ``process_ends``: the caller exits once the report is written (the
    ``inspector check`` command), so the last unit's cyclic garbage is left to the exit."""
    named = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    options = options or CheckOptions()
    policy = FindingPolicy.of(config)
    with cyclic_gc_paused(collect_last=not process_ends), owned(executor, jobs) as executor:
        notes: list[str] = []
        said = len(getattr(executor, "notes", ()))  # an executor's notes of earlier runs were said then
        walked = len(named) == 1 or _disjoint_folders(named)
        found = [False] * len(named)
        if walked:  # walked as they are checked, never listed: one root, or folders none of which holds another
            problems: list[str] = []
            if cache is not None:
                cache.open_scope([_scope_path(p) for p in named] + [str(c) for c in options.captures or []])
            stream: Iterable[LogSource] = _each_root(named, problems, notes, found)
        else:  # paths may overlap or interleave folders: listed and grouped first
            stream, problems = _discovered(named, options, cache, allow_empty, notes)
        assembler = stream_sources(
            _observed(stream, observer),
            options,
            policy,
            executor=executor,
            cache=cache,
            stats=stats,
            ledger=ledger,
            spooled=True,
            on_session=None if observer is None else observer.session,
            contiguous=walked,
        )
        if walked and not allow_empty:
            problems.extend(empty_inputs([p for p, any_found in zip(named, found) if not any_found], []))
        view = assembler.finish(problems)
        view.notes.extend(notes)
        view.notes.extend(getattr(executor, "notes", [])[said:])
        if cache is not None:
            cache.flush()
    return view


def _disjoint_folders(named: list[PathLike]) -> bool:
    """Whether every named path is a local folder and none is, or holds, another: their walks then find
    each log once, a folder at a time, as one root's walk does (named files may share a folder)."""
    return all(not is_url(p) and os.path.isdir(p) for p in named) and disjoint(named)


def _each_root(named: list[PathLike], problems: list[str], notes: list[str], found: list[bool]) -> Iterator[LogSource]:
    """The logs under each named path in turn, as they are walked; ``found[i]``: path ``i`` had one."""
    for i, p in enumerate(named):
        for source in iter_discover([p], problems, notes):
            found[i] = True
            yield source


def _observed(sources: Iterable[LogSource], observer: RunObserver | None) -> Iterator[LogSource]:
    """Sources passed through, each told to the observer as it is discovered."""
    for s in sources:
        if observer is not None:
            observer.found(s)
        yield s


class RunObserver:
    """What a streamed check tells as it goes (the CLI's progress): each log discovered, each session done."""

    def found(self, source: LogSource) -> None:
        pass

    def session(self, summary: SessionSummary) -> None:
        pass


def _discovered(
    named: list[PathLike], options: CheckOptions, cache: ResultCache | None, allow_empty: bool, notes: list[str]
) -> tuple[list[LogSource], list[str]]:
    sources, problems = discover(named, notes)
    if not allow_empty:
        problems.extend(empty_inputs(named, sources))
    if cache is not None:
        cache.open_scope([_scope_path(p) for p in named] + [str(c) for c in options.captures or []])
    return sources, problems


def empty_inputs(paths: list[PathLike], sources: list[LogSource]) -> list[str]:
    """A sentence for each named folder under which discovery found no session log."""
    found = [absolute_name(s.path) for s in sources]
    out = []
    for p in paths:
        if is_url(p):
            url = UrlPath.of(str(p))
            try:
                if not url.is_dir():
                    continue
            except OSError:
                continue  # already a problem of discovery
            prefix = url.url.rstrip("/") + "/"
        elif not os.path.isdir(p):
            continue  # a file is a log or already a problem
        else:
            prefix = os.path.join(os.path.abspath(p), "")
        if not any(f.startswith(prefix) for f in found):
            out.append(f"no session logs under {p}")
    return out


def _scope_path(p: PathLike) -> str:
    if is_url(p):
        return str(p)
    try:
        return os.path.realpath(p)  # never raises on a symlink loop, unlike Path.resolve on 3.11
    except OSError:
        return str(p)


def check_sources(
    sources: list[LogSource],
    options: CheckOptions,
    policy: FindingPolicy | None = None,
    *,
    problems: Iterable[str] = (),
    executor: Executor | None = None,
    cache: ResultCache | None = None,
    stats: RunStats | None = None,
    models: list[SessionModel | str] | None = None,
    ledger: PathLike | None = None,
    keep_models: bool = False,
    progress: SourceProgress | None = None,
) -> CheckResult:
    """:func:`check` from discovered ``sources`` on.

    ``models`` (one per source: a model, or the sentence why it could not be
    read) replace the replays: what a caller that follows a growing log
    supplies.  They keep the run in this process.
    """
    assembler = stream_sources(
        sources,
        options,
        policy,
        executor=executor,
        cache=cache,
        stats=stats,
        models=models,
        ledger=ledger,
        keep_models=keep_models,
        progress=progress,
        spooled=False,
    )
    return assembler.result(assembler.finish(list(problems)))


def stream_sources(
    sources: Iterable[LogSource],
    options: CheckOptions,
    policy: FindingPolicy | None = None,
    *,
    executor: Executor | None = None,
    cache: ResultCache | None = None,
    stats: RunStats | None = None,
    models: list[SessionModel | str] | None = None,
    ledger: PathLike | None = None,
    keep_models: bool = False,
    progress: SourceProgress | None = None,
    spooled: bool = True,
    on_session: Callable[[SessionSummary], None] | None = None,
    contiguous: bool = False,
) -> Assembler:
    """Every unit checked and handed, as it completes, to an :class:`Assembler` (returned, not finished).

    ``contiguous``: ``sources`` is a stream whose folders are contiguous (one named root), planned
    into units as it is read; otherwise the sources are listed and grouped by folder first."""
    stats = stats if stats is not None else RunStats()
    here = keep_models or models is not None or progress is not None
    groups: GroupsOf = route_groups if cache is None or here else partial(cached_groups, cache)
    if contiguous and options.captures is None:
        units: Iterable[Unit] = iter_units(sources, groups)
    else:
        units = plan_units(list(sources), options.captures, groups)
    told = None if progress is None else _judged(progress, policy or FindingPolicy())
    executor = executor or SerialExecutor()
    assembler = Assembler(
        options,
        policy or FindingPolicy(),
        cache=None if here else cache,
        stats=stats,
        ledger=ledger,
        keep=here,
        executor=executor,
        spooled=spooled and not here,
        on_session=on_session,
    )
    _run_units(assembler.add, units, options, executor, None if here else cache, stats, models, here, told)
    return assembler


def _run_units(
    deliver: Callable[[int, Unit, UnitOutcome], None],
    units: Iterable[Unit],
    options: CheckOptions,
    executor: Executor,
    cache: ResultCache | None,
    stats: RunStats,
    models: list[SessionModel | str] | None,
    here: bool,
    progress: SourceProgress | None = None,
) -> None:
    """The per-unit half for every unit, each ``deliver``-ed as ``(unit number, unit, outcome)`` as it
    completes: from the cache (at once, as the plan reaches it: a warm run holds no answers), by the
    executor (results streamed back in the order they finish; units are planned as the executor asks
    for more, so only those in flight are held), or ``here`` (models kept)."""
    keys: dict[int, tuple[list, list]] = {}
    flying: dict[int, tuple[int, Unit]] = {}  # job number -> (unit number, unit)

    def todo() -> Iterator[tuple[int, Unit]]:
        """The units the cache does not answer (its answers are delivered as they are found)."""
        for n, unit in enumerate(units):
            stats.units += 1
            if cache is not None:
                key = unit_key(unit, options)
                if key is not None:
                    identity = unit_identity(unit)
                    hit = cache.get("unit", identity, key)
                    if hit is not None:
                        stats.cache_hits += 1
                        deliver(n, unit, UnitOutcome(hit))
                        continue
                    keys[n] = (identity, key)
                stats.cache_misses += 1
            yield n, unit

    def stored(n: int, outcome: UnitOutcome) -> UnitOutcome:
        pair = keys.pop(n, None)
        if cache is not None and pair is not None:
            cache.put("unit", pair[0], pair[1], outcome.data)
        return outcome

    if here:
        for k, (n, unit) in enumerate(todo()):
            if k:
                collect_young()  # what the previous unit left cyclic (the last unit's: when the run ends)
            given = [models[i] for i in unit.indexes] if models is not None else None
            deliver(n, unit, stored(n, check_unit(unit, options, given, progress)))
        return
    if options.captures is not None and executor.jobs > 1:
        for n, unit in todo():  # explicit captures route globally: one unit, its replays spread over the workers
            sources = unit.sources
            replayed = executor.map(replay_job, [(s, options) for s in sources], [_size(s.path) for s in sources])
            deliver(n, unit, stored(n, check_unit(unit, options, replayed)))
        return

    if isinstance(executor, AutoExecutor) and executor.cost is None:
        executor.cost = _job_cost

    def jobs() -> Iterator[tuple[Unit, CheckOptions]]:
        for k, (n, unit) in enumerate(todo()):
            if k and getattr(executor, "here", True):
                collect_young()  # what a unit replayed here (serial) left cyclic
            flying[k] = (n, unit)
            yield unit, options

    for k, data in completed(executor, run_unit, jobs()):
        n, unit = flying.pop(k)
        deliver(n, unit, stored(n, UnitOutcome(data)))


def _judged(progress: SourceProgress, policy: FindingPolicy) -> SourceProgress:
    """``progress`` told the findings as the policy reports them (selected, severities overridden)."""

    def told(source: LogSource, findings: list[Finding], read: int) -> None:
        progress(source, [g for f in findings if (g := policy.judge(f)) is not None], read)

    return told


def _job_cost(job: object) -> int:
    unit = job[0]  # type: ignore[index]
    return sum(_size(s.path) for s in unit.sources)


def _size(path: LogPath) -> int:
    """What a log costs to check, roughly: its size (a database counts once per session)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
