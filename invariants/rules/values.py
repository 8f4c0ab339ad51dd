"""Typed fields and enumerated values of the core event vocabulary, per era.

LOG-FORMAT.md §2 names the shape of every core event; the allowed values come
from the upstream types of each era (``packages/core/session/src/types.ts``,
``packages/llm/llm/src/types.ts`` and ``message.ts``, and the plugins that
merge into ``MessageSourceMap``, at d060c0dd4f and 611615650f):

* a field of the wrong JSON type, or a message HEAD's load path refuses
  (``assertMessageEventShape``, the turn/end and turn/start migrations in
  ``coordinator.ts``), is EVT011 (error);
* a value outside its enumeration is EVT013 (warning): most of these unions
  are merge-extensible (a plugin may add a kind), and the store keeps any
  lossless JSON, so the value is unexplained rather than fatal.

Late logs before HEAD's shapes, and logs with no era-specific shape, accept the
union of both eras' values, so no value is flagged on a guess about the era.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from invariants.model.jsonvalue import is_safe_int, shorten
from invariants.model.records import Event
from invariants.read.profiles import Profile

if TYPE_CHECKING:  # msgspec is imported only once a log is long enough to decode typed
    from invariants.read.chunk_typed import TypedChunk

Emit = Callable[..., Any]

CHUNK_TYPES = frozenset(
    {"block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"}
)
DELTA_CHUNK_TYPES = frozenset({"text-delta", "reasoning-delta", "tool-call-delta"})
FINISH_KINDS = frozenset({"stop", "tool-calls", "max-tokens", "aborted", "error"})
TODO_STATUSES = frozenset({"pending", "in_progress", "completed"})
TRIGGER_KINDS = frozenset({"message", "injection"})
INBOX_TARGETS = frozenset({"next-turn", "next-step"})
INBOX_OUTCOMES = frozenset({"canceled"})

SEED_TURN_END = frozenset({"completed", "aborted", "error", "disposed", "max-tokens", "rejected", "interrupted"})
# HEAD's own kinds, plus "disposed", which its loader migrates to aborted{disposed}.
HEAD_TURN_END = frozenset({"completed", "aborted", "blocked", "error", "max-tokens", "interrupted", "disposed"})
SEED_BLOCKS = frozenset({"text", "reasoning", "tool-call", "tool-result"})
HEAD_BLOCKS = SEED_BLOCKS | {"image"}
SEED_SOURCES = frozenset({"user", "plugin"})
HEAD_SOURCES = frozenset(
    {
        "user",
        "plugin",
        "model",
        "tool",
        # merged into MessageSourceMap by bundled plugins @ 611615650f
        "agent-instructions",
        "session-reference",
        "team-message",
        "goal",
        "skill-invocation",
        "skill-catalog",
        "coordinator",
        "subagent-report",
        "subagent-settled",
    }
)
MESSAGE_EVENTS = frozenset({"user/message", "context/message", "steering/message", "prompt/blocked"})


def _vocabulary(profile: Profile) -> tuple[frozenset, frozenset, frozenset]:
    """(turn/end reason kinds, content block types, message source kinds) the profile's era defines."""
    if profile.head_contract:
        return HEAD_TURN_END, HEAD_BLOCKS, HEAD_SOURCES
    if profile.era == "seed":
        return SEED_TURN_END, SEED_BLOCKS, SEED_SOURCES
    return SEED_TURN_END | HEAD_TURN_END, HEAD_BLOCKS, HEAD_SOURCES  # early late era, undetermined


def _allowed(values: frozenset) -> str:
    return ", ".join(sorted(values))


class ValueChecker:
    """Check one event's typed fields and enumerations; findings go to ``emit``."""

    def __init__(self, profile: Profile, emit: Emit) -> None:
        self.profile = profile
        self.emit = emit
        self.turn_end_kinds, self.block_types, self.source_kinds = _vocabulary(profile)
        self.numbers: tuple[Any, Any] | None = None  # (turn, step) of the chunk run being checked

    def observe(self, ev: Event) -> None:
        """Check one event (its data is an object)."""
        handler = _HANDLERS.get(ev.type)
        if handler is not None:
            handler(self, ev)

    def run_chunk(self, at: Event, chunk: Any, turn: Any, step: Any) -> None:
        """:meth:`chunk` for a member of a chunk run folded at once, located in the open step."""
        self.numbers = (turn, step)
        try:
            self.chunk(at, chunk)
        finally:
            self.numbers = None

    # -- reporting ---------------------------------------------------------------
    # ``at`` is the event a finding is about; its turn and step are its data's (safe integers),
    # or the open step's for a member of a chunk run.  Worked out only for a finding.
    def _where(self, at: Event) -> dict[str, Any]:
        if self.numbers is not None:
            turn, step = self.numbers
        else:
            turn, step = _num(at.data.get("turn")), _num(at.data.get("step"))
        return {"seq": at.seq, "line": at.line, "turn": turn, "step": step}

    def _bad(self, at: Event, field: str, message: str) -> None:
        self.emit("EVT011", f"{at.type} {field} {message}", **self._where(at), path=f"data.{field}")

    def _enum(self, at: Event, field: str, value: Any, allowed: frozenset) -> None:
        if type(value) is str and value in allowed:
            return
        if not isinstance(value, str):
            self._bad(at, field, f"must be a string; got {shorten(value, 60)}")
            return
        self.emit(
            "EVT013",
            f"{at.type} {field} {shorten(value, 60)} is not a value the {self.profile.name} profile defines "
            f"({_allowed(allowed)})",
            **self._where(at),
            path=f"data.{field}",
            detail={"field": field, "value": shorten(value, 200), "allowed": sorted(allowed)},
        )

    def _kind(self, at: Event, field: str, value: Any, allowed: frozenset | None) -> None:
        """``value`` must be an object whose ``kind`` is a non-empty string (in ``allowed`` when given)."""
        if not isinstance(value, dict):
            self._bad(at, field, f"must be an object with a string kind; got {shorten(value, 60)}")
        elif type(value.get("kind")) is not str or not value["kind"]:
            self._bad(at, f"{field}.kind", f"must be a non-empty string; got {shorten(value.get('kind'), 60)}")
        elif allowed is not None:
            self._enum(at, f"{field}.kind", value["kind"], allowed)

    def _blocks(self, at: Event, field: str, content: Any) -> None:
        if not isinstance(content, list):
            self._bad(at, field, f"must be an array of content blocks; got {shorten(content, 60)}")
            return
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                self._bad(at, f"{field}[{i}]", f"must be a content block object; got {shorten(block, 60)}")
                return
            self._enum(at, f"{field}[{i}].type", block.get("type"), self.block_types)

    # -- events ------------------------------------------------------------------
    def _turn_start(self, at: Event) -> None:
        if "trigger" not in at.data:
            return
        # HEAD migrates a stored trigger away, checking only for a non-empty string kind.
        self._kind(at, "trigger", at.data["trigger"], None if self.profile.head_contract else TRIGGER_KINDS)

    def _turn_end(self, at: Event) -> None:
        self._kind(at, "reason", at.data.get("reason"), self.turn_end_kinds)

    def _chunk_event(self, at: Event) -> None:
        self.chunk(at, at.data.get("chunk"))

    def chunk(self, at: Event, chunk: Any) -> None:
        """One streamed chunk (also called for the members of a chunk run folded at once)."""
        if not isinstance(chunk, dict):
            self._bad(at, "chunk", f"must be a stream chunk object; got {shorten(chunk, 60)}")
            return
        kind = chunk.get("type")
        if type(kind) is str and kind in DELTA_CHUNK_TYPES:
            return
        self._enum(at, "chunk.type", kind, CHUNK_TYPES)
        if kind == "block-start":
            self._enum(at, "chunk.blockType", chunk.get("blockType"), self.block_types)
        elif kind == "block-end":
            block = chunk.get("block")
            if isinstance(block, dict):
                self._enum(at, "chunk.block.type", block.get("type"), self.block_types)
            else:
                self._bad(at, "chunk.block", f"must be a content block object; got {shorten(block, 60)}")
        elif kind == "finish":
            self._kind(at, "chunk.reason", chunk.get("reason"), FINISH_KINDS)

    def plain_chunk(self, chunk: TypedChunk) -> bool:
        """Whether :meth:`chunk` would find nothing wrong with a chunk the typed decoder read
        (the same tests, on its typed fields): only the others are parsed and checked."""
        kind = chunk.type
        if kind not in CHUNK_TYPES:
            return False
        if kind == "block-start":
            return type(chunk.blockType) is str and chunk.blockType in self.block_types
        if kind == "block-end":
            block_type = getattr(chunk.block, "type", None)  # no block: UNSET, which has no type
            return type(block_type) is str and block_type in self.block_types
        if kind == "finish":
            reason_kind = getattr(chunk.reason, "kind", None)
            return type(reason_kind) is str and reason_kind in FINISH_KINDS
        return True

    def _message(self, at: Event) -> None:
        d = at.data
        if self.profile.head_contract and at.type == "user/message" and ("role" in d or "id" in d):
            self._head_message(at, "", d, "user")  # HEAD: the data is the message
            return
        self._kind(at, "source", d.get("source"), self.source_kinds)
        self._blocks(at, "content", d.get("content"))

    def _assistant(self, at: Event) -> None:
        d = at.data
        if "message" in d:
            self._head_message(at, "message.", d["message"], "assistant")
        else:
            self._blocks(at, "content", d.get("content"))

    def _tool_result(self, at: Event) -> None:
        d = at.data
        if "message" in d:
            self._head_message(at, "message.", d["message"], "user", tool=True)
        elif "content" in d:
            self._blocks(at, "content", d["content"])
            if "isError" in d and type(d["isError"]) is not bool:
                self._bad(at, "isError", f"must be a boolean; got {shorten(d['isError'], 40)}")

    def _head_message(self, at: Event, prefix: str, msg: Any, role: str, tool: bool = False) -> None:
        """What HEAD's load path checks of a stored message (``assertMessageEventShape``)."""
        if not isinstance(msg, dict) or type(msg.get("id")) is not str or not msg["id"]:
            self._bad(at, f"{prefix}id", "must be a non-empty string: HEAD loads only identified messages")
            return
        if msg.get("role") != role:
            self._bad(at, f"{prefix}role", f'must be "{role}"; got {shorten(msg.get("role"), 40)}')
        source = msg.get("source")
        expected = "model" if role == "assistant" else "tool" if tool else None
        if expected is None:
            self._kind(at, f"{prefix}source", source, self.source_kinds)
        elif not isinstance(source, dict) or source.get("kind") != expected:
            self._bad(at, f"{prefix}source.kind", f'must be "{expected}"; got {shorten(source, 60)}')
        elif expected == "model" and not all(type(source.get(k)) is str and source[k] for k in ("provider", "model")):
            self._bad(at, f"{prefix}source", f"must name its provider and model; got {shorten(source, 60)}")
        elif expected == "tool" and (type(source.get("callId")) is not str or not source["callId"]):
            self._bad(
                at, f"{prefix}source.callId", f"must be a non-empty string; got {shorten(source.get('callId'), 40)}"
            )
        content = msg.get("content")
        if not tool:
            self._blocks(at, f"{prefix}content", content)
            return
        first = content[0] if isinstance(content, list) and len(content) == 1 else None
        if not (
            isinstance(first, dict) and first.get("type") == "tool-result" and isinstance(first.get("content"), list)
        ):
            self._bad(at, f"{prefix}content", f"must hold exactly one tool-result block; got {shorten(content, 60)}")
        elif isinstance(source, dict) and first.get("toolCallId") != source.get("callId"):
            self._bad(
                at, f"{prefix}content[0].toolCallId", f"must equal source.callId {shorten(source.get('callId'), 40)}"
            )

    def _tool_call(self, at: Event) -> None:
        for key in ("callId", "name", "arguments"):
            if type(at.data.get(key)) is not str:
                self._bad(at, key, f"must be a string; got {shorten(at.data.get(key), 40)}")

    def _todos(self, at: Event) -> None:
        todos = at.data.get("todos")
        if not isinstance(todos, list):
            self._bad(at, "todos", f"must be an array; got {shorten(todos, 60)}")
            return
        for i, item in enumerate(todos):
            if not isinstance(item, dict) or type(item.get("content")) is not str:
                self._bad(at, f"todos[{i}]", f"must be {{content: string, status}}; got {shorten(item, 60)}")
                return
            self._enum(at, f"todos[{i}].status", item.get("status"), TODO_STATUSES)

    def _inbox(self, at: Event) -> None:
        self._enum(at, "target", at.data.get("target"), INBOX_TARGETS)
        if "outcome" in at.data:
            self._enum(at, "outcome", at.data["outcome"], INBOX_OUTCOMES)


# Each event type's check, a plain function of the checker and the event (a table of bound methods made
# every checker a reference cycle).
_HANDLERS: dict[str, Callable[[ValueChecker, Event], None]] = {
    "turn/start": ValueChecker._turn_start,
    "turn/end": ValueChecker._turn_end,
    "assistant/chunk": ValueChecker._chunk_event,
    "assistant/message": ValueChecker._assistant,
    "tool/call": ValueChecker._tool_call,
    "tool/result": ValueChecker._tool_result,
    "todo/write": ValueChecker._todos,
    "agent/inbox/spliced": ValueChecker._inbox,
    **{t: ValueChecker._message for t in MESSAGE_EVENTS},
}


def _num(v: Any) -> int | None:
    return v if is_safe_int(v) else None
