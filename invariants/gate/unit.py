"""The per-unit half of a check: replay a unit's logs, read its captures, compare.

A unit is a *folder*: its logs and the capture files beside them (a capture
routes its lines to the sessions of its own folder, so a folder is
self-contained), cut where nothing routes across the cut: a folder where no
log has a capture beside it into one unit a log, one where some have into
the groups their captures route between (:mod:`invariants.gate.capture_groups`).
So a seed-era project folder of many thousand logs is never held whole, and
its logs spread over the workers.  With ``--captures`` given, routing is
global and the whole run is one unit.  :func:`check_unit` gives the unit's JSON-able result, what a worker
sends back and what the result cache stores::

    {"sessions": [[index in unit, SessionSummary JSON], ...],
     "problems": [[index in unit, sentence], ...],
     "captures": [{"path", "first", "read": [finding], "check": [finding], "requests": [RequestCheck JSON]}]}

Nothing here is configured: selection, severities and baselines apply to
the assembled run (:mod:`invariants.gate.pipeline`), so changing them never
needs a re-read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from invariants.gate.capture_groups import FolderLogs, GroupsOf, listed, route_groups
from invariants.gate.requests import RequestRouter
from invariants.gate.result import CheckOptions, RequestCheck, SessionSummary
from invariants.gate.result_cache import revision
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.read.capture import (
    FolderNames,
    Prover,
    Recorded,
    capture_of,
    capture_problem,
    find_capture,
    iter_capture,
)
from invariants.read.source import LogPath, LogSource, absolute_name, log_path
from invariants.replay.fold import Progress
from invariants.replay.model import SessionModel
from invariants.replay.session import replay

if TYPE_CHECKING:
    from invariants.analysis.forks import ForkSide

SourceProgress = Callable[[LogSource, list[Finding], int], None]
"""A replay's progress (:data:`~invariants.replay.fold.Progress`), told whose log it is."""


@dataclass(slots=True)
class Unit:
    """A folder, a group of its logs that its captures route between, or one log; with explicit captures, the run."""

    sources: list[LogSource]
    indexes: list[int]  # global discovery index of each source
    captures: list[str] | None = None  # explicit capture files; None = beside each log
    alone: bool = False  # one log no capture routes to (when planned): no capture lookup
    # A group of a folder's logs that its captures may route between (:mod:`~invariants.gate.capture_groups`),
    # not the whole folder: the names its captures hint at that are no log of the folder (its cache key).
    hints: list[str] | None = None


@dataclass(slots=True)
class UnitOutcome:
    """A unit's JSON-able result, and what only an in-process run can keep: the models and live verdicts."""

    data: dict[str, Any]
    models: list[SessionModel] = field(default_factory=list)
    requests: list[list[RequestCheck]] = field(default_factory=list)  # per entry of data["captures"]


def plan_units(sources: list[LogSource], captures: list[LogPath] | None, groups: GroupsOf = route_groups) -> list[Unit]:
    """The run's units; ``groups`` cuts a folder whose logs have captures (:func:`_split`)."""
    if captures is not None:
        return [Unit(list(sources), list(range(len(sources))), [str(c) for c in captures])]
    by_folder: dict[LogPath, Unit] = {}
    for i, s in enumerate(sources):
        u = by_folder.setdefault(s.path.parent, Unit([], []))
        u.sources.append(s)
        u.indexes.append(i)
    return [part for u in by_folder.values() for part in _split(u.sources, u.indexes, groups)]


def iter_units(sources: Iterable[LogSource], groups: GroupsOf = route_groups) -> Iterator[Unit]:
    """:func:`plan_units` of a stream whose folders are contiguous (one named root, walked folder by
    folder): each unit as soon as the walk leaves its folder, so a run never lists every log, and a
    folder is held by its logs' names (:class:`~invariants.gate.capture_groups.FolderLogs`)."""
    logs: FolderLogs | None = None
    first = 0
    for i, s in enumerate(sources):
        parent = s.path.parent
        if logs is None or parent != logs.folder:
            if logs is not None:
                yield from _split(logs, range(first, i), groups)
            logs, first = FolderLogs(parent, s.root), i
        logs.add(s)
    if logs is not None:
        yield from _split(logs, range(first, first + len(logs)), groups)


def _split(
    sources: FolderLogs | list[LogSource], indexes: Sequence[int], groups_of: GroupsOf = route_groups
) -> Iterator[Unit]:
    """A folder's logs (``indexes``: their places in the run) cut into the groups of logs its
    captures may route between, each other log alone (a folder without captures: every log alone),
    in the order of each unit's first log; the whole folder when in doubt.  Made as they are asked
    for: a folder's units are not all held.

    Only a capture needs models together; without one, each log is checked as it would be in the
    folder, so the report is the same.  What the walk that found the logs saw beside each
    (``LogSource.beside``) decides; a folder it did not list is listed here, unless it has one log
    (nothing to split: its unit looks up its capture when checked)."""
    one = len(sources) == 1
    logs = None if one and sources[0].beside is None else listed(sources)
    if logs is None or (one and logs.entry(0)[1]):
        yield Unit(list(sources), list(indexes))  # in doubt, or one log (with its capture: nothing to cut or read)
        return
    if not logs.any_beside:
        yield from (Unit([s], [indexes[i]], alone=True) for i, s in enumerate(logs))
        return
    groups = groups_of(logs)
    if groups is None:
        yield Unit(list(sources), list(indexes))
        return
    for i, (s, g) in enumerate(zip(logs, groups.first)):
        if g < 0:
            yield Unit([s], [indexes[i]], alone=True)
        elif g == i:
            members = groups.members(i)
            logs_of = [s] + [logs[k] for k in members[1:]]  # (the first is this one)
            yield Unit(logs_of, [indexes[k] for k in members], hints=groups.hints(i))


def replay_source(
    src: LogSource, options: CheckOptions, checkpoint: bool = False, progress: Progress | None = None
) -> SessionModel | str:
    """One log replayed, or the sentence saying why it cannot be read (``progress``: see :func:`replay`)."""
    try:
        model = replay(src, options.profile, max_line=options.max_line, checkpoint=checkpoint, progress=progress)
    except OSError as exc:
        return f"{src.display}: cannot read ({exc.strerror or exc})"
    if options.tokens is not None:  # per session, in the worker: filtering, order and the cache treat them alike
        from invariants.analysis.token_rules import token_findings

        model.findings.extend(token_findings(model, options.tokens))
    return model


def replay_sources(sources: list[LogSource], options: CheckOptions) -> tuple[list[SessionModel], list[str]]:
    """Every log replayed (``inspector replay`` and ``cache-report`` need no more), and the unreadable ones."""
    models: list[SessionModel] = []
    problems: list[str] = []
    for src in sources:
        m = replay_source(src, options)
        if isinstance(m, str):
            problems.append(m)
        else:
            models.append(m)
    return models, problems


def unit_identity(unit: Unit) -> list:
    return [
        _kind(unit),
        [absolute_name(s.path) for s in unit.sources],
        [str(s.root) for s in unit.sources],
        [str(s.path) for s in unit.sources],
        [s.member for s in unit.sources],
    ]


def _kind(unit: Unit) -> str:
    if unit.captures is not None:
        return "explicit"
    if unit.alone:
        return "alone"
    return "beside" if unit.hints is None else "group"


def unit_key(unit: Unit, options: CheckOptions) -> list | None:
    """Everything the unit's result depends on, or None when a file cannot be stat'ed (never cached)."""
    revs: list[Any] = []
    for s in unit.sources:
        r = revision(s.path)
        if r is None:
            return None
        revs.append(r)
        if s.member is not None:
            revs.append(revision(f"{s.path}-wal"))  # SQLite in WAL mode: recent commits live beside the file
    listing: list = []
    if unit.captures is not None:
        caps = [[c, revision(c)] for c in unit.captures]
    elif unit.alone:  # its folder held no capture: a capture added since changes the plan, hence the unit
        caps = []
    else:
        seen: list[str] = []
        names = FolderNames()
        for s in unit.sources:
            cp = capture_of(s, names) if unit.hints is not None else find_capture(s.path, names(s.path.parent))
            if cp is not None and str(cp) not in seen:
                seen.append(str(cp))
        caps = [[c, revision(c)] for c in seen]
        if unit.hints is not None:  # a group of its folder: what was beside each log, what its captures hint at
            folder = unit.sources[0].path.parent
            listing = [[list(s.beside or ()) for s in unit.sources], [[n, (folder / n).is_file()] for n in unit.hints]]
        else:
            parents = {str(s.path.parent): s.path.parent for s in unit.sources}
            for folder_name in sorted(parents):
                present = names(parents[folder_name])  # the listing the capture lookup took: one per folder
                listing.append([folder_name, sorted(present) if present is not None else None])
    tokens = options.tokens
    token_key = (
        None if tokens is None else [tokens.context_window, sorted(tokens.windows.items()), tokens.threshold_ratio]
    )
    return [revs, caps, listing, options.profile, options.max_line, token_key]


def check_unit(
    unit: Unit,
    options: CheckOptions,
    models: list[SessionModel | str] | None = None,
    progress: SourceProgress | None = None,
) -> UnitOutcome:
    """Replay the unit's logs (or take ``models``, one per source, a string for one that could not
    be read), read its captures with :func:`iter_capture` (each line compared as it is read, so a
    capture is never held whole, and a request the log explains is compared as bytes, never
    parsed), route and compare.  ``progress(source, findings, bytes_read)`` hears from
    each replay as it goes (:func:`~invariants.replay.session.replay`)."""
    problems: list[list] = []
    kept: list[SessionModel] = []
    kept_index: list[int] = []
    for i, src in enumerate(unit.sources):
        told = None if progress is None else partial(progress, src)
        model = models[i] if models is not None else replay_source(src, options, progress=told)
        if isinstance(model, str):
            problems.append([i, model])
            continue
        kept.append(model)
        kept_index.append(i)
    # (capture, its files, the session it is shown with): the files are read as their lines are compared
    plan: list[tuple[LogPath | None, list[LogPath], int]] = []
    if unit.captures is not None:
        files: list[LogPath] = []
        for name in unit.captures:
            p = log_path(name)
            problem = capture_problem(p)
            if problem is not None:
                problems.append([len(unit.sources), problem])
                continue
            files.append(p)
        plan.append((None, files, 0))
    elif not unit.alone:
        seen: set[LogPath] = set()
        names = FolderNames()
        for k, m in enumerate(kept):
            found = capture_of(m.source, names)
            if found is not None and found not in seen:
                seen.add(found)
                plan.append((found, [found], kept_index[k]))
    router = RequestRouter(kept, explicit=unit.captures is not None)
    captures: list[dict[str, Any]] = []
    live: list[list[RequestCheck]] = []
    for cp, files, first in plan:
        reads = [_streamed(f, options, router.prover(cp)) for f in files]
        checks, emitted = router.check_all(cp, chain.from_iterable(records for records, _ in reads))
        read_findings = [f for _, found in reads for f in found]
        live.append(checks)
        captures.append(
            {
                "path": str(cp) if cp is not None else None,
                "first": first,
                "read": [f.to_json() for f in read_findings],
                "check": [f.to_json() for f in emitted],
                "requests": [r.to_json() for r in checks],
            }
        )
    data = {
        "sessions": [[kept_index[k], SessionSummary.from_model(m).to_json()] for k, m in enumerate(kept)],
        "problems": problems,
        "captures": captures,
    }
    return UnitOutcome(data, kept, live)


def _streamed(path: LogPath, options: CheckOptions, prove: Prover) -> tuple[Iterable[Recorded], list[Finding]]:
    """A capture's records as they are read, and the list its findings go to as lines are reached."""
    found: list[Finding] = []
    return iter_capture(path, found, options.max_line, prove), found


def run_unit(job: tuple[Unit, CheckOptions]) -> dict[str, Any]:
    """A worker's task: one unit's JSON-able result."""
    unit, options = job
    return check_unit(unit, options).data


def replay_job(job: tuple[LogSource, CheckOptions]) -> SessionModel | str:
    """A worker's task when one unit is spread over workers (explicit captures): one replay."""
    src, options = job
    return replay_source(src, options)


def fork_job(sides: tuple[ForkSide, ForkSide | None]) -> list[dict[str, Any]]:
    """A worker's task: the seed checks of one child against its chosen parent, as finding JSON."""
    from invariants.analysis.forks import check_fork_sides  # only a run with forks needs it

    out: list[Finding] = []

    def emit(code: str, message: str, **w: Any) -> None:
        out.append(make_finding(code, message, **w))

    check_fork_sides(*sides, emit)
    return [f.to_json() for f in out]


def lost_result(fn: Callable[[Any], Any], job: Any, reason: str) -> Any:
    """What a task gives when it could not finish anywhere (its worker died on it every time): for a
    unit, every log of it as a problem; for a replay or a fork's seed comparison, its problem sentence."""
    if fn is run_unit:
        unit, _ = job
        return {
            "sessions": [],
            "problems": [[i, f"{s.display}: not checked ({reason})"] for i, s in enumerate(unit.sources)],
            "captures": [],
        }
    if fn is replay_job:
        src, _ = job
        return f"{src.display}: not checked ({reason})"
    if fn is fork_job:
        child, _ = job
        return f"{child.source.display}: fork seed not checked ({reason})"
    raise TypeError(f"no lost result for {fn!r}")
