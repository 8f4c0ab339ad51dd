"""Recorded requests against replayed sessions: route each one to its session and step, rebuild, compare.

:class:`RequestRouter` is the one place a recorded request meets a model:
the pipeline feeds it every line of a unit's captures, the index the lines
it has not checked yet.  Each line gives a :class:`RecordOutcome` with the
verdict, the session it went to and its findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Iterable

from invariants.gate.result import RequestCheck
from invariants.model.findings import Finding
from invariants.model.registry import RULES, make_finding
from invariants.read.capture import Proof, Prover, Recorded
from invariants.read.source import LOG_SUFFIXES, LogPath, is_folder_capture, strip_log_suffix
from invariants.replay.compare import compare, request_bytes_at
from invariants.replay.model import RebuiltRequest, SessionModel, StepState

_RANK = {"unchecked": 0, "ok": 1, "header": 2, "diverges": 3, "unexplained": 3}


@dataclass(slots=True)
class RecordOutcome:
    """What one capture line came to: its verdict, the session it was routed to (None: none), its findings.

    ``pending`` holds a comparison's differences until its attempt number is known (:func:`_write`)."""

    check: RequestCheck
    model: SessionModel | None
    findings: list[Finding] = field(default_factory=list)
    pending: tuple | None = None


class RequestRouter:
    """Routes recorded requests to the models of one unit.

    A capture beside logs routes to the sessions of its own folder; explicit
    captures (``--captures``) route to any checked session whose id is unique
    among them.  A checked request is appended to ``model.requests`` and to
    its step's ``requests``, and raises the step's status.
    """

    def __init__(self, models: list[SessionModel], explicit: bool) -> None:
        self.models = models
        self.explicit = explicit
        self.by_id: dict[str, list[SessionModel]] = {}
        self.by_folder: dict[LogPath, list[SessionModel]] = {}
        for m in models:
            self.by_id.setdefault(m.id, []).append(m)
            self.by_folder.setdefault(m.source.path.parent, []).append(m)
        self._folders: dict[LogPath | None, _Local] = {}
        self._unnamed: dict[LogPath | None, SessionModel | None] = {}

    def _local(self, capture: LogPath | None) -> _Local:
        """The sessions a capture's lines may go to (its folder's; every one for an explicit capture),
        indexed once per folder: a folder of many logs and captures is not scanned per capture."""
        folder = None if capture is None else capture.parent
        local = self._folders.get(folder)
        if local is None:
            models = self.models if folder is None else self.by_folder.get(folder, [])
            local = self._folders[folder] = _Local(models)
        return local

    def _sessions_for(self, capture: LogPath | None) -> tuple[dict[str, SessionModel], SessionModel | None]:
        """The sessions a capture's lines may go to by id (the last of an id wins), and the one a line
        that names no session goes to (:func:`_unnamed_to`)."""
        local = self._local(capture)
        if capture not in self._unnamed:
            self._unnamed[capture] = _unnamed_to(capture, local)
        return local.by_id, self._unnamed[capture]

    def check(self, capture: LogPath | None, rec: Recorded, attempt: int | None = None) -> RecordOutcome | None:
        """The outcome of ``rec`` read from ``capture`` (None for explicit captures); None when
        it belongs to a log beside the capture that this run does not check.  ``attempt`` numbers
        the dispatch of a step sent more than once (:func:`attempt_numbers`)."""
        out = self._compared(capture, rec)
        if out is not None:
            _write(out, attempt)
        return out

    def prover(self, capture: LogPath | None) -> Prover:
        """The ``prove`` of :func:`~invariants.read.capture.iter_capture` for the lines of ``capture``:
        it routes a record and rebuilds its request as :meth:`check` will, and gives a proof when
        the line holds the rebuilt request's bytes.  The proof names the model, step and rebuilt
        request; the record's check (:meth:`check` or :meth:`check_all`) takes them from it
        instead of locating the record again, while they are still the model it routes to."""

        def prove(rec: Recorded, start: int, end: int) -> Proof | None:
            model = self._model_for(capture, rec)
            located = _located(model, rec) if model is not None and rec.loop_built and rec.text is not None else None
            if located is None or not request_bytes_at(located[1].request, rec.text or b"", start, end):
                return None
            return Proof(located[1].request, (model, *located))

        return prove

    def _model_for(self, capture: LogPath | None, rec: Recorded) -> SessionModel | None:
        local_ids, unnamed = self._sessions_for(capture)
        return _route(rec, local_ids, unnamed, self.by_id if self.explicit else {})

    def _compared(self, capture: LogPath | None, rec: Recorded) -> RecordOutcome | None:
        """:meth:`check` but for the findings of a difference, which wait for the attempt number."""
        proof, rec.proof = rec.proof, None  # taken once: a later check locates the record afresh
        model = self._model_for(capture, rec)
        if model is None:
            if not self.explicit and rec.session_id and _has_log_beside(capture, rec, self._local(capture).names):
                return None  # a session in that folder the user did not ask to check
            finding = make_finding(
                "REQ004",
                f"recorded request (capture line {rec.line}) names session {rec.session_id!r}, "
                "which no checked log explains",
                file=rec.file,
                line=rec.line,
                session=rec.session_id,
            )
            rc = RequestCheck(
                "unexplained", rec.session_id, codes=["REQ004"], file=rec.file, line=rec.line, recorded=rec
            )
            return RecordOutcome(rc, None, [finding])
        return _compare_one(model, rec, _proved(proof, model))

    def check_all(
        self, capture: LogPath | None, records: Iterable[Recorded]
    ) -> tuple[list[RequestCheck], list[Finding]]:
        """Every line of one capture: the verdicts and the findings, in capture order.

        Each line is compared as ``records`` gives it, so a capture read lazily is never held
        whole: a line byte for byte its rebuilt request lets its bytes go (see :func:`_compared`).
        The attempt numbers need every line's step and logLength, so the findings of the
        lines that differ are written once all are in."""
        staged: list[tuple[Recorded, RecordOutcome | None]] = [(rec, self._compared(capture, rec)) for rec in records]
        attempts = attempt_numbers([rec for rec, _ in staged])
        checks: list[RequestCheck] = []
        findings: list[Finding] = []
        for rec, out in staged:
            if out is not None:
                _write(out, attempts.get(id(rec)))
                checks.append(out.check)
                findings.extend(out.findings)
        return checks, findings


def attempt_numbers(records: list[Recorded]) -> dict[int, int]:
    """The attempt of each recorded request (by ``id()``) of a step dispatched more than once: the
    late-era loop retries within a step, and each attempt is sent at its own ``logLength``.  Requests
    of one session, turn and step are numbered by their distinct log lengths; a step recorded at one
    log length only (however many lines) gets no number."""
    lengths: dict[tuple[Any, str, str], set[int]] = {}
    keyed: list[tuple[int, tuple[Any, str, str], int]] = []
    for rec in records:
        if rec.loop_built and rec.log_length is not None and rec.turn is not None and rec.step is not None:
            key = (rec.session_id, repr(rec.turn), repr(rec.step))
            lengths.setdefault(key, set()).add(rec.log_length)
            keyed.append((id(rec), key, rec.log_length))
    order = {key: sorted(v) for key, v in lengths.items() if len(v) > 1}
    return {rid: order[key].index(length) + 1 for rid, key, length in keyed if key in order}


def clear_routing(model: SessionModel) -> None:
    """Undo what routing wrote into ``model`` (its requests, its steps' requests and statuses), so a
    model kept from an earlier check can be routed again (:class:`~invariants.gate.follow.Follow`)."""
    model.requests.clear()
    for step in model.steps:
        step.requests.clear()
        step.status = "unchecked"


def _route(
    rec: Recorded,
    local_ids: dict[str, SessionModel],
    unnamed: SessionModel | None,
    global_ids: dict[str, list[SessionModel]],
) -> SessionModel | None:
    if rec.session_id is not None:
        if rec.session_id in local_ids:
            return local_ids[rec.session_id]
        if rec.session_id in global_ids and len(global_ids[rec.session_id]) == 1:
            return global_ids[rec.session_id][0]
        return None
    return unnamed


class _Local:
    """The sessions of one folder (or of a run with explicit captures) as routing looks them up."""

    def __init__(self, models: list[SessionModel]) -> None:
        self.models = models
        self.by_id = {m.id: m for m in models}  # the last of an id wins
        self.names = {m.source.path.name for m in models}  # the file names of the logs this run checks
        self.by_stem: dict[str, list[SessionModel]] = {}
        for m in models:
            self.by_stem.setdefault(strip_log_suffix(m.source.path.name), []).append(m)


def _unnamed_to(capture: LogPath | None, local: _Local) -> SessionModel | None:
    """Where a line with no ``sessionId`` goes: a ``<log>.requests.jsonl`` names its log, so its lines
    go to that log's session (CAPTURE-FORMAT.md: the id is needed only when a file covers more than
    one session); a folder's ``requests.jsonl`` or an explicit capture, to the one session there is."""
    if capture is not None and not is_folder_capture(capture.name):
        named = local.by_stem.get(strip_log_suffix(capture.name).removesuffix(".requests"), [])
        if len(named) == 1:
            return named[0]
    return local.models[0] if len(local.models) == 1 else None


def _has_log_beside(capture_path: LogPath | None, rec: Recorded, checked: set[str]) -> bool:
    """Whether ``rec`` belongs to a log beside the capture that this run does not check (its request is
    then that log's business, not a finding).  A log this run does check cannot excuse it: a request
    that names it but routes to no session is REQ004, as it is with ``--captures``."""
    if capture_path is None:
        return False
    folder = capture_path.parent
    return any(n not in checked and (folder / n).is_file() for n in hinted_names(rec.session_id, rec.session_file))


def hinted_names(session_id: str | None, session_file: str | None) -> list[str]:
    """The file names beside its capture that a line's ``sessionFile`` and ``sessionId`` point to.
    A hint is a bare file name: a path out of the capture's folder is never followed."""
    names = [session_file] if session_file else []
    if session_id:
        names += [f"{session_id}{s}" for s in LOG_SUFFIXES]
    return [n for n in names if n and "/" not in n and "\\" not in n and n not in (".", "..")]


def _proved(proof: Proof | None, model: SessionModel) -> tuple[StepState, RebuiltRequest] | None:
    """The step and rebuilt request a proof located its record by, when it was made against ``model``."""
    if proof is None or not isinstance(proof.found, tuple) or proof.found[0] is not model:
        return None
    return proof.found[1], proof.found[2]


def _anchor(model: SessionModel, rec: Recorded) -> StepState | None:
    """The step a loop-built record anchors at: by its logLength (none past the log's end), else by
    turn and step."""
    if rec.log_length is not None:
        return model.step_for_log_length(rec.log_length) if rec.log_length <= model.events else None
    return model.step_for(rec.turn, rec.step)


def _located(model: SessionModel, rec: Recorded) -> tuple[StepState, RebuiltRequest] | None:
    """The record's step (:func:`_anchor`) and its rebuilt request, or None when there is none
    (:func:`_compare_one` says why)."""
    step = _anchor(model, rec)
    expected = model.rebuild_request(step, rec.log_length) if step is not None else None
    return (step, expected) if step is not None and expected is not None else None


def _compare_one(
    model: SessionModel, rec: Recorded, located: tuple[StepState, RebuiltRequest] | None = None
) -> RecordOutcome:
    """``rec`` rebuilt and compared (``located``: its step and rebuilt request, found already);
    a difference's findings are left in ``pending`` for :func:`_write`."""
    rc = RequestCheck(session=model.id, file=rec.file, line=rec.line, recorded=rec)
    out = RecordOutcome(rc, model)
    model.requests.append(rc)
    where: dict[str, Any] = {"file": model.file, "session": model.id}
    cap = f"{rec.file}:{rec.line}"
    if not rec.loop_built:
        rc.status = "one-shot"
        return out

    def fail(code: str, message: str, **extra: Any) -> RecordOutcome:
        rc.status, rc.codes = "unexplained", [code]
        out.findings.append(make_finding(code, message, **{**where, **extra}, detail={"capture": cap}))
        return out

    if located is None and rec.log_length is not None and rec.log_length > model.events:
        return fail(
            "REQ005",
            f"recorded request (capture {cap}) was sent at logLength {rec.log_length}, "
            f"but the log has {model.events} events",
            turn=rec.turn,
            step=rec.step,
        )
    step = located[0] if located is not None else _anchor(model, rec)
    if step is None:
        return fail(
            "REQ002",
            f"recorded loop-built request (capture {cap}) has no step/start before it in the log",
            turn=rec.turn,
            step=rec.step,
        )
    rc.step = step.index
    step.requests.append(len(model.requests) - 1)
    expected = located[1] if located is not None else model.rebuild_request(step, rec.log_length)
    where.update(turn=step.turn, step=step.step, seq=step.seq, line=step.line)
    if expected is None:
        step.status = "unexplained"
        return fail(
            "REQ003",
            f"recorded loop-built request (capture {cap}) has no request header in force: "
            "its model, system and tools are unexplained",
        )
    diffs = compare(expected, rec)
    if not diffs and rec.raw_fields is not None and rec.parsed is None:
        # Byte for byte the rebuilt request (decided without parsing it): that is the record's
        # request from now on, and the capture line it was read from, most of a capture's bytes, can go.
        rec.parsed, rec.raw_fields, rec.text = expected.request, None, None
    out.pending = (diffs, where, step, cap)
    return out


def _write(out: RecordOutcome, attempt: int | None) -> None:
    """The findings and verdict of a compared record, now that its attempt number is known."""
    if out.model is not None:  # a line no session explains has no attempt
        out.check.attempt = attempt
    if out.pending is None:
        return
    diffs, where, step, cap = out.pending
    out.pending = None
    model, rc = out.model, out.check
    rec = rc.recorded
    assert model is not None and rec is not None  # pending only after a comparison, which has both
    named = f"{PurePath(rec.file).name}:{rec.line}" if diffs else ""  # the capture line, in every message about it
    if attempt is not None:
        named += f", attempt {attempt}"
    for d in diffs:
        extra = dict(where)
        if d.place_seq is not None:
            extra["seq"] = d.place_seq
            extra["line"] = model.surface.lines.get(d.place_seq, step.line)
        detail = {**d.detail, "capture": cap, "step_seq": step.seq}
        out.findings.append(make_finding(d.code, f"{named}: {d.message}", **extra, path=d.path, detail=detail))
    rc.codes = [d.code for d in diffs]
    severe = [d for d in diffs if RULES[d.code].severity == "error"]
    if any(d.code == "DIV001" for d in severe):
        rc.status = "diverges"
    elif severe:
        rc.status = "header"
    else:
        rc.status = "ok"
    if _RANK.get(rc.status, 0) > _RANK.get(step.status, 0):
        step.status = rc.status
