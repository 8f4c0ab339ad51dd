"""The event contract: upstream's dev-mode event checks, replayed offline.

LOG-FORMAT.md §2.3, §2.4 and §7: seq order, turn and step numbering and
enclosure, tool call/result pairing (with the crash-repair exemptions),
surface metadata only on surface events, and ``sourceEventSeqs`` rules.
Upstream throws on the first violation; we report it and keep going.  One
root cause gives one finding: after a misnumbered or missing boundary, or
events lost to a damaged line or a seq gap, the trace re-synchronises on the
numbers the later events carry, and the finding says how many it affected.

Handlers are a table keyed by event type; the profile switches the few rules
that changed between eras.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from invariants.model.jsonvalue import is_safe_int, map_key, shorten
from invariants.model.records import Event
from invariants.read.profiles import Profile

STEP_SCOPED = frozenset({"assistant/chunk", "assistant/message", "tool/call", "tool/result", "step/end"})
# HEAD (invariant.ts): these must be inside a turn; everything else unknown is the owning plugin's business.
HEAD_TURN_ENCLOSED = frozenset({"todo/write", "request/header", "request/context"})
HEAD_FREE = frozenset({"user/message", "session/end-seed"})

# packages/core/session/src/known-event-types.ts @ 611615650f: the vocabulary HEAD's
# persistence read path interprets; any other type needs ``ignorable: true``.
KNOWN_SESSION_EVENT_TYPES = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/chunk",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)
# Removed types HEAD's loader still migrates before the vocabulary check (coordinator.ts).
HEAD_MIGRATED_TYPES = frozenset({"steering/message"})
# Removed types HEAD refuses with their own legacy diagnostics (reported by other rules).
HEAD_LEGACY_REFUSED = frozenset({"request/header-delta"})
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
# Late era (agent.ts): when the step/end append itself is rejected, the turn still ends, with one of these.
TURN_END_AFTER_FAILED_STEP = frozenset({"error", "aborted"})

Emit = Callable[..., Any]  # returns the Finding it recorded
_MAX = 2**53 - 1


def _int(v: Any) -> bool:
    return is_safe_int(v)


def surface_op_problem(op: Any) -> str | None:
    if op == "append":
        return None
    if isinstance(op, dict) and set(op) == {"op", "start", "end"} and op.get("op") == "replace":
        if _int(op["start"]) and _int(op["end"]) and op["start"] >= 0 and op["end"] >= 0:
            return None
    return f'surfaceOp must be "append" or {{op:"replace", start, end}}; got {shorten(op, 80)}'


def call_key(call_id: Any) -> Any:
    """A callId as a key of the pending-call map (JS ``Map`` semantics, see :func:`map_key`)."""
    return map_key(call_id)


def tool_call_id(ev: Event) -> Any:
    """The callId of a tool/result in either shape (seed data.callId, HEAD message.source.callId)."""
    d = ev.data
    if "callId" in d:
        return d.get("callId")
    msg = d.get("message")
    if isinstance(msg, dict):
        src = msg.get("source")
        if isinstance(src, dict) and "callId" in src:
            return src.get("callId")
        content = msg.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            return content[0].get("toolCallId")
    return None


def is_crash_repair_result(ev: Event) -> bool:
    """Synthetic results the harness writes when it repairs a crashed turn.

    Seed era: ``isError`` and ``error.code == "interrupted"``.  From
    6d12e3ab41 the exempt one is ``TOOL_NOT_STARTED`` (no ``tool/call`` was
    logged); HEAD checks ``message.content[0].isError === true`` with it.
    ``TOOL_OUTCOME_UNKNOWN`` results answer a logged call, so they pair normally.
    """
    d = ev.data
    err = d.get("error")
    code = err.get("code") if isinstance(err, dict) else None
    if d.get("isError") is True and code == "interrupted":
        return True
    if code == TOOL_NOT_STARTED:
        msg = d.get("message")
        if not isinstance(msg, dict):
            return d.get("isError") is True
        content = msg.get("content")
        return (
            isinstance(content, list)
            and bool(content)
            and isinstance(content[0], dict)
            and content[0].get("isError") is True
        )
    return False


@dataclass(slots=True)
class Cause:
    """One reported anomaly (or a run of lost events) and the later events it puts out of step.

    After it the tracer re-synchronises on the log's own turn and step numbers
    instead of reporting every later event again; ``last`` is the last later
    event read that way, and the finding's message states the span up to it.
    """

    finding: Any  # the Finding reported for it; None for lost events (the reader reports those)
    seq: int  # the anomaly's seq (for lost events: the first lost seq)
    size: int = 1  # how many events it stands for (lost events: how many were lost)
    last: int | None = None

    def touch(self, seq: int) -> None:
        if seq > self.seq:  # the anomaly itself is not one of the later events
            self.last = seq

    @property
    def affected(self) -> int:
        """The later events from the anomaly up to the last one read by the resync."""
        return 0 if self.last is None else self.last - (self.seq + self.size) + 1


def affected_note(n: int, until: int | None) -> str:
    return (
        f" (affects the {n} later event(s) up to seq {until}:"
        " read by the log's own turn/step numbers, not reported again)"
    )


def annotate(finding: Any, cause: Cause) -> None:
    """Say in ``finding`` how many later events ``cause`` put out of step."""
    n = cause.affected
    if finding is None or not n or "affected_events" in finding.detail:
        return
    finding.message += affected_note(n, cause.last)
    finding.detail = {**finding.detail, "affected_events": n, "affected_until_seq": cause.last}


class ContractTracer:
    """Per-session trace: ``observe`` each event in order; findings go to ``emit``.

    One root cause, one finding: a misnumbered ``turn/start`` or ``step/start``,
    a missing boundary, or lost events (a damaged line, a seq gap; see
    :meth:`lost`) are reported once, and the trace then follows the numbers the
    later events carry.  The numbers a wrong boundary should have had stay in
    ``turn_alt`` / ``step_alt`` until a later event settles which one the log
    goes by.
    """

    def __init__(self, profile: Profile, emit: Emit) -> None:
        self.profile = profile
        self.emit = emit
        self.known_types_only = profile.unknown_types_need_ignorable
        self.open_turn: int | None = None
        self.open_step: int | None = None
        self.turn_started = False  # the open turn was opened by a turn/start (not taken from later events)
        self.next_turn = 1
        self.next_step = 1
        self.next_step_alt: int | None = None
        self.turn_alt: int | None = None  # another number the open turn may go by
        self.step_alt: int | None = None  # another number the open step may go by
        self.turn_cause: Cause | None = None  # the anomaly the open turn's numbering came from
        self.step_cause: Cause | None = None  # the same for the open step
        self.unsure: Cause | None = None  # events were lost just before: the next violation is theirs
        self.pending_unsure = False  # a tool/call of the open step may be among them
        self.framing: Cause | None = None  # the open step was taken from unframed events' own numbers
        self.causes: list[Cause] = []
        self.losses: list[Cause] = []
        self.pending: dict[Any, int | None] = {}
        self.head = profile.head_contract

    # -- helpers -------------------------------------------------------------
    def _err(self, code: str, ev: Event, message: str) -> Any:
        turn = ev.data.get("turn") if isinstance(ev.data, dict) and _int(ev.data.get("turn")) else self.open_turn
        step = ev.data.get("step") if isinstance(ev.data, dict) and _int(ev.data.get("step")) else self.open_step
        return self.emit(code, message, seq=ev.seq, line=ev.line, turn=turn, step=step)

    def _need_turn_step(self, ev: Event) -> bool:
        """:meth:`_need_ints` for ``turn`` and ``step``, the common case decided inline."""
        d = ev.data
        turn, step = d.get("turn"), d.get("step")
        if type(turn) is int and type(step) is int and -_MAX <= turn <= _MAX and -_MAX <= step <= _MAX:
            return True
        return self._need_ints(ev, "turn", "step")

    def _need_ints(self, ev: Event, *keys: str) -> bool:
        d = ev.data
        for k in keys:
            v = d.get(k)
            if type(v) is not int or not -_MAX <= v <= _MAX:
                break
        else:
            return True
        f = self._err("EVT011", ev, f"{ev.type} data must carry integer {', '.join(keys)}; got {shorten(d, 80)}")
        # The boundary could not be applied: what follows may look out of step because of it.
        self.unsure = self._cause(f, ev.seq)
        return False

    def _cause(self, finding: Any, seq: int) -> Cause:
        cause = Cause(finding, seq)
        self.causes.append(cause)
        return cause

    def _violation(self, code: str, ev: Event, message: str) -> Cause | None:
        """Report a contract violation, unless events lost just before explain it (then None)."""
        if self.unsure is not None:
            self.unsure.touch(ev.seq)
            return self.unsure
        return self._cause(self._err(code, ev, message), ev.seq)

    def _count(self, ev: Event) -> None:
        """An event read by numbers a resync chose: it belongs to that resync's span."""
        cause = self.step_cause or self.turn_cause
        if cause is not None:
            cause.touch(ev.seq)

    def lost(self, first_seq: int, count: int) -> None:
        """``count`` events from ``first_seq`` never reached the trace (a damaged line, a seq gap)."""
        cause = Cause(None, first_seq, count)
        self.losses.append(cause)
        self.unsure = cause
        self.pending_unsure = True

    def finish(self) -> None:
        """Write each anomaly's span of affected later events into its finding."""
        for cause in self.causes:
            annotate(cause.finding, cause)

    def _name_turn(self, turn: int) -> None:
        """A later event names ``turn``: settle a pending alternative numbering of the open turn."""
        if self.turn_alt is None:
            return
        if turn == self.turn_alt:
            self.open_turn, self.turn_alt = turn, None  # the log goes by the other number
        elif turn == self.open_turn:
            self.turn_alt, self.turn_cause = None, None  # the log goes by the boundary's number

    def _name_step(self, turn: int, step: int) -> None:
        if self.step_alt is None or turn != self.open_turn:
            return
        if step == self.step_alt:
            self.open_step, self.step_alt = step, None
        elif step == self.open_step:
            self.step_alt, self.step_cause = None, None

    def _in_open_step(self, ev: Event) -> bool:
        d = ev.data
        turn, step = d.get("turn"), d.get("step")
        if self.turn_alt is not None:  # (both return at once otherwise: not called on the hot path)
            self._name_turn(turn)
        if self.step_alt is not None:
            self._name_step(turn, step)
        if turn == self.open_turn and step == self.open_step:
            self.unsure = None
            if self.step_cause is not None or self.turn_cause is not None:
                self._count(ev)
            return True
        if self.framing is not None:  # the open step was never framed: its next numbers are the same cause
            self.framing.touch(ev.seq)
            cause: Cause | None = self.framing
        else:
            adopt = self.open_step is None or self.unsure is not None
            cause = self._violation(
                "EVT008",
                ev,
                f"{ev.type} names turn {turn}/step {step} but the open one is turn "
                f"{self.open_turn}/step {self.open_step}",
            )
            if not adopt or cause is None:
                return False  # one event with wrong numbers inside its step: the step goes on
            self.framing = cause
        # The event's own numbers are the log's framing from here on (a missing step/start, lost events).
        if self.open_turn != turn:
            self.open_turn, self.turn_alt, self.turn_cause = turn, None, cause
        self.open_step, self.step_alt, self.step_cause = step, None, cause
        self.next_step = step
        return False

    # -- entry -----------------------------------------------------------------
    def observe(self, ev: Event, surface_type: bool) -> None:
        if self.known_types_only and not self._known(ev):
            return
        self._metadata(ev, surface_type)
        handler = (_HEAD_HANDLERS if self.head else _HANDLERS).get(ev.type)
        if handler is not None:
            handler(self, ev)
        else:
            self._other(ev)

    def _known(self, ev: Event) -> bool:
        """HEAD refuses a log with an unknown, non-ignorable type (coordinator ``assertEventsSupported``)."""
        t = ev.type
        if t in KNOWN_SESSION_EVENT_TYPES or t in HEAD_MIGRATED_TYPES or t in HEAD_LEGACY_REFUSED:
            return True
        if ev.ignorable:
            return False  # an ignorable event is skipped by its reader: no contract applies
        self._err(
            "LOG007",
            ev,
            f"event type {shorten(t, 60)} is not in HEAD's KNOWN_SESSION_EVENT_TYPES and is not marked ignorable: the "
            "harness refuses to interpret this log",
        )
        return False

    def _metadata(self, ev: Event, surface_type: bool) -> None:
        if not surface_type:
            if not (ev.has_surface_op or ev.has_source_seqs):
                return
            present = [
                k for k, has in (("surfaceOp", ev.has_surface_op), ("sourceEventSeqs", ev.has_source_seqs)) if has
            ]
            if present:
                self._err("EVT001", ev, f"{ev.type} is not a surface event but carries {' and '.join(present)}")
            return
        if not ev.has_surface_op:
            self._err(
                "EVT002", ev, f"{ev.type} is a surface event but has no surfaceOp, so it never reaches the surface"
            )
        else:
            problem = surface_op_problem(ev.surface_op)
            if problem:
                self._err("EVT002", ev, f"{ev.type}: {problem}")
        if ev.has_source_seqs:
            self._source_seqs(ev)

    def _source_seqs(self, ev: Event) -> None:
        refs = ev.source_seqs
        if not isinstance(refs, list):
            self._err("EVT003", ev, f"sourceEventSeqs must be an array; got {shorten(refs, 60)}")
            return
        if not refs:
            if not (self.profile.era == "late" and ev.type == "assistant/message"):
                self._err("EVT003", ev, "sourceEventSeqs must not be empty when present")
            return
        first = refs[0]
        if (
            type(first) is int
            and first >= 2  # then no boolean can equal its place in the range (True == 1)
            and refs == list(range(first, first + len(refs)))
            and refs[-1] < ev.seq
            and type(sum(refs)) is int  # equal to integers, and none a float (5.0 == 5)
        ):
            return  # the common case: a run of earlier seqs, each once
        ints = set(map(type, refs)) == {int}
        if ints and min(refs) >= 0 and max(refs) < ev.seq:
            bad = []
        else:
            bad = [r for r in refs if not _int(r) or r < 0 or r >= ev.seq]
        if bad:
            self._err(
                "EVT003", ev, f"sourceEventSeqs must reference earlier events; {shorten(bad[:5], 60)} on seq {ev.seq}"
            )
        if not bad and len(set(refs)) != len(refs):
            self._err("EVT003", ev, "sourceEventSeqs must not contain duplicates")

    # -- handlers (seed index.ts checks 5-9; HEAD invariant.ts @ 611615650f) ----
    def _turn_start(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn"):
            return
        turn = ev.data["turn"]
        problems = []
        if self.open_turn is not None:
            problems.append(f"turn/start {turn} while turn {self.open_turn} is still open")
            expected = self.open_turn + 1  # a missing turn/end: the numbering goes on from the open turn
        else:
            expected = self.next_turn
        if turn != expected:
            problems.append(f"turn/start expected turn {expected}, got {turn}")
        cause = self._violation("EVT006", ev, "; ".join(problems)) if problems else None
        if cause is None:
            self.unsure = None
        self.turn_alt = expected if turn != expected and cause is not None else None
        self.turn_cause = cause if self.turn_alt is not None else None
        self.open_turn, self.open_step, self.step_alt, self.step_cause = turn, None, None, None
        self.framing, self.turn_started = None, True
        self.next_turn = turn
        self.next_step, self.next_step_alt = 1, None
        if not self.head:  # HEAD keeps its pending calls across turns
            self.pending.clear()
            self.pending_unsure = False

    def _turn_end(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn"):
            return
        turn = ev.data["turn"]
        self._name_turn(turn)
        problems = []
        if self.open_turn != turn:
            problems.append(f"turn/end {turn} does not match the open turn {self.open_turn}")
        step_open = self.open_step is not None
        if step_open:
            problems.append(f"turn/end {turn} while step {self.open_step} is still open")
        if len(problems) == 1 and step_open and self._closes_failed_step(ev):
            self._err(
                "EVT012",
                ev,
                f"turn/end {turn} (reason {ev.data['reason']['kind']}) while step {self.open_step} is still open: "
                "the loop ends a turn this way when its own step/end append was rejected",
            )
        elif problems:
            self._violation("EVT006", ev, "; ".join(problems))
        else:
            self.unsure = None
        self._count(ev)
        self.open_turn, self.open_step, self.framing, self.turn_started = None, None, None, False
        self.turn_alt = self.step_alt = self.turn_cause = self.step_cause = None
        self.next_turn = turn + 1
        if not self.head:
            self.pending.clear()
            self.pending_unsure = False

    def _closes_failed_step(self, ev: Event) -> bool:
        """A late-era turn that ends in error or aborted after its step/end append failed (agent.ts)."""
        reason = ev.data.get("reason")
        kind = reason.get("kind") if isinstance(reason, dict) else None
        return self.profile.era == "late" and type(kind) is str and kind in TURN_END_AFTER_FAILED_STEP

    def _step_start(self, ev: Event) -> None:
        if not self._need_turn_step(ev):
            return
        turn, step = ev.data["turn"], ev.data["step"]
        self._name_turn(turn)
        problems = []
        if self.open_turn != turn:
            problems.append(f"step/start in turn {turn} but the open turn is {self.open_turn}")
        if self.open_step is not None:
            problems.append(f"step/start {step} while step {self.open_step} is still open")
            expected = self.open_step + 1  # a missing step/end
        else:
            expected = self.next_step
        if step != expected and step != self.next_step_alt and self.open_turn == turn:
            problems.append(f"step/start expected step {expected} in turn {turn}, got {step}")
        cause = self._violation("EVT007", ev, "; ".join(problems)) if problems else None
        if cause is None:
            self.unsure = None
        if self.open_turn != turn:
            if self.open_turn is None or cause is self.unsure:
                self.open_turn, self.turn_alt = turn, None  # a missing turn/start: the step names its turn
            else:
                self.turn_alt = turn
            self.turn_cause = cause
        self._count(ev)
        self.step_alt = expected if step != expected and cause is not None and self.open_turn == turn else None
        self.step_cause = cause if self.step_alt is not None else None
        self.open_step, self.framing = step, None
        self.next_step, self.next_step_alt = step, None

    def _step_end(self, ev: Event) -> None:
        if not self._need_turn_step(ev):
            return
        open_step = self.open_step
        matched = self._in_open_step(ev)
        self.pending.clear()
        self.pending_unsure = False
        step = ev.data["step"]
        if matched or open_step is None or self.open_step == step:
            self.next_step, self.next_step_alt = step + 1, None
        else:  # a step/end with a wrong number closes the open step: the next may go by either
            self.next_step, self.next_step_alt = open_step + 1, step + 1
        self.open_step, self.step_alt, self.step_cause, self.framing = None, None, None, None

    def _step_scoped(self, ev: Event) -> None:
        if self._need_turn_step(ev):
            self._in_open_step(ev)

    def _tool_call(self, ev: Event) -> None:
        self.pending[call_key(ev.data.get("callId"))] = ev.seq  # its result pairs even if its numbers are bad
        if self._need_turn_step(ev):
            self._in_open_step(ev)

    def _tool_result(self, ev: Event) -> None:
        op = ev.surface_op
        rewrite = isinstance(op, dict) and op.get("op") == "replace"
        if rewrite and self.profile.era == "late":
            if self.open_turn is None:
                self._err("EVT010", ev, "tool/result rewrite outside any open turn")
            return
        self._pair_result(ev)

    def _pair_result(self, ev: Event) -> None:
        """An appended result answers a pending call of the open step (crash-repair results excepted)."""
        if not self._need_turn_step(ev):
            return
        self._in_open_step(ev)
        call_id = tool_call_id(ev)
        key = call_key(call_id)
        if key not in self.pending and not is_crash_repair_result(ev):
            if self.pending_unsure and self.losses:  # its tool/call may be among the lost events
                self.losses[-1].touch(ev.seq)
            else:
                self._err("EVT009", ev, f"tool/result for {shorten(call_id, 60)} with no prior tool/call in this step")
        self.pending.pop(key, None)

    def _head_tool_result(self, ev: Event) -> None:
        if ev.surface_op != "append":
            # A content rewrite (Session validated what it replaces) only needs an open turn.
            if self.open_turn is None:
                self._err("EVT010", ev, "tool/result surface replacement appended outside any open turn")
            return
        self._pair_result(ev)

    def _other(self, ev: Event) -> None:
        if self.open_turn is not None:
            return
        if self.profile.turn_enclosure:
            self._violation(
                "EVT010", ev, f"{ev.type} appended outside any open turn (every event must be turn-enclosed)"
            )
        elif ev.type in HEAD_TURN_ENCLOSED:
            self._violation("EVT010", ev, f"{ev.type} appended outside any open turn")


# Each event type's check, a plain function of the tracer and the event: a table of the tracer's bound
# methods made every tracer a reference cycle, freed only by the garbage collector.
_HANDLERS: dict[str, Callable[[ContractTracer, Event], None]] = {
    "turn/start": ContractTracer._turn_start,
    "turn/end": ContractTracer._turn_end,
    "step/start": ContractTracer._step_start,
    "step/end": ContractTracer._step_end,
    "assistant/chunk": ContractTracer._step_scoped,
    "assistant/message": ContractTracer._step_scoped,
    "tool/call": ContractTracer._tool_call,
    "tool/result": ContractTracer._tool_result,
}
_HEAD_HANDLERS = {**_HANDLERS, "tool/result": ContractTracer._head_tool_result}
