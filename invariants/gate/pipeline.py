"""One entry point: paths + options -> sessions, findings and request verdicts.

``inspector check``, the TUI and the index all call :func:`run_check`, so
they agree on every finding.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from invariants.analysis.forks import check_fork
from invariants.model.findings import Finding
from invariants.model.registry import RULES, make_finding
from invariants.read.capture import Recorded, find_capture, read_capture
from invariants.read.discover import discover
from invariants.replay.compare import compare
from invariants.replay.session import SessionModel, StepState, replay


@dataclass
class CheckOptions:
    captures: list[Path] | None = None  # explicit capture files; None = look beside each log
    profile: str | None = None  # force a profile; None = sniff per log
    select: list[str] | None = None  # rule codes, code prefixes or categories
    ignore: list[str] = field(default_factory=list)
    severity_overrides: dict[str, str] = field(default_factory=dict)
    max_line: int | None = None


@dataclass
class RequestCheck:
    """One recorded request and what became of it."""

    recorded: Recorded
    session: str | None
    step: int | None = None  # index into the session's steps
    status: str = "unchecked"  # ok | diverges | header | unexplained | one-shot
    codes: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    sessions: list[SessionModel]
    findings: list[Finding]
    requests: list[RequestCheck]
    problems: list[str]  # unusable inputs (exit 2)

    @property
    def requests_checked(self) -> int:
        return sum(1 for r in self.requests if r.status not in ("one-shot", "unexplained"))

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def summary(self) -> dict[str, int]:
        c = self.counts()
        return {
            "sessions": len(self.sessions),
            "events": sum(m.events for m in self.sessions),
            "requests_checked": self.requests_checked,
            "errors": c["error"],
            "warnings": c["warning"],
            "infos": c["info"],
        }


def rule_matches(rule_code: str, patterns: Iterable[str]) -> bool:
    """A pattern names a rule code, a code prefix (``DIV``) or a category."""
    rule = RULES.get(rule_code)
    for p in patterns:
        if (
            rule_code == p
            or (p and rule_code.startswith(p) and p.isalpha() and p.isupper())
            or (rule and rule.category == p)
        ):
            return True
    return False


def filter_findings(findings: list[Finding], options: CheckOptions) -> list[Finding]:
    out = []
    for f in findings:
        if options.select is not None and not rule_matches(f.rule, options.select):
            continue
        if options.ignore and rule_matches(f.rule, options.ignore):
            continue
        if f.rule in options.severity_overrides:
            f.severity = options.severity_overrides[f.rule]
        out.append(f)
    return out


def check_sessions(
    models: list[SessionModel], captures: dict[Path | None, list[Recorded]], explicit: bool, emit: Callable[..., None]
) -> list[RequestCheck]:
    """Match recorded requests to steps and compare them."""
    by_id: dict[str, list[SessionModel]] = {}
    for m in models:
        by_id.setdefault(m.id, []).append(m)
    results: list[RequestCheck] = []
    by_folder: dict[Path, list[SessionModel]] = {}
    for m in models:
        by_folder.setdefault(m.source.path.parent, []).append(m)
    for capture_path, records in captures.items():
        local = models if capture_path is None else by_folder.get(capture_path.parent, [])
        local_ids = {m.id: m for m in local}
        for rec in records:
            model = _route(rec, local_ids, local, by_id if explicit else {})
            if model is None:
                if not explicit and rec.session_id and _has_log_beside(capture_path, rec):
                    continue  # a session in that folder the user did not ask to check
                emit(
                    "REQ004",
                    f"recorded request (capture line {rec.line}) names session {rec.session_id!r}, which no checked log explains",
                    file=rec.file,
                    line=rec.line,
                    session=rec.session_id,
                )
                results.append(RequestCheck(rec, rec.session_id, status="unexplained", codes=["REQ004"]))
                continue
            results.append(_check_one(model, rec, emit))
    return results


def _route(
    rec: Recorded,
    local_ids: dict[str, SessionModel],
    local: list[SessionModel],
    global_ids: dict[str, list[SessionModel]],
) -> SessionModel | None:
    if rec.session_id is not None:
        if rec.session_id in local_ids:
            return local_ids[rec.session_id]
        if rec.session_id in global_ids and len(global_ids[rec.session_id]) == 1:
            return global_ids[rec.session_id][0]
        return None
    return local[0] if len(local) == 1 else None


def _has_log_beside(capture_path: Path | None, rec: Recorded) -> bool:
    if capture_path is None:
        return False
    folder = capture_path.parent
    names = [rec.session_file] if rec.session_file else []
    names += [f"{rec.session_id}{s}" for s in (".jsonl", ".jsonl.zstd", ".jsonl.zst")]
    # A hint is a bare file name: never follow a path out of the capture's folder.
    return any(n and "/" not in n and "\\" not in n and n not in (".", "..") and (folder / n).is_file() for n in names)


def _check_one(model: SessionModel, rec: Recorded, emit: Callable[..., None]) -> RequestCheck:
    rc = RequestCheck(rec, model.id)
    model.requests.append(rc)
    where: dict[str, Any] = {"file": model.file, "session": model.id}
    cap = f"{rec.file}:{rec.line}"
    if not rec.loop_built:
        rc.status = "one-shot"
        return rc

    def fail(code: str, message: str, **extra: Any) -> RequestCheck:
        rc.status, rc.codes = "unexplained", [code]
        emit(code, message, **{**where, **extra}, detail={"capture": cap})
        return rc

    step: StepState | None
    if rec.log_length is not None:
        if rec.log_length > model.events:
            return fail(
                "REQ005",
                f"recorded request (capture {cap}) was sent at logLength {rec.log_length}, but the log has {model.events} events",
                turn=rec.turn,
                step=rec.step,
            )
        step = model.step_for_log_length(rec.log_length)
    else:
        step = model.step_for(rec.turn, rec.step)
    if step is None:
        return fail(
            "REQ002",
            f"recorded loop-built request (capture {cap}) has no step/start before it in the log",
            turn=rec.turn,
            step=rec.step,
        )
    rc.step = step.index
    step.requests.append(len(model.requests) - 1)
    expected = model.rebuild_request(step, rec.log_length)
    where.update(turn=step.turn, step=step.step, seq=step.seq, line=step.line)
    if expected is None:
        step.status = "unexplained"
        return fail(
            "REQ003",
            f"recorded loop-built request (capture {cap}) has no request header in force: its model, system and tools are unexplained",
        )
    diffs = compare(expected, rec.request)
    for d in diffs:
        extra = dict(where)
        if d.code == "DIV001" and d.detail.get("source_seq") is not None:
            extra["seq"] = d.detail["source_seq"]
            extra["line"] = model.surface.lines.get(d.detail["source_seq"], step.line)
        emit(d.code, d.message, **extra, path=d.path, detail={**d.detail, "capture": cap, "step_seq": step.seq})
    rc.codes = [d.code for d in diffs]
    severe = [d for d in diffs if RULES[d.code].severity == "error"]
    if any(d.code == "DIV001" for d in severe):
        rc.status = "diverges"
    elif severe:
        rc.status = "header"
    else:
        rc.status = "ok"
    rank = {"unchecked": 0, "ok": 1, "header": 2, "diverges": 3, "unexplained": 3}
    if rank.get(rc.status, 0) > rank.get(step.status, 0):
        step.status = rc.status
    return rc


@contextmanager
def cyclic_gc_paused():
    """Parsed JSON holds no reference cycles, so refcounting frees it; the cyclic
    collector would only rescan every retained message on each allocation burst
    (a quarter of the run time on large logs).  Restored on exit."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run_check(
    paths: list[str | Path],
    options: CheckOptions | None = None,
    on_session: Callable[[SessionModel], None] | None = None,
) -> CheckResult:
    with cyclic_gc_paused():
        return _run_check(paths, options or CheckOptions(), on_session)


def _run_check(
    paths: list[str | Path], options: CheckOptions, on_session: Callable[[SessionModel], None] | None
) -> CheckResult:
    sources, problems = discover(paths)
    models: list[SessionModel] = []
    for src in sources:
        try:
            model = replay(src, options.profile, max_line=options.max_line)
        except OSError as exc:
            problems.append(f"{src.display}: cannot read ({exc.strerror or exc})")
            continue
        models.append(model)
        if on_session:
            on_session(model)
    return check_models(models, options, problems)


def check_models(
    models: list[SessionModel],
    options: CheckOptions,
    problems: list[str],
    read: Callable[[Path], tuple[list[Recorded], list[Finding]]] | None = None,
) -> CheckResult:
    """Everything after the replays: captures, request verdicts, fork seeds, ordering.

    ``read`` reads one capture file (default :func:`read_capture`); a caller
    that follows a growing log passes a caching reader.
    """
    if read is None:

        def read(cp: Path) -> tuple[list[Recorded], list[Finding]]:
            return read_capture(cp, options.max_line)

    extra: list[Finding] = []

    def emit(code: str, message: str, **where: Any) -> None:
        extra.append(make_finding(code, message, **where))

    captures: dict[Path | None, list[Recorded]] = {}
    explicit = options.captures is not None
    if explicit:
        for cp in options.captures or []:
            cp = Path(cp)
            if not cp.is_file():
                problems.append(f"{cp}: capture file not found")
                continue
            records, cap_findings = read(cp)
            extra.extend(cap_findings)
            captures.setdefault(None, []).extend(records)
    else:
        seen: set[Path] = set()
        for m in models:
            cp = find_capture(m.source.path)
            if cp is not None and cp not in seen:
                seen.add(cp)
                records, cap_findings = read(cp)
                extra.extend(cap_findings)
                captures[cp] = records
    requests = check_sessions(models, captures, explicit, emit)
    by_id: dict[str, list[SessionModel]] = {}
    for m in models:
        by_id.setdefault(m.id, []).append(m)
    from invariants.analysis.forks import root_index_scope

    with root_index_scope():  # each root scanned once for all the fork checks
        for m in models:
            check_fork(m, parent_candidates_for(m, by_id), emit)
    return CheckResult(models, ordered_findings(models, extra, options), requests, problems)


def ordered_findings(sessions: list, extra: list[Finding], options: CheckOptions) -> list[Finding]:
    """Every finding of a run, filtered by the options, in report order.

    Shared by serial, parallel and cached runs so their output is identical:
    sessions in discovery order, then by seq, line and rule.
    """
    findings = filter_findings([f for m in sessions for f in m.findings] + extra, options)
    order = {m.file: i for i, m in enumerate(sessions)}
    findings.sort(
        key=lambda f: (
            order.get(f.file or "", len(order)),
            f.file or "",
            f.seq if f.seq is not None else -1,
            f.line or 0,
            f.rule,
        )
    )
    return findings


def _near(a: SessionModel, b: SessionModel) -> bool:
    """Logs a fork keeps together: one folder, one project directory (``<id>/session.jsonl*``), one database."""
    pa, pb = a.source.path, b.source.path
    if pa.parent == pb.parent or (a.source.member is not None and pa == pb):
        return True
    return (
        pa.name.startswith("session.jsonl")
        and pb.name.startswith("session.jsonl")
        and pa.parent.parent == pb.parent.parent
    )


def parent_candidates_for(child: SessionModel, by_id: dict[str, list[SessionModel]]) -> dict[str, SessionModel]:
    """The checked log that is ``child``'s parent: the one with that id beside it,
    else the one where the store would have put it under the same root.

    A fork inherits its parent's cwd, so the store keeps both in one folder
    (seed layout), one project directory (late layout) or one database; the
    root-level places are ``invariants.analysis.forks.parent_candidates``.  Ids repeat
    across unrelated folders (test suites reuse them), so a log of the same
    id anywhere else is never taken for the parent.
    """
    pid = child.header.parent_session if child.header else None
    candidates = [c for c in by_id.get(pid, []) if c is not child] if pid else []
    pick = [c for c in candidates if _near(child, c)]
    if not pick and candidates:
        from invariants.analysis.forks import could_be_parent, parent_candidates

        places = set(parent_candidates(child.source, pid))
        created = getattr(child.header, "created_at", None)
        pick = [
            c
            for c in candidates
            if c.source.path in places and could_be_parent(created, getattr(c.header, "created_at", None))
        ]
    return {pid: pick[0]} if pid and len(pick) == 1 else {}
