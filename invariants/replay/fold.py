"""One pass over a session: the fold that every check and view stands on.

For each event, in order: the event contract, the header fold, the surface
and, at every ``step/start``, a small :class:`StepState` (turn, step, seq,
surface position, instance, header in force at dispatch).  Requests are not
built here; :meth:`~invariants.replay.model.SessionModel.rebuild_request`
materialises one on demand from a step state or a dispatch position, in time
proportional to its size, so a whole session costs one pass plus the requests
someone asks for.
"""

from __future__ import annotations

from itertools import compress, islice
from typing import Any, Callable, Iterable, Iterator

from invariants.model.findings import Finding
from invariants.model.records import Event
from invariants.model.registry import make_finding, rules_where
from invariants.read.chunk_run import ChunkRun
from invariants.read.envelope import event_from
from invariants.read.era import SNIFF_LINES, EraGuess, classify_header, classify_object, is_decisive, profile_for
from invariants.read.load import LogReader
from invariants.read.profiles import PROFILES, Profile
from invariants.replay.derive import PROJECTIONS, LegacyIds, project
from invariants.replay.header_fold import HeaderFold
from invariants.replay.model import SessionModel, StepState
from invariants.replay.surface import Surface
from invariants.rules.contract import Cause, ContractTracer, annotate, surface_op_problem
from invariants.rules.head_header import header_findings, relax_fixture
from invariants.rules.values import CHUNK_TYPES, DELTA_CHUNK_TYPES, ValueChecker

RETRY_TYPES = frozenset({"llm/retry", "llm/retry-started"})
# What a lost header event would explain: no header in force, a delta or resume with nothing to apply to.
HEADER_LOSS_RULES = rules_where(loses_header=True)
COMPACTION_SUMMARY = frozenset({"compact/summary", "compaction/summary"})
HOLD_PARSED = 1 << 20
"""Bytes of chunk lines the era sniff holds parsed while it reads ahead; past them (or for a packed
row, whose events can outnumber its lines by far) a run is compacted and parsed again when folded.
A small log is parsed once."""
PROGRESS_BYTES = 8 << 20  # how much more of a log is folded between two calls of a replay's ``progress``
Progress = Callable[[list[Finding], int], None]

# Bumped when the pickled fold state changes shape (2: HeaderVersion.set_by); an older checkpoint is
# not resumed but replayed from scratch.
CHECKPOINT_FORMAT = 5  # 5: the findings' _Sink; 4: steps, causes and the reader's records by their fields


# A typed run's chunk types are known types or None (the decoder's Literal), all hashable.
_NOT_DELTA = (CHUNK_TYPES.difference(DELTA_CHUNK_TYPES) | {None}).__contains__


def _all_deltas(kinds: list) -> bool:
    """Whether every chunk type is a plain delta's (a type that is not a string never is)."""
    try:
        return DELTA_CHUNK_TYPES.issuperset(kinds)
    except TypeError:  # an unhashable type value
        return False


class _Sink:
    """Where the fold's findings go.  The tracer, the value checker and the header fold are given this,
    not the replay's own methods: those made every replay a reference cycle, so nothing a unit folded
    was freed until the garbage collector walked it all."""

    __slots__ = ("reader", "findings", "header_loss")

    def __init__(self, reader: LogReader, findings: list[Finding]) -> None:
        self.reader = reader
        self.findings = findings
        self.header_loss: Cause | None = None  # events lost since the last anchor snapshot: one may be a header

    def emit(self, code: str, message: str, **where: Any) -> Finding:
        hdr = self.reader.header
        finding = make_finding(code, message, file=self.reader.file, session=hdr.id if hdr else None, **where)
        self.findings.append(finding)
        return finding

    def fold_emit(self, code: str, message: str, **where: Any) -> Finding | None:
        """Emit, unless events lost since the last anchor snapshot explain it (they may hold the header)."""
        cause = self.header_loss if code in HEADER_LOSS_RULES else None
        if cause is not None:
            cause.touch(where.get("seq") or 0)
            return None
        return self.emit(code, message, **where)


class _Replay:
    """One pass over a log.  Without a profile it also gathers the era evidence of every event
    (``sniffing``): the profile is taken provisionally from the first lines (see
    :mod:`invariants.read.era`), and :meth:`verdict` gives the whole file's."""

    ahead_sniffed = False  # the item being folded was read ahead and classified by the sniff

    def __init__(self, reader: LogReader, profile: Profile | None, evidence: list[str]) -> None:
        self.reader = reader
        self.findings: list[Finding] = []
        self.sink = _Sink(reader, self.findings)
        self.evidence = list(evidence)
        self.profile: Profile  # set by _judge_by: given, or provisional from the first lines
        self.judged = False
        self.sniffing = profile is None
        self.seen: dict[str, str] = {}  # era evidence: marker -> era
        self.unplaced: dict[int, Cause] = {}  # replaces that could not apply because a node they name was lost
        self.surface = Surface()
        self.steps: list[StepState] = []
        self.current: StepState | None = None
        self.chunks_since_attempt = 0
        self.compaction_pending = False
        self.last_event: Event | None = None
        self.last: tuple | None = None
        self.seed_length: int | None = None
        self.checkpoint: bytes | None = None
        self.chunks_total = 0
        self.want_checkpoint = False
        self.legacy: LegacyIds | None = None  # made on first use (head profile only)
        self.due_seq = 0  # the seq the next event should carry
        if profile is not None:
            self._judge_by(profile)

    def _judge_by(self, profile: Profile) -> None:
        self.profile = profile
        self.judged = True
        self.tracer = ContractTracer(profile, self.sink.emit)
        self.values = ValueChecker(profile, self.sink.emit)
        self.fold = HeaderFold(profile, self.sink.fold_emit)
        self.model = SessionModel(
            self.reader.source, None, profile, self.evidence, self.steps, self.fold, self.surface, self.findings
        )

    def _provisional(self, items: Iterator) -> Iterator:
        """Read ahead to a provisional era verdict, take its profile, and give back every item."""
        seen = self.seen
        if self.reader.source.member is not None:
            from invariants.read.sqlite_backend import schema_era_evidence

            schema_era_evidence(self.reader.source, seen)
        ahead = []
        budget = HOLD_PARSED
        for item in items:
            ahead.append(item)
            obj = item[0]
            if type(obj) is ChunkRun:
                budget -= obj.nbytes()
                if budget < 0 or obj.row is not None:
                    obj.compact()  # held until the verdict: its events are parsed again when folded
            else:
                classify_object(obj, seen)
            if item[1] >= SNIFF_LINES or is_decisive(seen):
                break
        self._header_evidence()
        self._judge_by(PROFILES[profile_for(seen).profile])
        self.ahead_sniffed = True
        return self._drained(ahead, items)

    def _drained(self, ahead: list, items: Iterator) -> Iterator:
        """The items read ahead, each let go once given (a chain would hold them all to the end), then
        the rest, whose era evidence the fold gathers (the sniff has classified those read ahead)."""
        ahead.reverse()
        while ahead:
            yield ahead.pop()
        self.ahead_sniffed = False
        yield from items

    def _header_evidence(self) -> None:
        hdr = self.reader.header
        classify_header(hdr.raw if hdr else None, self.seen)
        if self.reader.chunk_rows:
            self.seen.setdefault("packed chunk rows", "late")

    def verdict(self) -> EraGuess:
        """The era verdict over everything read so far."""
        self._header_evidence()
        return profile_for(self.seen)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["model"] = None
        state["last_event"] = None
        return state

    def _never_placed(self, seq: int) -> Cause | None:
        """The loss that kept ``seq`` off the surface (it was lost, or a replace that named a lost node)."""
        if seq in self.unplaced:
            return self.unplaced[seq]
        for cause in self.tracer.losses:
            if cause.seq <= seq < cause.seq + cause.size:
                return cause
        return None

    def _lost(self, first_seq: int, count: int) -> None:
        self.tracer.lost(first_seq, count)
        self.sink.header_loss = self.tracer.unsure

    def _where(self) -> dict:
        t = self.tracer
        return {"turn": t.open_turn, "step": t.open_step}

    def run(self, head_bytes: int | None = None, progress: Progress | None = None) -> SessionModel:
        """Fold every (remaining) event of the log, then close the model; with ``head_bytes``, only the
        events whose lines start within the log's first ``head_bytes`` bytes; ``progress`` is told of
        the findings so far each time another ``PROGRESS_BYTES`` of the log are folded."""
        seed_length = self.seed_length
        items = self.reader.iter_objects()
        if head_bytes is not None:
            items = _head(items, head_bytes, self.reader)
        if not self.judged:
            items = self._provisional(items)
        if progress is not None:
            items = _told(items, self, progress)
        sniffing, seen = self.sniffing, self.seen
        tracer = self.tracer
        chunks = self.chunks_total
        last = self.last
        due = self.due_seq
        for obj, line, offset in items:
            if type(obj) is ChunkRun:
                first = obj.seq(0)  # not obj.objs: that would parse a typed run whole
                if first != due:
                    self._lost(due, first - due)
                due = obj.seq(len(obj) - 1) + 1
                done = self._chunk_run(obj, line)
                chunks += done
                k = obj.line_step  # 0 when the run is one packed row
                if done == len(obj):
                    last = (obj, line + (done - 1) * k, -1)  # its last event parsed only if it stays the last
                    continue
                # Fall back event by event for the rest of the run.
                for i in range(done, len(obj.objs)):
                    o = obj.objs[i]
                    chunks += 1
                    self._event(event_from(o, line + i * k, -1))
                    last = (o, line + i * k, -1)
                continue
            seq = obj["seq"]
            if seq != due:
                self._lost(due, seq - due)  # a damaged line or a seq gap: the reader reports it
            due = seq + 1
            if obj["type"] == "assistant/chunk" and len(obj) == 4:
                # Hot path: a plain chunk inside its open step, after the step's
                # first chunk. Anything else takes the full route below.
                d = obj["data"]
                cur = self.current
                if (
                    cur is not None
                    and cur.first_chunk_seq is not None
                    and type(d) is dict
                    and type(d.get("turn")) is int
                    and d["turn"] == tracer.open_turn
                    and d.get("step") == tracer.open_step
                    and type(d["step"]) is int
                    and type(d.get("chunk")) is dict
                    and type(kind := d["chunk"].get("type")) is str  # a dict or a list is not hashable
                    and kind in DELTA_CHUNK_TYPES
                ):
                    chunks += 1
                    cur.chunks += 1
                    cur.last_seq = seq
                    cur.last_line = line
                    self.chunks_since_attempt += 1
                    last = (obj, line, offset)
                    continue
                chunks += 1
            if seed_length is None:
                hdr = self.reader.header
                seed_length = self.seed_length = hdr.seed_length if hdr else 0
            if seed_length and seq == seed_length:
                self.fold.expect_anchor = True  # a forked child's own first request must anchor
            if sniffing and not self.ahead_sniffed:
                classify_object(obj, seen)
            self._event(event_from(obj, line, offset))
            last = (obj, line, offset)
        if last is not None and type(last[0]) is ChunkRun:
            last = (last[0].event(-1), last[1], -1)
        self.last = last
        self.due_seq = due
        self.chunks_total = self.model.chunks = chunks
        if sniffing:
            self._header_evidence()
        self.checkpoint = self._checkpoint() if self.want_checkpoint else None
        self.last_event = event_from(*last) if last else None
        self._finish()
        self.model.checkpoint = self.checkpoint
        return self.model

    def _chunk_run(self, run: ChunkRun, line: int) -> int:
        """Fold a validated run of chunks at once; returns how many it took.

        Only the plain case is taken: an open step, every chunk naming that
        (turn, step).  The step's first chunk goes through :meth:`_event`
        (it settles the header in force); anything irregular falls back to
        event-by-event handling for the rest of the run.
        """
        cur = self.current
        tracer = self.tracer
        taken = 0
        if cur is not None and cur.first_chunk_seq is None and len(run):
            # The step's first chunk settles the header in force: take it singly.
            self._event(event_from(run.event(0), line, -1))
            taken = 1
        n = len(run) - taken
        if not n or cur is None or tracer.open_step is None:
            return taken
        typed = run.typed
        if typed is not None:  # one (turn, step) throughout, checked by the typed decoder
            if typed.turn != tracer.open_turn or typed.step != tracer.open_step:
                return taken
            kinds = typed.kinds
            odd: dict[int, dict] = {}  # the chunks the typed fields do not clear, parsed together
            # A few block starts and ends, a usage and a finish chunk, found in one C pass.
            others = list(compress(range(taken, len(kinds)), map(_NOT_DELTA, islice(kinds, taken, None))))
            if others:
                plain, chunk = self.values.plain_chunk, typed.chunk
                at = [i for i in others if not plain(chunk(i))]
                if at:
                    odd = dict(zip(at, run.events(at)))
                    self._chunk_values(run, line, at, [odd[i]["data"] for i in at])
            if typed.usage is not None and typed.usage >= taken:
                chunk = (odd.get(typed.usage) or run.event(typed.usage))["data"]["chunk"]
                if isinstance(chunk.get("usage"), dict):
                    cur.usage = chunk["usage"]
            cur.last_seq = typed.last_seq
        else:
            datas = run.datas[taken:]
            try:
                turns = [d["turn"] for d in datas]
                steps = [d["step"] for d in datas]
            except (KeyError, TypeError):
                return taken
            if (
                set(map(len, datas)) != {3}
                or set(map(type, turns)) != {int}
                or set(map(type, steps)) != {int}
                or set(turns) != {tracer.open_turn}
                or set(steps) != {tracer.open_step}
                or set(map(type, map(dict.get, datas, ["chunk"] * len(datas)))) != {dict}
            ):
                return taken
            kinds = [d["chunk"].get("type") for d in datas]
            if not _all_deltas(kinds):
                at = [i for i, k in enumerate(kinds) if not (type(k) is str and k in DELTA_CHUNK_TYPES)]
                self._chunk_values(run, line, [taken + i for i in at], [datas[i] for i in at])
            if "usage" in kinds:  # the parsed types: the bytes may space or escape them
                for d in reversed(datas):
                    if d["chunk"].get("type") == "usage":
                        if isinstance(d["chunk"].get("usage"), dict):
                            cur.usage = d["chunk"]["usage"]
                        break
            cur.last_seq = run.objs[-1]["seq"]
        cur.chunks += n
        cur.last_line = line + (len(run) - 1) * run.line_step
        self.chunks_since_attempt += n
        self.fold.dispatched_in_instance = True
        return taken + n

    def _chunk_values(self, run: ChunkRun, line: int, indices: Iterable[int], datas: list) -> None:
        """The value checks of the chunks of a run folded at once (at ``indices``) that are not plain deltas."""
        turn, step = self.tracer.open_turn, self.tracer.open_step
        for i, d in zip(indices, datas):
            chunk = d["chunk"]
            if not _all_deltas([chunk.get("type")]):
                at = Event("assistant/chunk", run.seq(i), None, d, line=line + i * run.line_step)
                self.values.run_chunk(at, chunk, turn, step)

    def _checkpoint(self) -> bytes | None:
        """The fold state at a clean end of file, so a grown log resumes here."""
        point = self.reader.resume_point
        if point is None:
            return None
        import pickle
        import zlib

        self.reader.resume_from(point)
        self.checkpoint_format = CHECKPOINT_FORMAT
        model = self.model
        # The model is rebuilt from the state on resume; its running counters travel here.
        self.model_counts = (model.turns, list(model.compactions), list(model.end_seed_seqs), list(model.contexts))
        try:  # __getstate__ leaves the model out
            return zlib.compress(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL), 1)
        except (pickle.PicklingError, TypeError, RecursionError):
            return None

    def _event(self, ev: Event) -> None:  # one dispatch point by design
        if not isinstance(ev.data, dict):
            self.sink.emit("EVT011", f"{ev.type} data is not an object", seq=ev.seq, line=ev.line, **self._where())
            return
        surface_type = ev.type in self.profile.surface_types
        self.tracer.observe(ev, surface_type)
        self.values.observe(ev)
        t = ev.type
        if t == "step/start":
            self._step_start(ev)
        elif t in ("request/header", "request/header-delta"):
            self._header(ev)
        elif t == "assistant/chunk":
            self._chunk(ev)
        elif t in RETRY_TYPES:
            self.chunks_since_attempt = 0
        elif t == "turn/start":
            self.model.turns += 1
        elif t == "turn/end":
            reason = ev.data.get("reason")
            if isinstance(reason, dict) and reason.get("kind") == "interrupted":
                self.sink.emit(
                    "LOG014",
                    f"turn {ev.data.get('turn')} was closed by crash repair (reason interrupted)",
                    seq=ev.seq,
                    line=ev.line,
                    turn=ev.data.get("turn"),
                )
        elif t == "session/end-seed":
            self.model.end_seed_seqs.append(ev.seq)
            self.fold.expect_anchor = True
        elif t in COMPACTION_SUMMARY:
            self.compaction_pending = True
        elif t == "request/context":
            self.model.contexts.append((ev.seq, ev.data))
        if surface_type and ev.has_surface_op:
            self._surface(ev)
        cur = self.current
        if cur is not None:
            cur.last_seq, cur.last_line = ev.seq, ev.line
            if t == "step/end":
                cur.end_seq = ev.seq
                self._settle_header(cur)
                self.current = None
            elif t == "assistant/message" and isinstance(ev.data.get("usage"), dict):
                cur.usage = ev.data["usage"]

    def _step_start(self, ev: Event) -> None:
        if self.current is not None:
            self._settle_header(self.current)
        st = StepState(
            len(self.steps), ev.data.get("turn"), ev.data.get("step"), ev.seq, ev.line, self.surface.position()
        )
        st.compaction_before = self.compaction_pending
        self.compaction_pending = False
        st.last_seq, st.last_line = ev.seq, ev.line
        self.steps.append(st)
        self.current = st
        self.chunks_since_attempt = 0

    def _header(self, ev: Event) -> None:
        where = self._where()
        cur = self.current
        unsure = self.tracer.unsure
        if unsure is not None and ((cur is None and not self.profile.head_contract) or self.chunks_since_attempt):
            unsure.touch(ev.seq)  # its step/start may be among the events lost just before
        elif cur is None:
            if not self.profile.head_contract:  # HEAD only asks for an open turn (the tracer's rule)
                self.sink.emit(
                    "HDR010",
                    f"{ev.type} outside any step: it cannot govern a request",
                    seq=ev.seq,
                    line=ev.line,
                    **where,
                )
        elif self.chunks_since_attempt:
            self.sink.emit(
                "HDR010",
                f"{ev.type} after the step's first assistant/chunk: the request was already dispatched",
                seq=ev.seq,
                line=ev.line,
                **where,
            )
        before = len(self.fold.versions)
        anchors = len(self.fold.instances)
        self.fold.observe(ev, where)
        if len(self.fold.instances) > anchors:
            self.sink.header_loss = None
        if cur is not None and len(self.fold.versions) > before:
            cur.header_event = len(self.fold.versions) - 1
            inst = self.fold.instances
            if inst and inst[-1].seq == ev.seq and inst[-1].first_step is None:
                inst[-1].first_step = cur.index

    def _chunk(self, ev: Event) -> None:
        cur = self.current
        self.chunks_since_attempt += 1
        if cur is None:
            return
        cur.chunks += 1
        self.fold.dispatched_in_instance = True
        if cur.first_chunk_seq is None:
            cur.first_chunk_seq = ev.seq
            self._settle_header(cur)
            if cur.header_version is None:
                self.sink.fold_emit(
                    "REQ001",
                    "this step streamed a response but no request header was in force: the log cannot explain its "
                    "request",
                    seq=ev.seq,
                    line=ev.line,
                    turn=cur.turn,
                    step=cur.step,
                )
        chunk = ev.data.get("chunk")
        if isinstance(chunk, dict) and chunk.get("type") == "usage" and isinstance(chunk.get("usage"), dict):
            cur.usage = chunk["usage"]

    def _settle_header(self, st: StepState) -> None:
        if st.first_chunk_seq is not None and st.header_version is not None:
            return
        if self.fold.versions:
            st.header_version = len(self.fold.versions) - 1
            st.instance = self.fold.versions[-1].instance if self.fold.versions[-1].instance >= 0 else None

    def _legacy_ids(self) -> LegacyIds | None:
        """HEAD migrates pre-identity messages with ids minted from the session id (head profile only)."""
        if not self.profile.head_contract:
            return None
        legacy = self.legacy
        if legacy is None:
            hdr = self.reader.header
            legacy = self.legacy = LegacyIds(hdr.id if hdr else self.model.id)
        return legacy

    def _surface(self, ev: Event) -> None:
        op = ev.surface_op
        if surface_op_problem(op) is not None:
            return
        message = project(PROJECTIONS[self.profile.projection], ev.type, ev.data, ev.seq, self._legacy_ids(), op)
        if op == "append":
            self.surface.append(ev.seq, message, ev.line)
            return
        outcome = self.surface.check_replace(op["start"], op["end"])
        where = self._where()
        if not outcome.ok:
            cause = self._never_placed(op["start"]) or self._never_placed(op["end"])
            if cause is not None:  # it names a surface event that was lost: that loss is the finding
                cause.touch(ev.seq)
                self.unplaced[ev.seq] = cause
                return
            self.sink.emit("EVT004", f"surface replace: {outcome.problem}", seq=ev.seq, line=ev.line, **where)
            return
        recorded = (
            set(ev.source_seqs)
            if isinstance(ev.source_seqs, list) and all(isinstance(x, int) for x in ev.source_seqs)
            else set()
        )
        missing = [s for s in outcome.shadowed if s not in recorded]
        if missing:
            self.sink.emit(
                "EVT005",
                "surface replace: sourceEventSeqs must include every shadowed surface node; missing "
                f"{', '.join(map(str, missing[:10]))}",
                seq=ev.seq,
                line=ev.line,
                **where,
                detail={"missing": missing[:50]},
            )
        self.surface.replace(ev.seq, op["start"], op["end"], message, ev.line)
        self.model.compactions.append(ev.seq)

    def _finish(self) -> None:
        m = self.model
        r = self.reader
        m.header = r.header
        m.events, m.chunk_rows, m.lines, m.bytes, m.torn = r.events, r.chunk_rows, r.lines, r.bytes, r.ended_torn
        if self.current is not None:
            self._settle_header(self.current)
        if self.tracer.open_turn is not None and self.tracer.turn_started and self.last_event is not None:
            m.open_turn_at_end = True
            self.sink.emit(
                "LOG006",
                f"log ends inside turn {self.tracer.open_turn}"
                + (f", step {self.tracer.open_step}" if self.tracer.open_step is not None else "")
                + ": the harness would append interrupted closers on the next load",
                seq=self.last_event.seq,
                line=self.last_event.line,
                turn=self.tracer.open_turn,
                step=self.tracer.open_step,
            )
        self.tracer.finish()
        _annotate_losses(r.findings + self.findings, self.tracer.losses)
        self.findings[:0] = r.findings
        self.findings[:0] = header_findings(
            m.header.raw if m.header else None, self.profile.era, self.reader.source.member is not None, r.file, m.id
        )
        self.findings[:] = relax_fixture(self.findings, m.header.raw if m.header else None)


def _told(items: Iterator[tuple[Any, int, int]], state: _Replay, progress: Progress) -> Iterator[tuple[Any, int, int]]:
    """The items, ``progress(findings so far, offset)`` called after each item that starts another
    ``PROGRESS_BYTES`` into the log (the item folded by then: its findings are in).  By the item's
    own offset, not the reader's: the era's provisional verdict reads a small log whole first."""
    due = PROGRESS_BYTES
    for item in items:
        yield item
        if item[2] >= due:
            due = item[2] + PROGRESS_BYTES
            progress(list(state.findings), item[2])


def _head(items: Iterator[tuple[Any, int, int]], limit: int, reader: LogReader) -> Iterator[tuple[Any, int, int]]:
    """The reader's items whose lines start before byte ``limit``; the first one past it is read but not
    folded, so the reader's counts are taken back to where the head ends."""
    for item in items:
        obj, line, offset = item
        if offset >= limit:
            reader.events -= len(obj) if type(obj) is ChunkRun else 1
            reader.lines, reader.bytes = line - 1, offset
            return
        yield item


def _annotate_losses(findings: list[Finding], losses: list) -> None:
    """Say in the finding about lost events (a damaged line, a gap) how many later events they put out of step."""
    if not any(c.affected for c in losses):
        return
    at: dict[int, Finding] = {}
    for f in findings:
        if f.seq is not None and f.severity != "info":
            at.setdefault(f.seq, f)
    for cause in losses:  # the reader names a damaged line by its due seq, a gap by the seq after it
        if cause.affected:
            annotate(at.get(cause.seq) or at.get(cause.seq + cause.size), cause)
