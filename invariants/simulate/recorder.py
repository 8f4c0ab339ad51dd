"""A deterministic stand-in for the seed-era dsh agent loop, used to make test logs.

The checker needs session logs whose every byte is known in advance, and request
captures that were *not* computed from those logs, so that comparing the two
proves something.  This module records sessions the way the harness's seed-era
loop does (``loop.ts``/``request-log.ts`` @ d060c0dd4f; LOG-FORMAT.md §2, §4,
§5.1, §8) plus the short-lived ``messageSuffix`` shape of 17bd71e530.  For every
model request it also writes a capture line (CAPTURE-FORMAT.md) whose messages
come from the simulator's own running conversation, an oracle independent of
any derivation over the log.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from invariants.replay.header_codec import apply_delta, canonical, diff_header, header_equals
from invariants.simulate.world import MemoryLines, World, _dump

USER: dict = {"kind": "user"}
COMPLETED: dict = {"kind": "completed"}
DEFAULT_MODEL = "deepseek-v4-flash"
CRASH: Any = type("Crash", (), {"__repr__": lambda self: "CRASH"})()
"""A :class:`ToolCall` result meaning "the process died while this tool ran"."""

INTERRUPTED_TEXT = "Tool call interrupted by a crash; no result was recorded."
COMPACT_FRAME = (
    "This checkpoint was generated automatically: it condenses an earlier part of the "
    "conversation so that the context stays small. Take what it records as settled and "
    "carry on from the messages after it without mentioning it.\n\n<compacted-summary>"
)
COMPACT_SYSTEM = (
    "You compact conversations for a coding agent. Write a terse Markdown checkpoint "
    "with the user's goal, the files involved, errors met and how they were fixed, "
    "and the next step."
)


def plugin(name: str) -> dict:
    """A ``MessageSource`` for a plugin."""
    return {"kind": "plugin", "plugin": name}


def text_content(text: str) -> list:
    return [{"type": "text", "text": text}]


def _clone(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


# --------------------------------------------------------------------------- what the model "says"


@dataclass
class ToolCall:
    """One tool-call block and what running it produced."""

    name: str
    arguments: Any  # a dict is written as the model would ('{"k": "v"}'); a str is kept verbatim
    result: Any = ""  # str: one text block; list: content blocks; callable: run when the tool runs; CRASH
    is_error: bool = False
    error: dict | None = None
    call_id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    def result_content(self) -> list:
        return text_content(self.result) if isinstance(self.result, str) else list(self.result)


@dataclass
class Reply:
    """One streamed model response: blocks in order reasoning, text, tool calls."""

    text: str = ""
    reasoning: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    finish: str | None = None  # stop | tool-calls | max-tokens; default from the calls
    usage: bool = True

    def finish_kind(self) -> str:
        return self.finish or ("tool-calls" if self.calls else "stop")


@dataclass
class Compaction:
    """A compaction run in ``agent/pre-step``: shadow all but the last surface nodes."""

    summary: str
    keep_last: int = 2
    model: str = DEFAULT_MODEL
    max_tokens: int | None = 8192
    record_request: bool = True  # capture the summarize one-shot (loopBuilt false)


class SimulatedCrash(Exception):
    """The simulated process died; the log ends inside an open turn."""


@dataclass
class _Instance:
    prefix: list
    logged_header: bool = False


# --------------------------------------------------------------------------- the recorder


class SessionRecorder:
    """Writes one session's log the way the seed-era loop does, plus its captures.

    Mutate ``config``, ``system`` and ``tools`` between steps to change what the
    next request uses (an ``agent/request`` listener or a re-assembled prompt);
    call :meth:`start_instance` for every loop instance (first start, restart,
    forked child).  ``framing="per-step"`` switches to the 17bd71e530 shape in
    which ``request_prefix``/``request_suffix`` may change on every step.
    """

    def __init__(
        self,
        world: World,
        log: Any,
        capture: Any,
        *,
        session_id: str,
        session_file: str | None = None,
        cwd: str | None = None,
        model: str = DEFAULT_MODEL,
        system: str | None = None,
        tools: list | None = None,
        chunk_style: str = "deepseek",
        framing: str = "instance",
        parent: tuple[str, int] | None = None,
    ):
        self.world, self.clock, self.rng = world, world.clock, world.rng
        self.log, self.capture = log, capture
        self.session_id = session_id
        self.session_file = session_file or f"{session_id}.jsonl"
        self.cwd = cwd
        self.config: dict = {"model": model}
        self.system = system
        self.tools: list = list(tools or [])
        self.chunk_style = chunk_style
        self.framing = framing
        self.request_prefix: list = []
        self.request_suffix: list = []
        self.seq = 0
        self.last_time = self.clock.now
        self.fold: dict | None = None
        self.last_turn = 0
        self.open_turn: int | None = None
        self.step_no = 0
        self.step_open = False
        self.turn_reason: dict = COMPLETED
        self.instance: _Instance | None = None
        self.requests = 0
        self._nodes: list[list] = []  # the surface: [seq, message or None]
        self._pending: dict[str, list] = {}  # callId -> [step, tool/call seq or None]
        self._turn_end_state: dict[int, tuple] = {}
        self._write_session_header(parent)

    # ----- header record and raw writes

    def _write_session_header(self, parent: tuple[str, int] | None) -> None:
        record: dict = {"type": "session", "version": 0, "id": self.session_id, "createdAt": self.clock.tick(1, 4)}
        if self.cwd is not None:
            record["cwd"] = self.cwd
        if parent is not None:
            record["parentSession"], record["seedLength"] = parent
        self.log.write(record)

    def _write_event(self, event: dict) -> int:
        self.log.write(event)
        self.seq += 1
        self.last_time = event["time"]
        return event["seq"]

    def _append(
        self,
        type_: str,
        data: dict,
        *,
        source_seqs: list | None = None,
        surface_op: Any = None,
        lo: int = 0,
        hi: int = 1,
    ) -> int:
        """``Session.append``: envelope keys type, seq, time, data, sourceEventSeqs, surfaceOp."""
        event: dict = {"type": type_, "seq": self.seq, "time": self.clock.tick(lo, hi), "data": data}
        if source_seqs is not None:
            event["sourceEventSeqs"] = source_seqs
        if surface_op is not None:
            event["surfaceOp"] = surface_op
        return self._write_event(event)

    # ----- the in-memory conversation (the capture oracle)

    def _surface_append(self, seq: int, message: dict | None) -> None:
        self._nodes.append([seq, message])

    def _surface_replace(self, first: int, last: int, seq: int, message: dict) -> None:
        self._nodes[first : last + 1] = [[seq, message]]

    def conversation(self) -> list:
        """The messages the next request would carry between prefix and suffix."""
        return [message for _, message in self._nodes if message is not None]

    def surface_size(self) -> int:
        return len(self._nodes)

    # ----- instances, turns

    def start_instance(self, prefix: list | None = None) -> None:
        """A new loop instance: it composes its prefix once and anchors the fold on its first request."""
        self.instance = _Instance(prefix=_clone(prefix or []))

    def user_turn(self, text: str | list, *, source: dict = USER, context: tuple[str, dict] | None = None) -> int:
        """``turn/start`` + the prompt's ``user/message`` (+ a prompt-submit ``context/message``)."""
        turn = self._open_turn({"kind": "message", "source": source})
        content = text_content(text) if isinstance(text, str) else text
        seq = self._append("user/message", {"content": content, "source": source}, surface_op="append", lo=0, hi=2)
        self._surface_append(seq, {"role": "user", "content": content})
        if context is not None:
            self._context_message(*context)
        return turn

    def inject_idle(self, text: str, source: dict) -> int:
        """An idle ``agent.inject()``: a step-less wrapper turn around one ``context/message``."""
        turn = self._open_turn({"kind": "injection", "source": source})
        self._context_message(text, source)
        self.end_turn()
        return turn

    def _open_turn(self, trigger: dict) -> int:
        assert self.open_turn is None, "a turn is already open"
        turn = self.last_turn + 1
        self._append("turn/start", {"turn": turn, "trigger": trigger}, lo=1, hi=6)
        self.open_turn, self.last_turn = turn, turn
        self.step_no, self.turn_reason = 0, COMPLETED
        self._pending.clear()
        return turn

    def end_turn(self, reason: dict | None = None) -> int:
        assert self.open_turn is not None and not self.step_open
        seq = self._append("turn/end", {"turn": self.open_turn, "reason": reason or self.turn_reason})
        self.open_turn = None
        self._pending.clear()
        if self.log.keeps_history:
            self._turn_end_state[seq] = ([list(node) for node in self._nodes], self.fold, self.last_turn)
        return seq

    def _context_message(self, text: str | list, source: dict) -> None:
        content = text_content(text) if isinstance(text, str) else text
        seq = self._append("context/message", {"content": content, "source": source}, surface_op="append")
        self._surface_append(seq, {"role": "user", "content": _tagged("context", content, source)})

    def _steering(self, text: str | list, source: dict = USER) -> None:
        content = text_content(text) if isinstance(text, str) else text
        data = {"turn": self.open_turn, "content": content, "source": source}
        seq = self._append("steering/message", data, surface_op="append")
        self._surface_append(seq, {"role": "user", "content": _tagged("steering", content, source)})

    # ----- one step

    def step(
        self,
        reply: Reply,
        *,
        steer_before: tuple | list = (),
        compact: Compaction | None = None,
        context_after: tuple | list = (),
        steer_after: tuple | list = (),
    ) -> None:
        """One loop step in the seed-era order (LOG-FORMAT.md §2.2).

        ``steer_*`` items are texts (user steering) or ``(text, source)`` pairs;
        ``context_after`` items are ``(text, source)`` post-execute contexts.
        """
        assert self.open_turn is not None, "open a turn first"
        assert self.instance is not None, "start a loop instance first"
        turn = self.open_turn
        self.step_no += 1
        for item in steer_before:
            self._steering(*_steer_args(item))
        if compact is not None:
            self._compact(compact)
        boundary = self.conversation()
        self._append("step/start", {"turn": turn, "step": self.step_no}, lo=0, hi=3)
        self.step_open = True
        request = self._dispatch(boundary)
        chunk_seqs, content, usage = self._stream(reply, request)
        self._assistant_message(reply, chunk_seqs, content, usage)
        if reply.finish_kind() != "max-tokens":
            for call in reply.calls:
                self._run_tool(call)
        for text, source in context_after:
            self._context_message(text, source)
        for item in steer_after:
            self._steering(*_steer_args(item))
        self._append("step/end", {"turn": turn, "step": self.step_no})
        self.step_open = False
        self._pending.clear()
        if reply.finish_kind() == "max-tokens":
            self.turn_reason = {"kind": "max-tokens"}

    def _framing(self) -> tuple[list, list]:
        if self.framing == "per-step":
            return _clone(self.request_prefix), _clone(self.request_suffix)
        assert self.instance is not None
        return self.instance.prefix, []

    def request_header(self) -> dict:
        """The canonical header the next request uses (``runStep``'s header literal)."""
        header: dict = {"config": _clone(self.config)}
        if self.system:
            header["system"] = self.system
        if self.tools:
            header["tools"] = _clone(self.tools)
        prefix, suffix = self._framing()
        if prefix:
            header["messagePrefix"] = prefix
        if suffix:
            header["messageSuffix"] = suffix
        return canonical(header)

    def _record_header(self, header: dict) -> None:
        """``recordRequestHeader``: anchor snapshot, nothing, a delta, or a fallback snapshot."""
        assert self.instance is not None
        if not self.instance.logged_header:
            reason = "initial" if self.fold is None else "resume"
            self._append("request/header", {"header": header, "reason": reason})
            self.instance.logged_header = True
            self.fold = header
            return
        assert self.fold is not None
        if header_equals(self.fold, header):
            return
        delta = diff_header(self.fold, header)
        if delta is None:
            return
        applied = apply_delta(self.fold, delta).header
        if header_equals(applied, header):
            self._append("request/header-delta", delta)
            self.fold = applied
        else:
            self._append("request/header", {"header": header, "reason": "fallback"})
            self.fold = header

    def _dispatch(self, boundary: list) -> dict:
        """Log the header the request owes, build the request, and capture it."""
        header = self.request_header()
        self._record_header(header)
        prefix, suffix = self._framing()
        request: dict = {"model": self.config["model"]}
        if self.system:
            request["system"] = self.system
        if self.tools:
            request["tools"] = _clone(self.tools)
        request["messages"] = [*prefix, *boundary, *suffix]
        for key in ("temperature", "maxTokens", "stop"):
            if key in self.config:
                request[key] = _clone(self.config[key])
        self._capture(request, loop_built=True, turn=self.open_turn, step=self.step_no)
        return request

    def _capture(self, request: dict, *, loop_built: bool, turn: Any, step: Any) -> None:
        self.requests += 1
        self.capture.write(
            {
                "sessionId": self.session_id,
                "sessionFile": self.session_file,
                "logLength": self.seq,
                "turn": turn,
                "step": step,
                "loopBuilt": loop_built,
                "time": self.clock.now,
                "request": request,
            }
        )

    # ----- streaming

    def _stream(self, reply: Reply, request: dict) -> tuple[list, list, dict | None]:
        """Append the ``assistant/chunk`` events; return their seqs, the message content and usage."""
        blocks = self._blocks(reply)
        chunks = _chunk_script(blocks, self.rng, self.chunk_style)
        usage = _usage(reply, request, self.chunk_style) if reply.usage else None
        if usage is not None:
            chunks.append({"type": "usage", "usage": usage})
        chunks.append({"type": "finish", "reason": {"kind": reply.finish_kind()}})
        turn, step = self.open_turn, self.step_no
        seqs = [
            self._append("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}, lo=0, hi=1)
            for chunk in chunks
        ]
        content = blocks if reply.finish_kind() != "max-tokens" else [b for b in blocks if b["type"] != "tool-call"]
        return seqs, content, usage

    def _blocks(self, reply: Reply) -> list:
        blocks: list = []
        if reply.reasoning:
            blocks.append({"type": "reasoning", "text": reply.reasoning})
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for index, call in enumerate(reply.calls):
            if call.call_id is None:
                call.call_id = self.world.call_id(index)
            blocks.append(
                {"type": "tool-call", "id": call.call_id, "name": call.name, "arguments": call.arguments_text()}
            )
        return blocks

    def _assistant_message(self, reply: Reply, chunk_seqs: list, content: list, usage: dict | None) -> None:
        if not content and usage is None:
            return
        data: dict = {"turn": self.open_turn, "step": self.step_no, "content": content}
        if usage is not None:
            data["usage"] = usage
        seq = self._append("assistant/message", data, source_seqs=chunk_seqs or None, surface_op="append")
        self._surface_append(seq, {"role": "assistant", "content": content} if content else None)
        for block in content:
            if block["type"] == "tool-call":
                self._pending[block["id"]] = [self.step_no, None]

    def _run_tool(self, call: ToolCall) -> None:
        call_id = call.call_id
        assert call_id is not None, "the reply that wrote the call minted its id"
        data = {
            "turn": self.open_turn,
            "step": self.step_no,
            "callId": call_id,
            "name": call.name,
            "arguments": call.arguments_text(),
        }
        call_seq = self._append("tool/call", data)
        self._pending[call_id][1] = call_seq
        if call.result is CRASH:
            self.instance = None
            raise SimulatedCrash(f"process died while {call.name} ran (tool/call seq {call_seq})")
        if callable(call.result):
            call.result = call.result()
        content = call.result_content()
        result: dict = {
            "turn": self.open_turn,
            "step": self.step_no,
            "callId": call_id,
            "content": content,
            "isError": call.is_error,
        }
        if call.error is not None:
            result["error"] = call.error
        seq = self._append("tool/result", result, source_seqs=[call_seq], surface_op="append", lo=2, hi=40)
        del self._pending[call_id]
        self._surface_append(seq, _tool_result_message(call_id, content, call.is_error))

    # ----- compaction

    def _compact(self, plan: Compaction) -> None:
        """compact/start, compact/summary, the replacing user/message, compact/end (§2.5)."""
        turn = self.open_turn
        first, last = _compaction_range(self._nodes, plan.keep_last)
        start_seq = self._append("compact/start", {"turn": turn})
        shadowed_nodes = self._nodes[first : last + 1]
        shadowed = [seq for seq, _ in shadowed_nodes]
        messages = [m for _, m in shadowed_nodes if m is not None]
        if plan.record_request:
            self._capture(_summarize_request(plan, messages), loop_built=False, turn=turn, step=self.step_no)
        summary = text_content(plan.summary)
        data: dict = {
            "summary": summary,
            "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
            "shadowedSeqs": shadowed,
            "shadowedTokenCount": len(_dump(messages)) // 4,
            "model": plan.model,
        }
        if plan.max_tokens is not None:
            data["maxTokens"] = plan.max_tokens
        summary_seq = self._append("compact/summary", data, lo=3, hi=30)
        content = [{"type": "text", "text": COMPACT_FRAME}, *summary, {"type": "text", "text": "</compacted-summary>"}]
        op = {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}
        seq = self._append(
            "user/message",
            {"content": content, "source": plugin("compact")},
            source_seqs=[start_seq, summary_seq, *shadowed],
            surface_op=op,
        )
        self._surface_replace(first, last, seq, {"role": "user", "content": content})
        self._append("compact/end", {"turn": turn})

    # ----- crash repair, fork

    def repair(self) -> list[int]:
        """The closers the JSONL store appends when it loads a log with an open turn (§1.6).

        They carry the last real event's time, and the synthetic ``tool/result``
        is serialized from the repair literal: ``surfaceOp`` before ``sourceEventSeqs``.
        """
        if self.open_turn is None:
            return []
        time, turn, seqs = self.last_time, self.open_turn, []
        for call_id, (step, call_seq) in list(self._pending.items()):
            content = text_content(INTERRUPTED_TEXT)
            event: dict = {
                "type": "tool/result",
                "seq": self.seq,
                "time": time,
                "data": {
                    "turn": turn,
                    "step": step,
                    "callId": call_id,
                    "content": content,
                    "isError": True,
                    "error": {"name": "InterruptedError", "code": "interrupted"},
                },
                "surfaceOp": "append",
            }
            if call_seq is not None:
                event["sourceEventSeqs"] = [call_seq]
            seqs.append(self._write_event(event))
            self._surface_append(event["seq"], _tool_result_message(call_id, content, True))
        if self.step_open:
            seqs.append(
                self._write_event(
                    {"type": "step/end", "seq": self.seq, "time": time, "data": {"turn": turn, "step": self.step_no}}
                )
            )
            self.step_open = False
        seqs.append(
            self._write_event(
                {
                    "type": "turn/end",
                    "seq": self.seq,
                    "time": time,
                    "data": {"turn": turn, "reason": {"kind": "interrupted"}},
                }
            )
        )
        self.open_turn = None
        self._pending.clear()
        return seqs

    def last_turn_end(self) -> int:
        return max(self._turn_end_state)

    def fork(
        self, *, session_id: str, session_file: str | None = None, boundary: int | None = None, capture: Any = None
    ) -> "SessionRecorder":
        """``SessionStore.fork``: a child seeded with ``events[0..boundary]``, which must end on ``turn/end``."""
        assert self.log.keeps_history, "fork needs an in-memory log"
        boundary = self.last_turn_end() if boundary is None else boundary
        if boundary not in self._turn_end_state:
            raise ValueError(f"fork boundary {boundary} is not a turn/end (OPEN_TURN)")
        nodes, fold, last_turn = self._turn_end_state[boundary]
        child = SessionRecorder(
            self.world,
            MemoryLines(),
            self.capture if capture is None else capture,
            session_id=session_id,
            session_file=session_file,
            cwd=self.cwd,
            model=self.config["model"],
            system=self.system,
            tools=self.tools,
            chunk_style=self.chunk_style,
            framing=self.framing,
            parent=(self.session_id, boundary + 1),
        )
        child.config = _clone(self.config)
        for line in self.log.lines[1 : boundary + 2]:
            child.log.write_raw(line)
        child.seq = boundary + 1
        child._nodes = [list(node) for node in nodes]
        child.fold, child.last_turn = fold, last_turn
        child._turn_end_state[boundary] = (nodes, fold, last_turn)
        return child


# --------------------------------------------------------------------------- pure helpers


def _tagged(tag: str, content: list, source: dict) -> list:
    """``renderTagged``: the seed-era projection of context and steering messages."""
    opening = f"<{tag} source={json.dumps(source['kind'])}>"
    return [{"type": "text", "text": opening}, *content, {"type": "text", "text": f"</{tag}>"}]


def _tool_result_message(call_id: str, content: list, is_error: bool) -> dict:
    return {
        "role": "user",
        "content": [{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": is_error}],
    }


def _steer_args(item: Any) -> tuple:
    return (item, USER) if isinstance(item, str) else tuple(item)


def _pieces(text: str, rng: random.Random, max_words: int = 2) -> list[str]:
    """Split text into stream deltas (whole words with their leading space); joins back exactly."""
    words = re.findall(r"\s*\S+", text)
    rest = text[len("".join(words)) :]
    pieces: list[str] = []
    i = 0
    while i < len(words):
        n = rng.randint(1, max_words)
        pieces.append("".join(words[i : i + n]))
        i += n
    if rest:
        pieces.append(rest)
    return pieces or [text]


def _arg_pieces(arguments: str, rng: random.Random) -> list[str]:
    pieces, i = [], 0
    while i < len(arguments):
        n = rng.randint(1, 9)
        pieces.append(arguments[i : i + n])
        i += n
    return pieces


def _deltas(index: int, block: dict, rng: random.Random, style: str) -> list:
    if block["type"] == "tool-call":
        args = _arg_pieces(block["arguments"], rng)
        if style == "deepseek":
            return [
                {
                    "type": "tool-call-delta",
                    "index": index,
                    "id": block["id"],
                    "name": block["name"],
                    "argumentsDelta": piece,
                }
                for piece in ["", *args]
            ]
        out = [
            {"type": "tool-call-delta", "index": index, "id": block["id"], "argumentsDelta": piece} for piece in args
        ]
        if out:
            out[0] = {
                "type": "tool-call-delta",
                "index": index,
                "id": block["id"],
                "name": block["name"],
                "argumentsDelta": out[0]["argumentsDelta"],
            }
        return out
    kind = "reasoning-delta" if block["type"] == "reasoning" else "text-delta"
    return [{"type": kind, "index": index, "text": piece} for piece in _pieces(block["text"], rng)]


def _chunk_script(blocks: list, rng: random.Random, style: str) -> list:
    """Block chunks as an adapter streams them.

    ``deepseek``: every block's deltas, then all ``block-end``s at the end (what
    the DeepSeek adapter does); ``mock``: each block closes before the next opens.
    """
    chunks: list = []
    ends = []
    for index, block in enumerate(blocks):
        chunks.append({"type": "block-start", "index": index, "blockType": block["type"]})
        chunks.extend(_deltas(index, block, rng, style))
        end = {"type": "block-end", "index": index, "block": block}
        if style == "mock":
            chunks.append(end)
        else:
            ends.append(end)
    return chunks + ends


def _usage(reply: Reply, request: dict, style: str) -> dict:
    out_tokens = max(
        1, (len(reply.text) + len(reply.reasoning) + sum(len(c.arguments_text()) for c in reply.calls)) // 4
    )
    in_tokens = max(1, len(_dump(request["messages"])) // 4 + len(request.get("system", "")) // 4)
    if style == "mock":
        return {"inputTokens": in_tokens, "outputTokens": out_tokens}
    cached = (in_tokens // 128) * 64
    return {
        "inputTokens": in_tokens - cached,
        "outputTokens": out_tokens,
        "cacheReadTokens": cached,
        "reasoningTokens": max(0, len(reply.reasoning) // 4),
    }


def _compaction_range(nodes: list, keep_last: int) -> tuple[int, int]:
    """Surface positions [first, last] to shadow: a prefix whose tool calls are all answered."""
    limit = len(nodes) - keep_last
    balance, last = 0, -1
    for i, (_, message) in enumerate(nodes[:limit]):
        for block in (message or {}).get("content", []):
            if message["role"] == "assistant" and block.get("type") == "tool-call":
                balance += 1
            elif block.get("type") == "tool-result":
                balance -= 1
        if balance == 0:
            last = i
    if last < 0:
        raise ValueError("no safe compaction cut on the current surface")
    return 0, last


def _render_transcript(messages: list) -> str:
    lines = []
    for message in messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind in ("text", "reasoning"):
                lines.append(f"{message['role'].capitalize()}: {block['text']}")
            elif kind == "tool-call":
                lines.append(f"Assistant called {block['name']} with {block['arguments']}")
            elif kind == "tool-result":
                texts = " ".join(b.get("text", "") for b in block["content"])
                lines.append(f"Tool result: {texts}")
    return "Condense this part of the conversation:\n\n" + "\n".join(lines)


def _summarize_request(plan: Compaction, messages: list) -> dict:
    request: dict = {
        "model": plan.model,
        "system": COMPACT_SYSTEM,
        "messages": [{"role": "user", "content": text_content(_render_transcript(messages))}],
    }
    if plan.max_tokens is not None:
        request["maxTokens"] = plan.max_tokens
    return request
