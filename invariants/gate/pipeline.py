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
from typing import Iterable, Iterator

from invariants.gate.baseline import checked_owners
from invariants.gate.config import Config
from invariants.gate.executor import Executor, executor_for
from invariants.gate.ledger import apply_ledger
from invariants.gate.policy import FindingPolicy, report_order
from invariants.gate.result import CheckOptions, CheckResult, RequestCheck, SessionSummary
from invariants.gate.result_cache import ResultCache
from invariants.gate.unit import (
    SourceProgress,
    Unit,
    UnitOutcome,
    check_unit,
    plan_units,
    replay_job,
    run_unit,
    unit_identity,
    unit_key,
)
from invariants.model.findings import Finding
from invariants.read.discover import discover
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
def cyclic_gc_paused() -> Iterator[None]:
    """The cyclic collector paused for a check, and what the check kept frozen
    afterwards instead of rescanned (see :mod:`invariants.gate.collector`)."""
    from invariants.gate.collector import collector_paused

    with collector_paused():
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
    with cyclic_gc_paused():
        notes: list[str] = []
        sources, problems = discover(named, notes)
        if not allow_empty:
            problems.extend(empty_inputs(named, sources))
        if cache is not None:
            cache.open_scope([_scope_path(p) for p in named] + [str(c) for c in options.captures or []])
        result = check_sources(
            sources,
            options,
            policy,
            problems=problems,
            executor=executor or executor_for(jobs),
            cache=cache,
            stats=stats,
            ledger=ledger,
            keep_models=keep_models,
            progress=progress,
        )
        if cache is not None:
            cache.flush()
    result.notes.extend(notes)
    return result


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
    stats = stats if stats is not None else RunStats()
    units = plan_units(sources, options.captures)
    stats.units = len(units)
    here = keep_models or models is not None or progress is not None
    told = None if progress is None else _judged(progress, policy or FindingPolicy())
    outcomes = _run_units(
        units, options, executor or executor_for(1), None if here else cache, stats, models, here, told
    )
    return _assemble(
        units, outcomes, list(problems), options, policy or FindingPolicy(), cache, stats, ledger, here, executor
    )


def _run_units(
    units: list[Unit],
    options: CheckOptions,
    executor: Executor,
    cache: ResultCache | None,
    stats: RunStats,
    models: list[SessionModel | str] | None,
    here: bool,
    progress: SourceProgress | None = None,
) -> list[UnitOutcome]:
    """The per-unit half for every unit: from the cache, by the executor, or ``here`` (models kept)."""
    outcomes: list[UnitOutcome | None] = [None] * len(units)
    keys: list[tuple[list, list] | None] = [None] * len(units)
    todo: list[int] = []
    for n, unit in enumerate(units):
        if cache is not None:
            key = unit_key(unit, options)
            if key is not None:
                identity = unit_identity(unit)
                keys[n] = (identity, key)
                hit = cache.get("unit", identity, key)
                if hit is not None:
                    outcomes[n] = UnitOutcome(hit)
                    stats.cache_hits += 1
                    continue
            stats.cache_misses += 1
        todo.append(n)
    if here:
        for n in todo:
            given = [models[i] for i in units[n].indexes] if models is not None else None
            outcomes[n] = check_unit(units[n], options, given, progress)
    elif executor.jobs > 1 and options.captures is not None and todo:
        (n,) = todo  # explicit captures route globally: one unit, its replays spread over the workers
        sources = units[n].sources
        replayed = executor.map(replay_job, [(s, options) for s in sources], [_size(s.path) for s in sources])
        outcomes[n] = check_unit(units[n], options, replayed)
    else:
        jobs = [(units[n], options) for n in todo]
        costs = [sum(_size(s.path) for s in units[n].sources) for n in todo]
        for n, data in zip(todo, executor.map(run_unit, jobs, costs)):
            outcomes[n] = UnitOutcome(data)
    if cache is not None:
        for n in todo:
            pair, done = keys[n], outcomes[n]
            if pair is not None and done is not None:
                identity, key = pair
                cache.put("unit", identity, key, done.data)
    return [o for o in outcomes if o is not None]


def _judged(progress: SourceProgress, policy: FindingPolicy) -> SourceProgress:
    """``progress`` told the findings as the policy reports them (selected, severities overridden)."""

    def told(source: LogSource, findings: list[Finding], read: int) -> None:
        progress(source, [g for f in findings if (g := policy.judge(f)) is not None], read)

    return told


def _size(path: LogPath) -> int:
    """What a log costs to check, roughly: its size (a database counts once per session)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _assemble(
    units: list[Unit],
    outcomes: list[UnitOutcome],
    problems: list[str],
    options: CheckOptions,
    policy: FindingPolicy,
    cache: ResultCache | None,
    stats: RunStats,
    ledger: PathLike | None,
    keep: bool,
    executor: Executor | None,
) -> CheckResult:
    """The cross-session half: sessions in discovery order, fork seeds, the ledger, the policy, the order.

    Findings are gathered as a serial run would make them (each session's,
    then every capture's read findings, then the request findings, then the
    fork findings), so every way of running gives the same report.
    """
    sessions: list[tuple[int, SessionSummary]] = []
    models: list[tuple[int, SessionModel]] = []
    source_problems: list[tuple[int, int, str]] = []
    captures: list[tuple[int, dict, list[RequestCheck] | None]] = []
    for unit, outcome in zip(units, outcomes):
        res = outcome.data
        for idx, s in res["sessions"]:
            sessions.append((unit.indexes[idx], SessionSummary.from_json(s)))
        if keep:
            models.extend((unit.indexes[idx], m) for (idx, _), m in zip(res["sessions"], outcome.models))
        for idx, msg in res["problems"]:
            order = unit.indexes[idx] if idx < len(unit.indexes) else 1 << 60
            source_problems.append((order, idx, msg))
        for k, cap in enumerate(res["captures"]):
            first = cap["first"]
            live = outcome.requests[k] if keep else None
            captures.append((unit.indexes[first] if first < len(unit.indexes) else 0, cap, live))
    sessions.sort(key=lambda t: t[0])
    models.sort(key=lambda t: t[0])
    source_problems.sort(key=lambda t: (t[0], t[1]))
    captures.sort(key=lambda t: t[0])  # stable: a unit's captures keep their order
    summaries = [s for _, s in sessions]

    found: list[Finding] = [f for m in summaries for f in m.findings]
    found.extend(Finding(**f) for _, cap, _ in captures for f in cap["read"])
    requests: list[RequestCheck] = []
    for _, cap, live in captures:
        found.extend(Finding(**f) for f in cap["check"])
        requests.extend(live if live is not None else (RequestCheck.from_json(r) for r in cap["requests"]))
    if any(m.has_header and m.parent_session for m in summaries):
        from invariants.gate.fork_checks import fork_findings  # deferred: only a run with a forked session needs it

        forks, hits = fork_findings(summaries, cache, None if keep else executor)
        stats.fork_hits += hits
        found.extend(forks)
    notes: list[str] = []
    if ledger is not None:
        found.extend(apply_ledger(ledger, summaries, notes=notes))
    found.sort(key=report_order(m.file for m in summaries))
    kept = policy.filter(found)
    checked = checked_owners(summaries, kept, options.captures) if policy.baseline_entries is not None else ()
    findings, baseline_outcome = policy.absorb(kept, checked)
    return CheckResult(
        summaries,
        findings,
        requests,
        problems + [msg for _, _, msg in source_problems],
        [m for _, m in models],
        baseline_outcome,
        notes,
    )
