"""``run_check`` in parallel processes and through the result cache.

The unit of work is a *folder*: its logs and the capture files beside them
(a capture routes its lines to the sessions of its own folder, so a folder
is self-contained).  With ``--captures`` given, routing is global and the
whole run is one unit whose replays are spread over the workers.  Each unit
yields a compact, JSON-able result (session summaries, findings, request
verdicts): that is what workers send back and what the cache stores.  The
cross-session steps (fork seeds) run in the parent afterwards, cached per
child.  The parent then puts findings in exactly the order ``run_check``
would (session findings, capture-read findings, request findings, fork
findings; then filter and sort), so the output of ``--jobs N`` and of a
cache hit is byte-identical to a serial run.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invariants.gate.pipeline import CheckOptions, CheckResult, check_sessions, ordered_findings
from invariants.gate.result_cache import ResultCache, revision
from invariants.model.findings import Finding
from invariants.read.discover import discover
from invariants.read.source import LogSource


@dataclass
class SessionSummary:
    """What reports and cross-session checks need of a replayed session."""

    session: str
    file: str
    era: str
    profile: str
    events: int
    turns: int
    steps: int
    instances: int
    requests: int
    path: str
    root: str
    parent_session: str | None = None
    seed_length: int = 0
    has_header: bool = True
    torn: bool = False
    bytes: int = 0
    resumes: list[int] = field(default_factory=list)  # seqs of resume anchors
    member: str | None = None  # a session inside a SQLite database
    created_at: Any = None  # the header's createdAt: a fork's parent is created before it
    findings: list[Finding] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session

    @property
    def header(self) -> Any:
        """The bits of the session header the fork checks read (None without a header)."""
        if not self.has_header:
            return None
        from types import SimpleNamespace

        return SimpleNamespace(
            id=self.session,
            parent_session=self.parent_session,
            seed_length=self.seed_length,
            created_at=self.created_at,
        )

    @property
    def source(self) -> LogSource:
        if self.member is None:
            return LogSource(Path(self.path), Path(self.root))
        return LogSource(Path(self.path), Path(self.root), self.member)  # type: ignore[call-arg]

    def row(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "file": self.file,
            "era": self.era,
            "profile": self.profile,
            "events": self.events,
            "turns": self.turns,
            "steps": self.steps,
            "instances": self.instances,
            "requests": self.requests,
        }

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "findings"}
        d["findings"] = [f.to_json() for f in self.findings]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "SessionSummary":
        d = dict(d)
        findings = [finding_from_json(f) for f in d.pop("findings")]
        return cls(**d, findings=findings)

    @classmethod
    def from_model(cls, m) -> "SessionSummary":
        hdr = m.header
        return cls(
            session=m.id,
            file=m.file,
            era=m.profile.era,
            profile=m.profile.name,
            events=m.events,
            turns=m.turns,
            steps=len(m.steps),
            instances=len(m.instances),
            requests=len(m.requests),
            path=str(m.source.path),
            root=str(m.source.root),
            parent_session=hdr.parent_session if hdr else None,
            seed_length=(hdr.seed_length or 0) if hdr else 0,
            has_header=hdr is not None,
            torn=bool(m.torn),
            bytes=m.bytes,
            resumes=[i.seq for i in m.instances if i.reason == "resume"],
            member=getattr(m.source, "member", None),
            created_at=hdr.created_at if hdr else None,
            findings=list(m.findings),
        )


@dataclass(slots=True)
class RequestStatus:
    """A recorded request's verdict (what ``CheckResult.requests`` holds for summaries)."""

    status: str
    session: str | None = None
    step: int | None = None
    codes: list[str] = field(default_factory=list)


def finding_from_json(d: dict[str, Any]) -> Finding:
    return Finding(**d)


# --------------------------------------------------------------------------- one unit


@dataclass
class Unit:
    """A folder (or, with explicit captures, the whole run)."""

    sources: list[LogSource]
    indexes: list[int]  # global discovery index of each source
    captures: list[str] | None = None  # explicit capture files; None = beside each log


def _unit_identity(unit: Unit, options: CheckOptions) -> list:
    return [
        "explicit" if unit.captures is not None else "beside",
        [os.path.abspath(s.path) for s in unit.sources],
        [str(s.root) for s in unit.sources],
        [str(s.path) for s in unit.sources],
        [getattr(s, "member", None) for s in unit.sources],
    ]


def _unit_key(unit: Unit, options: CheckOptions) -> list | None:
    from invariants.read.capture import find_capture

    revs = []
    for s in unit.sources:
        r = revision(s.path)
        if r is None:
            return None
        revs.append(r)
        if getattr(s, "member", None) is not None:
            revs.append(revision(f"{s.path}-wal"))  # SQLite in WAL mode: recent commits live beside the file
    if unit.captures is not None:
        caps = [[c, revision(c)] for c in unit.captures]
        listing: list = []
    else:
        seen: list[str] = []
        for s in unit.sources:
            cp = find_capture(s.path)
            if cp is not None and str(cp) not in seen:
                seen.append(str(cp))
        caps = [[c, revision(c)] for c in seen]
        folders = sorted({str(s.path.parent) for s in unit.sources})
        listing = []
        for folder in folders:
            try:
                listing.append([folder, sorted(os.listdir(folder))])
            except OSError:
                listing.append([folder, None])
    return [revs, caps, listing, options.profile, options.max_line]


def run_unit(unit: Unit, options: CheckOptions, models: list | None = None) -> dict[str, Any]:
    """Replay a unit's logs, read its captures, compare: the unit's JSON-able result."""
    from invariants.model.registry import make_finding
    from invariants.read.capture import find_capture, read_capture
    from invariants.replay.session import replay

    problems: list[list] = []
    kept: list = []
    kept_index: list[int] = []
    for i, src in enumerate(unit.sources):
        if models is not None:
            model = models[i]
            if isinstance(model, str):
                problems.append([i, model])
                continue
        else:
            try:
                model = replay(src, options.profile, max_line=options.max_line)
            except OSError as exc:
                problems.append([i, f"{src.display}: cannot read ({exc.strerror or exc})"])
                continue
        kept.append(model)
        kept_index.append(i)
    captures: list[dict[str, Any]] = []
    if unit.captures is not None:
        records_all: list = []
        read_findings: list[Finding] = []
        for cp in unit.captures:
            p = Path(cp)
            if not p.is_file():
                problems.append([len(unit.sources), f"{p}: capture file not found"])
                continue
            records, cap_findings = read_capture(p, options.max_line)
            read_findings.extend(cap_findings)
            records_all.extend(records)
        plan: list[tuple[Any, list, list[Finding], int]] = [(None, records_all, read_findings, 0)]
    else:
        plan = []
        seen: set[Path] = set()
        for k, m in enumerate(kept):
            cp = find_capture(m.source.path)
            if cp is not None and cp not in seen:
                seen.add(cp)
                records, cap_findings = read_capture(cp, options.max_line)
                plan.append((cp, records, cap_findings, kept_index[k]))
    for cp, records, read_findings, first in plan:
        emitted: list[Finding] = []

        def emit(code: str, message: str, **where: Any) -> None:
            emitted.append(make_finding(code, message, **where))

        requests = check_sessions(kept, {cp: records}, unit.captures is not None, emit)
        captures.append(
            {
                "path": str(cp) if cp is not None else None,
                "first": first,
                "read": [f.to_json() for f in read_findings],
                "check": [f.to_json() for f in emitted],
                "requests": [[r.status, r.session, r.step, list(r.codes)] for r in requests],
            }
        )
    return {
        "sessions": [[kept_index[k], SessionSummary.from_model(m).to_json()] for k, m in enumerate(kept)],
        "problems": problems,
        "captures": captures,
    }


def _replay_one(args: tuple) -> Any:
    from invariants.replay.session import replay

    src, profile, max_line = args
    try:
        return replay(src, profile, max_line=max_line)
    except OSError as exc:
        return f"{src.display}: cannot read ({exc.strerror or exc})"


def _run_unit_job(args: tuple) -> dict[str, Any]:
    unit, options = args
    return run_unit(unit, options)


# --------------------------------------------------------------------------- the run


@dataclass
class RunStats:
    units: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    fork_hits: int = 0


def plan_units(sources: list[LogSource], captures: list[Path] | None) -> list[Unit]:
    if captures is not None:
        return [Unit(list(sources), list(range(len(sources))), [str(c) for c in captures])]
    by_folder: dict[Path, Unit] = {}
    for i, s in enumerate(sources):
        u = by_folder.setdefault(s.path.parent, Unit([], []))
        u.sources.append(s)
        u.indexes.append(i)
    return list(by_folder.values())


def check_paths(
    paths: list[str | Path],
    options: CheckOptions | None = None,
    *,
    jobs: int = 1,
    cache: ResultCache | None = None,
    stats: RunStats | None = None,
) -> CheckResult:
    """Like :func:`invariants.gate.pipeline.run_check`, with workers and a cache.

    Sessions in the result are :class:`SessionSummary` objects (reports
    accept them); findings, order and counts equal ``run_check``'s.
    """
    from invariants.gate import pipeline as _check

    paused = getattr(_check, "cyclic_gc_paused", None)
    if paused is None:
        return _check_paths(paths, options or CheckOptions(), jobs, cache, stats)
    with paused():
        return _check_paths(paths, options or CheckOptions(), jobs, cache, stats)


def _check_paths(
    paths: list[str | Path], options: CheckOptions, jobs: int, cache: ResultCache | None, stats: RunStats | None
) -> CheckResult:
    stats = stats if stats is not None else RunStats()
    jobs = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    sources, problems = discover(paths)
    if cache is not None:
        cache.open_scope([_scope_path(p) for p in paths] + [str(c) for c in options.captures or []])
    units = plan_units(sources, options.captures)
    stats.units = len(units)
    results: list[dict[str, Any] | None] = [None] * len(units)
    keys: list[tuple[list, list] | None] = [None] * len(units)
    todo: list[int] = []
    for n, unit in enumerate(units):
        if cache is not None:
            key = _unit_key(unit, options)
            identity = _unit_identity(unit, options)
            if key is not None:
                keys[n] = (identity, key)
                hit = cache.get("unit", identity, key)
                if hit is not None:
                    results[n] = hit
                    stats.cache_hits += 1
                    continue
            stats.cache_misses += 1
        todo.append(n)
    if todo:
        explicit = options.captures is not None
        if jobs > 1 and explicit:
            unit = units[todo[0]]
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                models = list(
                    pool.map(
                        _replay_one,
                        [(s, options.profile, options.max_line) for s in unit.sources],
                        chunksize=max(1, len(unit.sources) // (jobs * 4)),
                    )
                )
            results[todo[0]] = run_unit(unit, options, models)
        elif jobs > 1 and len(todo) > 1:
            with ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
                for n, res in zip(
                    todo,
                    pool.map(
                        _run_unit_job, [(units[n], options) for n in todo], chunksize=max(1, len(todo) // (jobs * 8))
                    ),
                ):
                    results[n] = res
        else:
            for n in todo:
                results[n] = run_unit(units[n], options)
        if cache is not None:
            for n in todo:
                if keys[n] is not None:
                    identity, key = keys[n]
                    cache.put("unit", identity, key, results[n])
    result = _assemble(units, results, problems, options, cache, stats)
    if cache is not None:
        cache.flush()
    return result


def _scope_path(p: str | Path) -> str:
    try:
        return str(Path(p).resolve())
    except OSError:
        return str(p)


def _assemble(
    units: list[Unit],
    results: list,
    problems: list[str],
    options: CheckOptions,
    cache: ResultCache | None,
    stats: RunStats,
) -> CheckResult:
    from invariants.analysis.forks import ForkSide, check_fork_sides, find_parent_log
    from invariants.model.registry import make_finding

    sessions: list[tuple[int, SessionSummary]] = []
    source_problems: list[tuple[int, int, str]] = []
    captures: list[tuple[int, dict]] = []
    for unit, res in zip(units, results):
        assert res is not None
        for idx, s in res["sessions"]:
            sessions.append((unit.indexes[idx], SessionSummary.from_json(s)))
        for idx, msg in res["problems"]:
            order = unit.indexes[idx] if idx < len(unit.indexes) else 1 << 60
            source_problems.append((order, idx, msg))
        for cap in res["captures"]:
            first = cap["first"]
            captures.append((unit.indexes[first] if first < len(unit.indexes) else 0, cap))
    sessions.sort(key=lambda t: t[0])
    source_problems.sort(key=lambda t: (t[0], t[1]))
    captures.sort(key=lambda t: t[0])  # stable: a unit's captures keep their order
    models = [s for _, s in sessions]
    problems = problems + [msg for _, _, msg in source_problems]

    extra: list[Finding] = []
    for _, cap in captures:
        extra.extend(finding_from_json(f) for f in cap["read"])
    requests: list[RequestStatus] = []
    for _, cap in captures:
        extra.extend(finding_from_json(f) for f in cap["check"])
        requests.extend(RequestStatus(*r) for r in cap["requests"])

    from invariants.gate import pipeline as _check

    pick = getattr(_check, "parent_candidates_for", None)
    by_ids: dict[str, list[SessionSummary]] = {}
    for m in models:
        by_ids.setdefault(m.id, []).append(m)
    last_by_id = {m.id: m for m in models}
    from invariants.analysis.forks import root_index_scope

    with root_index_scope():  # each root scanned once for all the fork checks
        for m in models:
            if not m.has_header or not m.parent_session:
                continue
            parents = pick(m, by_ids) if pick is not None else last_by_id  # the same choice as run_check
            extra.extend(
                _fork_findings(m, parents, cache, stats, ForkSide, check_fork_sides, find_parent_log, make_finding)
            )

    return CheckResult(models, ordered_findings(models, extra, options), requests, problems)  # type: ignore[arg-type]


def _side(m: SessionSummary) -> Any:
    from invariants.analysis.forks import ForkSide

    return ForkSide(m.source, m.id, m.events, m.era, m.parent_session, m.seed_length)


def _fork_findings(
    m: SessionSummary,
    by_id: dict,
    cache: ResultCache | None,
    stats: RunStats,
    ForkSide,
    check_fork_sides,
    find_parent_log,
    make_finding,
) -> list[Finding]:
    from invariants.analysis.forks import parent_candidates

    parent = by_id.get(m.parent_session)
    child_rev = revision(m.path)
    if parent is not None:
        where: list = ["checked", parent.path, revision(parent.path), parent.events]
    else:
        cands = parent_candidates(m.source, m.parent_session or "") if m.seed_length > 0 else []
        where = ["search", [[str(c), revision(c)] for c in cands if revision(c) is not None]]
    identity = [m.path, m.root]
    key = [child_rev, m.events, m.era, m.parent_session, m.seed_length, where]
    if cache is not None and child_rev is not None:
        hit = cache.get("fork", identity, key)
        if hit is not None:
            stats.fork_hits += 1
            return [finding_from_json(f) for f in hit]
    out: list[Finding] = []

    def emit(code: str, message: str, **w: Any) -> None:
        out.append(make_finding(code, message, **w))

    if parent is not None:
        parent_side = _side(parent)
    else:
        found = find_parent_log(m.source, m.parent_session, m.created_at) if m.seed_length > 0 else None
        parent_side = ForkSide(found, m.parent_session, None) if found is not None else None
    check_fork_sides(_side(m), parent_side, emit)
    if cache is not None and child_rev is not None:
        cache.put("fork", identity, key, [f.to_json() for f in out])
    return out
