"""Worker side of the indexer: one folder of logs (and its captures) -> rows.

A *group* is one folder: its session logs and the capture files found beside
them (``find_capture``).  Captures route requests by folder, so a folder is
the unit of commit; within it, logs are read in the groups its captures route
between, as a check cuts a folder (:mod:`invariants.gate.capture_groups`), and
a log no capture reaches is made into rows and let go at once.  In the
harness layout (``<root>/--<project>--/<id>/session.jsonl*``) a folder is one
session.

``process_group`` is pure (it reads files, never the database) and its
input and output pickle, so it runs in worker processes.  It decides, per
log, between:

- ``new`` / ``replace``: a full replay;
- ``append``: the log only grew (same inode, larger, the bytes before the
  old end unchanged): ``invariants.replay.checkpoint.resume`` from the stored
  checkpoint reads only the appended bytes (a log shorter than the era
  sniff's head is sniffed again, and re-read in full if its era changed);
- ``context``: unchanged, but a capture in the folder must be (re)checked
  against it: the model comes from the checkpoint with nothing to read.

Recorded requests go through the pipeline's :class:`~invariants.gate.requests.RequestRouter`,
and every finding through the run's :class:`~invariants.gate.policy.FindingPolicy`
(a whole session's, or a whole capture's, at once), so the index stores the
findings ``inspector check`` reports under the same configuration.
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import dataclass, field
from typing import Any

from invariants.gate.capture_groups import listed, route_groups
from invariants.gate.policy import FindingPolicy, report_order
from invariants.gate.requests import RequestRouter, attempt_numbers
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.read.capture import Recorded, find_capture, iter_capture
from invariants.read.source import LogPath, LogSource, log_path
from invariants.replay.checkpoint import resume
from invariants.replay.model import SessionModel
from invariants.replay.session import replay

from . import rows as R
from .spill import Rows, RowSink

HASH_WINDOW = 4096
_IN_FILE_ORDER = report_order(())  # within one file: by seq, line and rule, as the report sorts them


def judged(policy: FindingPolicy, findings: list[Finding]) -> list[Finding]:
    """The findings of whole sessions (or a whole capture) that ``policy`` reports."""
    return policy.apply(sorted(findings, key=_IN_FILE_ORDER))


def _replay(src: LogSource) -> SessionModel:
    """A full replay that also leaves the resume checkpoint (plain logs, clean end)."""
    return replay(src, checkpoint=True)


@dataclass(frozen=True, slots=True)
class Stat:
    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, path: str | LogPath) -> "Stat":
        st = log_path(path).stat()
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)

    @property
    def revision(self) -> str:
        return f"{self.size}:{self.mtime_ns}:{self.inode}"


@dataclass
class Previous:
    """What the index holds about a file from an earlier run."""

    stat: Stat
    bytes_at: int | None = None  # where the stored checkpoint resumes (plain logs)
    head_hash: str | None = None
    tail_hash: str | None = None
    lines: int = 0
    turns: int = 0
    compactions: int = 0
    steps: int = 0
    versions: int = 0
    open_steps: tuple[int, ...] = ()
    last_message_seq: int = -1
    checkpoint: bytes | None = None
    carry: list[tuple] = field(default_factory=list)  # finding rows kept across an append (fires="after-fold")
    checked_lines: int = 0  # captures: highest line already checked
    unexplained_lines: tuple[int, ...] = ()  # captures: lines to retry


@dataclass
class LogTask:
    source: LogSource
    stat: Stat
    previous: Previous | None
    changed: bool

    @property
    def path(self) -> str:
        """The session's key: the file, or ``file#id`` for a session inside a SQLite database."""
        return self.source.display

    @property
    def root(self) -> str:
        return str(self.source.root)


def resumable(src: LogSource) -> bool:
    """A plain local log file, which can be resumed at a byte offset (not zstd, not a database, not a URL)."""
    return src.resumable


def source_stat(src: LogSource) -> Stat:
    """The revision of the file a session lives in; a SQLite database counts its -wal file too."""
    st = Stat.of(src.path)
    if src.member is None:
        return st
    try:
        wal = Stat.of(f"{src.path}-wal")
    except OSError:
        return st
    return Stat(st.size + wal.size, max(st.mtime_ns, wal.mtime_ns), st.inode, st.device)


@dataclass
class CaptureTask:
    path: str
    stat: Stat
    previous: Previous | None
    changed: bool


@dataclass
class GroupTask:
    folder: str
    logs: list[LogTask]
    captures: list[CaptureTask]
    recheck_all: bool = False  # a log or capture of this folder was removed
    gone_captures: list[str] = field(default_factory=list)  # captures indexed before, now absent
    spill: str | None = None  # a folder to write this (large) folder's rows to, in a local run (:mod:`.spill`)


@dataclass
class SessionResult:
    path: str
    root: str
    action: str  # new | replace | append | context | error
    stat: Stat
    file: str = ""
    member: str | None = None
    facts: dict = field(default_factory=dict)
    head_hash: str | None = None
    tail_hash: str | None = None
    bytes_at: int | None = None
    checkpoint: bytes | None = None
    headers: list[tuple] = field(default_factory=list)
    header_tools: list[tuple] = field(default_factory=list)
    versions: list[tuple] = field(default_factory=list)
    version_start: int = 0
    instances: list[tuple] = field(default_factory=list)
    steps_new: list[tuple] = field(default_factory=list)
    steps_update: list[tuple] = field(default_factory=list)
    step_status: list[tuple] = field(default_factory=list)  # (idx, status) for steps kept from before
    messages: list[tuple] = field(default_factory=list)
    cache: list[tuple] | None = None  # cache_report rows from cache_start on (None: module absent)
    cache_start: int = 0
    tool_calls: list[tuple] = field(default_factory=list)
    streams: list[tuple] = field(default_factory=list)  # from step cache_start on, like cache
    findings: list[tuple] = field(default_factory=list)
    problem: str | None = None


@dataclass
class CaptureResult:
    path: str
    stat: Stat
    action: str  # new | replace | append | same | error
    all_lines: bool = False
    records: int = 0
    checked_lines: int = 0
    head_hash: str | None = None
    tail_hash: str | None = None
    rechecked: list[int] = field(default_factory=list)  # capture lines whose rows are replaced
    requests: list[tuple] = field(default_factory=list)  # (line, session path|None, row...)
    findings: list[tuple] = field(default_factory=list)  # (request line, session path|None, finding row)
    file_findings: list[tuple] = field(default_factory=list)
    problem: str | None = None


@dataclass
class GroupResult:
    folder: str
    sessions: Rows[SessionResult]  # in writing order; the writer discards a spilled file once written
    captures: list[CaptureResult]
    recheck_all: bool
    parsed: bool = False  # did any file get read past its first bytes
    gone_captures: list[str] = field(default_factory=list)


def window_hashes(path: str, end: int) -> tuple[str, str]:
    """Hashes of the first and the last ``HASH_WINDOW`` bytes before ``end``."""
    with log_path(path).open("rb") as fh:
        head = fh.read(min(HASH_WINDOW, end))
        start = max(0, end - HASH_WINDOW)
        fh.seek(start)
        tail = fh.read(end - start)
    return hashlib.sha256(head).hexdigest()[:32], hashlib.sha256(tail).hexdigest()[:32]


def grew_in_place(path: str, stat: Stat, prev: Previous | None, end: int | None) -> bool:
    """True when ``path`` is the file ``prev`` describes with bytes appended after ``end``."""
    if prev is None or end is None or prev.head_hash is None or prev.tail_hash is None:
        return False
    if stat.inode != prev.stat.inode or stat.device != prev.stat.device or stat.size < end:
        return False
    try:
        return window_hashes(path, end) == (prev.head_hash, prev.tail_hash)
    except OSError:
        return False


def process_group(task: GroupTask, policy: FindingPolicy) -> GroupResult:
    """Replay or resume the folder's changed logs, then check its captures where needed.

    The folder is cut as a check cuts it (:func:`_capture_groups`): a log no capture routes to is
    read, made into rows and let go at once, and a group's models are held only while its captures
    are checked, so a seed-era folder of thousands of logs never holds them all; with a spill folder
    (``task.spill``) its rows are not held either (:mod:`.spill`).  ``policy`` decides which
    findings are kept.
    """
    logs = task.logs
    sink: RowSink[SessionResult] = RowSink(task.spill)
    actions: dict[int, str] = {}  # place in the folder -> action, for every log read
    held: dict[int, tuple[SessionResult, SessionModel]] = {}
    parsed = False

    def done(i: int, res: SessionResult) -> None:
        # The writer takes the changed logs' rows in folder order, then the unchanged ones read to route captures.
        sink.put((not logs[i].changed, i), res)

    def load(i: int) -> None:
        nonlocal parsed
        lt = logs[i]
        try:
            res, model = _load(lt)
        except Exception as exc:  # one bad log must not stop a postmortem index
            res, model = SessionResult(lt.path, lt.root, "error", lt.stat, problem=_problem(lt.path, exc)), None
        parsed = parsed or res.action != "context"
        actions[i] = res.action
        if model is None:
            done(i, res)
        else:
            held[i] = (res, model)

    def fill(i: int) -> None:
        if i in held:
            res, model = held.pop(i)
            _fill(res, model, logs[i].previous, policy)
            done(i, res)

    groups = _capture_groups(task) if task.captures else []
    grouped = {i for members, _ in groups for i in members}
    for i, lt in enumerate(logs):
        if lt.changed and i not in grouped:
            load(i)
            fill(i)
    caps: dict[int, CaptureResult] = {}
    if task.captures:
        # a baseline matches a capture's findings all at once: with one, a changed capture is checked in full
        plans = [_capture_plan(ct) for ct in task.captures]
        all_lines = (
            task.recheck_all
            or policy.baseline_entries is not None
            or any(p.all_lines for p in plans)
            or any(_rewritten(a) for i, a in actions.items() if logs[i].changed)
        )
        for i in sorted(grouped):  # a log read in full rechecks every capture: read until one was
            if all_lines:
                break
            if logs[i].changed:
                load(i)
                all_lines = _rewritten(actions[i])
        work = all_lines or any(
            p.action != "same" or (ct.previous and ct.previous.unexplained_lines) for ct, p in zip(task.captures, plans)
        )
        for members, cap_places in groups:
            for i in members:
                if i not in actions and (logs[i].changed or work):
                    load(i)  # routing needs every session of the group: unchanged ones from their checkpoints
            if work:
                for k in cap_places:
                    plans[k].all_lines = all_lines
                    caps[k] = plans[k]
                checks = [(task.captures[k], plans[k]) for k in cap_places]
                # the group's sessions in discovery order, as check() has them
                parsed = _check_captures(checks, [held[i][1] for i in members if i in held], policy) or parsed
            for i in members:
                fill(i)
    checked = [caps[k] for k in sorted(caps)]
    return GroupResult(
        task.folder,
        sink.rows(),
        checked,
        task.recheck_all or (bool(checked) and checked[0].all_lines),
        parsed,
        task.gone_captures,
    )


def _check_captures(
    captures: list[tuple[CaptureTask, CaptureResult]], models: list[SessionModel], policy: FindingPolicy
) -> bool:
    """Check a group's captures against its sessions with one router, as check() has one a unit
    (the router holds the models: it goes with this call); whether any capture was read."""
    router = RequestRouter(models, explicit=False)
    read = False
    for ct, cr in captures:
        try:
            _check_capture(ct, cr, router, policy)
            read = True
        except Exception as exc:
            cr.action, cr.problem = "error", _problem(ct.path, exc)
    return read


def _rewritten(action: str) -> bool:
    return action in ("new", "replace")


def _capture_groups(task: GroupTask) -> list[tuple[list[int], list[int]]]:
    """The folder's logs and captures (places in the task) cut into the groups its captures route
    between, as a check cuts them (:func:`~invariants.gate.capture_groups.route_groups`); a log in
    none has no capture routing to it.  The whole folder is one group when it cannot be cut."""
    whole = [(list(range(len(task.logs))), list(range(len(task.captures))))]
    logs = listed([lt.source for lt in task.logs]) if len(task.logs) > 1 else None
    groups = route_groups(logs) if logs is not None else None
    if logs is None or groups is None:
        return whole
    place = {ct.path: k for k, ct in enumerate(task.captures)}
    out: list[tuple[list[int], list[int]]] = []
    for first in groups.firsts():
        members = groups.members(first)
        found = set()
        for i in members:
            name, beside = logs.entry(i)  # (one read of a spilled folder's row, not three)
            if beside:
                found.add(find_capture(logs.folder / name, beside))
        out.append((members, sorted(place[str(f)] for f in found if f is not None and str(f) in place)))
    if sum(len(caps) for _, caps in out) != len(task.captures):  # a capture no log of a group finds
        return whole
    return out


def _problem(path: str, exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"{path}: cannot read ({exc.strerror or exc})"
    tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return f"{path}: internal error while indexing ({tb}); the file was skipped"


def _result(lt: LogTask, action: str) -> SessionResult:
    return SessionResult(lt.path, lt.root, action, lt.stat, str(lt.source.path), lt.source.member)


def _load(lt: LogTask) -> tuple[SessionResult, SessionModel]:
    src = lt.source
    prev = lt.previous
    if not lt.changed and prev is not None:
        model = resume(src, prev.checkpoint) if prev.checkpoint else None
        if model is None:
            model = _replay(src)
        return _result(lt, "context"), model
    if (
        prev is not None
        and prev.checkpoint
        and resumable(src)
        and grew_in_place(str(src.path), lt.stat, prev, prev.bytes_at)
    ):
        model = resume(src, prev.checkpoint)
        if model is not None:  # resume() itself refuses appended lines that change the era verdict
            model.findings.extend(_carried(prev.carry, model))
            return _result(lt, "append"), model
    model = _replay(src)
    return _result(lt, "replace" if prev is not None else "new"), model


def _carried(rows: list[tuple], model: SessionModel) -> list[Finding]:
    """Findings ``replay()`` adds after the fold (the era verdict), which a resume does not redo."""
    out = []
    for row in rows:
        rule, _cat, _sev, seq, line, turn, step, path, _file, message, _detail = row
        out.append(
            make_finding(rule, message, file=model.file, session=model.id, seq=seq, line=line, turn=turn, step=step)
        )
    return out


def _fill(res: SessionResult, model: SessionModel, prev: Previous | None, policy: FindingPolicy) -> None:
    """Rows for one session; only the new ones after an append."""
    prev_steps = prev_versions = 0
    since_seq = -1
    open_steps: tuple[int, ...] = ()
    headers = R.HeaderTable(model)
    statuses = [(st.index, st.status, len(st.requests)) for st in model.steps if st.requests]
    if res.action == "context":
        res.step_status = statuses
        return
    if res.action == "append" and prev is not None:
        prev_steps, prev_versions, since_seq, open_steps = (
            prev.steps,
            prev.versions,
            prev.last_message_seq,
            prev.open_steps,
        )
    res.facts = R.session_facts(model)
    res.checkpoint = model.checkpoint
    res.bytes_at = model.bytes if model.checkpoint is not None else None
    if resumable(model.source):
        try:
            res.head_hash, res.tail_hash = window_hashes(res.file, model.bytes)
        except OSError:
            res.head_hash = res.tail_hash = None
    res.version_start = prev_versions
    res.versions = R.version_rows(model, headers, prev_versions)
    res.instances = R.instance_rows(model, headers)
    res.steps_new = [R.step_row(st, headers) for st in model.steps[prev_steps:]]
    res.steps_update = [R.step_row(model.steps[i], headers) for i in open_steps if i < prev_steps]
    res.step_status = [s for s in statuses if s[0] < prev_steps and s[0] not in open_steps]
    res.messages, res.tool_calls = R.message_rows(model, since_seq)
    res.cache_start = min((*open_steps, prev_steps))
    try:
        res.cache = R.cache_rows(model, res.cache_start)
    except Exception as exc:  # an account we cannot make is not a reason to drop the session
        res.cache, res.problem = (
            None,
            _problem(res.path, exc)
            .replace("indexing", "making the cache account")
            .replace("the file was skipped", "its cache account is missing"),
        )
    res.streams = R.stream_rows(model, res.cache_start)
    res.facts["messages_new"] = len(res.messages)
    res.findings = [R.finding_row(f) for f in judged(policy, model.findings)]
    res.headers = list(headers.rows.values())
    res.header_tools = [(h, i, n) for h, names in headers.tools.items() for i, n in enumerate(names)]


def _capture_plan(ct: CaptureTask) -> CaptureResult:
    cr = CaptureResult(ct.path, ct.stat, "same")
    prev = ct.previous
    if prev is None:
        cr.action, cr.all_lines = "new", True
    elif not ct.changed:
        cr.action = "same"
    elif grew_in_place(ct.path, ct.stat, prev, prev.stat.size) and not ct.path.endswith((".zstd", ".zst")):
        cr.action = "append"
    else:
        cr.action, cr.all_lines = "replace", True
    return cr


def _check_capture(ct: CaptureTask, cr: CaptureResult, router: RequestRouter, policy: FindingPolicy) -> None:
    path = log_path(ct.path)
    prev = ct.previous
    checked = prev.checked_lines if prev is not None and not cr.all_lines else 0  # lines checked before
    retry = set(prev.unexplained_lines) if prev is not None and not cr.all_lines else set()

    def due(line: int) -> bool:
        return line > checked or line in retry

    prove = router.prover(path)
    file_findings: list[Finding] = []
    # Every line is read (attempts are numbered over the whole capture); those due are proved by their
    # bytes as they are read, as a check proves them, and only the lines no proof covers are parsed.
    records = list(
        iter_capture(path, file_findings, prove=lambda rec, s, e: prove(rec, s, e) if due(rec.line) else None)
    )
    cr.records = len(records)
    cr.checked_lines = max((r.line for r in records), default=0)
    cr.file_findings = [R.finding_row(f) for f in judged(policy, file_findings)]
    if not ct.path.endswith((".zstd", ".zst")):
        try:
            cr.head_hash, cr.tail_hash = window_hashes(ct.path, ct.stat.size)
        except OSError:
            pass
    todo = [r for r in records if due(r.line)]
    cr.rechecked = [r.line for r in todo]
    attempts = attempt_numbers(records)  # over the whole capture, as a check numbers them
    emitted: list[tuple[int, str | None, Finding]] = []
    for rec in todo:
        out = router.check(path, rec, attempts.get(id(rec)))
        if out is None:
            cr.requests.append(_request_row(rec, None, rec.session_id, None, "not-routed", []))
            continue
        session_path = out.model.file if out.model is not None else None  # == LogTask.path (display)
        rc = out.check
        cr.requests.append(_request_row(rec, session_path, rc.session, rc.step, rc.status, rc.codes))
        emitted.extend((rec.line, session_path, f) for f in out.findings)
    # the policy per finding, then the baseline over the whole capture's findings in report order
    kept = sorted(
        ((line, sp, g) for line, sp, f in emitted if (g := policy.judge(f)) is not None),
        key=lambda t: _IN_FILE_ORDER(t[2]),
    )
    new = {id(f) for f in policy.absorb([f for _, _, f in kept])[0]}
    for line, session_path, f in kept:
        if id(f) in new:
            cr.findings.append((line, session_path if f.file == session_path else None, R.finding_row(f)))


def _request_row(
    rec: Recorded, session_path: str | None, session_uid: Any, step: int | None, status: str, codes: list[str]
) -> tuple:
    model = rec.request.get("model") if isinstance(rec.request, dict) else None
    return (
        rec.line,
        session_path,
        R.scalar(session_uid),
        step,
        status,
        R.dumps(codes),
        R.scalar(model),
        rec.log_length,
        R.scalar(rec.turn),
        R.scalar(rec.step),
        int(rec.loop_built),
        R.scalar(rec.time) if isinstance(rec.time, (int, float)) else None,
        R.dumps(rec.extra) if rec.extra else None,
    )
