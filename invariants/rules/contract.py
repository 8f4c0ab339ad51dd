"""The event contract: upstream's dev-mode event checks, replayed offline.

LOG-FORMAT.md §2.3, §2.4 and §7: seq order, turn and step numbering and
enclosure, tool call/result pairing (with the crash-repair exemptions),
surface metadata only on surface events, and ``sourceEventSeqs`` rules.
Upstream throws on the first violation; we report each one and keep going,
so the trace state is updated as the harness would have intended.

Handlers are a table keyed by event type; the profile switches the few rules
that changed between eras.
"""

from __future__ import annotations

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

Emit = Callable[..., None]
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


class ContractTracer:
    """Per-session trace: ``observe`` each event in order; findings go to ``emit``."""

    def __init__(self, profile: Profile, emit: Emit) -> None:
        self.profile = profile
        self.emit = emit
        self.open_turn: int | None = None
        self.open_step: int | None = None
        self.next_turn = 1
        self.next_step = 1
        self.pending: dict[Any, int | None] = {}
        self.head = profile.head_contract
        self.handlers: dict[str, Callable[[Event], None]] = {
            "turn/start": self._turn_start,
            "turn/end": self._turn_end,
            "step/start": self._step_start,
            "step/end": self._step_end,
            "assistant/chunk": self._step_scoped,
            "assistant/message": self._step_scoped,
            "tool/call": self._tool_call,
            "tool/result": self._tool_result,
        }
        if self.head:
            self.handlers.update(
                {
                    "turn/start": self._head_turn_start,
                    "turn/end": self._head_turn_end,
                    "step/end": self._head_step_end,
                    "tool/result": self._head_tool_result,
                }
            )

    # -- helpers -------------------------------------------------------------
    def _err(self, code: str, ev: Event, message: str) -> None:
        turn = ev.data.get("turn") if isinstance(ev.data, dict) and _int(ev.data.get("turn")) else self.open_turn
        step = ev.data.get("step") if isinstance(ev.data, dict) and _int(ev.data.get("step")) else self.open_step
        self.emit(code, message, seq=ev.seq, line=ev.line, turn=turn, step=step)

    def _need_ints(self, ev: Event, *keys: str) -> bool:
        d = ev.data
        for k in keys:
            v = d.get(k)
            if type(v) is not int or not -_MAX <= v <= _MAX:
                break
        else:
            return True
        self._err("EVT011", ev, f"{ev.type} data must carry integer {', '.join(keys)}; got {shorten(d, 80)}")
        return False

    def _in_open_step(self, ev: Event) -> bool:
        d = ev.data
        if d.get("turn") != self.open_turn or d.get("step") != self.open_step:
            self._err(
                "EVT008",
                ev,
                f"{ev.type} names turn {d.get('turn')}/step {d.get('step')} but the open one is turn "
                f"{self.open_turn}/step {self.open_step}",
            )
            return False
        return True

    # -- entry -----------------------------------------------------------------
    def observe(self, ev: Event, surface_type: bool) -> None:
        if self.profile.unknown_types_need_ignorable and not self._known(ev):
            return
        self._metadata(ev, surface_type)
        handler = self.handlers.get(ev.type)
        if handler is not None:
            handler(ev)
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
        if set(map(type, refs)) == {int} and min(refs) >= 0 and max(refs) < ev.seq:
            bad = []
        else:
            bad = [r for r in refs if not _int(r) or r < 0 or r >= ev.seq]
        if bad:
            self._err(
                "EVT003", ev, f"sourceEventSeqs must reference earlier events; {shorten(bad[:5], 60)} on seq {ev.seq}"
            )
        if not bad and len(set(refs)) != len(refs):
            self._err("EVT003", ev, "sourceEventSeqs must not contain duplicates")

    # -- handlers -------------------------------------------------------------
    def _turn_start(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn"):
            return
        turn = ev.data["turn"]
        if self.open_turn is not None:
            self._err("EVT006", ev, f"turn/start {turn} while turn {self.open_turn} is still open")
        elif turn != self.next_turn:
            self._err("EVT006", ev, f"turn/start expected turn {self.next_turn}, got {turn}")
        self.open_turn, self.open_step = turn, None
        self.next_turn = turn
        self.next_step = 1
        self.pending.clear()

    def _turn_end(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn"):
            return
        turn = ev.data["turn"]
        if self.open_turn != turn:
            self._err("EVT006", ev, f"turn/end {turn} does not match the open turn {self.open_turn}")
        elif self.open_step is not None:
            self._err("EVT006", ev, f"turn/end {turn} while step {self.open_step} is still open")
        self.open_turn, self.open_step = None, None
        self.next_turn = turn + 1
        self.pending.clear()

    def _step_start(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn", "step"):
            return
        turn, step = ev.data["turn"], ev.data["step"]
        if self.open_turn != turn:
            self._err("EVT007", ev, f"step/start in turn {turn} but the open turn is {self.open_turn}")
        elif self.open_step is not None:
            self._err("EVT007", ev, f"step/start {step} while step {self.open_step} is still open")
        elif step != self.next_step:
            self._err("EVT007", ev, f"step/start expected step {self.next_step} in turn {turn}, got {step}")
        self.open_step = step
        self.next_step = step

    def _step_end(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn", "step"):
            return
        self._in_open_step(ev)
        self.pending.clear()
        self.next_step = ev.data["step"] + 1
        self.open_step = None

    def _step_scoped(self, ev: Event) -> None:
        if self._need_ints(ev, "turn", "step"):
            self._in_open_step(ev)

    def _tool_call(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn", "step"):
            return
        self._in_open_step(ev)
        self.pending[call_key(ev.data.get("callId"))] = ev.seq

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
        if not self._need_ints(ev, "turn", "step"):
            return
        self._in_open_step(ev)
        call_id = tool_call_id(ev)
        key = call_key(call_id)
        if key not in self.pending and not is_crash_repair_result(ev):
            self._err("EVT009", ev, f"tool/result for {shorten(call_id, 60)} with no prior tool/call in this step")
        self.pending.pop(key, None)

    # -- HEAD (packages/core/session/src/invariant.ts @ 611615650f) -------------
    def _head_turn_start(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn"):
            return
        turn = ev.data["turn"]
        if self.open_turn is not None:
            self._err("EVT006", ev, f"turn/start {turn} while turn {self.open_turn} is still open")
        if turn != self.next_turn:
            self._err("EVT006", ev, f"turn/start expected turn {self.next_turn}, got {turn}")
        # HEAD keeps nextTurn and the pending calls; we resync nextTurn after a
        # reported error so one misnumbering is reported once.
        self.open_turn = turn
        self.next_turn = turn
        self.next_step = 1

    def _head_turn_end(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn"):
            return
        turn = ev.data["turn"]
        if self.open_turn != turn:
            self._err("EVT006", ev, f"turn/end {turn} does not match the open turn {self.open_turn}")
        if self.open_step is not None:
            self._err("EVT006", ev, f"turn/end {turn} while step {self.open_step} is still open")
        self.open_turn = None
        self.next_turn = turn + 1

    def _head_step_end(self, ev: Event) -> None:
        if not self._need_ints(ev, "turn", "step"):
            return
        self._in_open_step(ev)
        self.pending.clear()
        self.open_step = None
        self.next_step = ev.data["step"] + 1

    def _head_tool_result(self, ev: Event) -> None:
        if ev.surface_op != "append":
            # A content rewrite (Session validated what it replaces) only needs an open turn.
            if self.open_turn is None:
                self._err("EVT010", ev, "tool/result surface replacement appended outside any open turn")
            return
        self._pair_result(ev)

    def _other(self, ev: Event) -> None:
        if self.profile.turn_enclosure:
            if self.open_turn is None:
                self._err("EVT010", ev, f"{ev.type} appended outside any open turn (every event must be turn-enclosed)")
            return
        if ev.type in HEAD_TURN_ENCLOSED and self.open_turn is None:
            self._err("EVT010", ev, f"{ev.type} appended outside any open turn")
