"""A deterministic stand-in for the seed-era dsh agent loop, used to make test logs.

The checker needs session logs whose every byte is known in advance, and request
captures that were *not* computed from those logs, so that comparing the two
proves something.  This module records sessions the way the harness's seed-era
loop does (``loop.ts``/``request-log.ts`` @ d060c0dd4f; LOG-FORMAT.md §2, §4,
§5.1, §8) plus the short-lived ``messageSuffix`` shape of 17bd71e530.  For every
model request it also writes a capture line (CAPTURE-FORMAT.md) whose messages
come from the simulator's own running conversation, an oracle independent of
any derivation over the log.

Randomness is seeded and the clock is fake, so output is byte-stable.
``python -m invariants.simulate.seed_era OUTDIR`` regenerates the committed samples, and
:func:`generate_large` streams benchmark-sized logs to disk.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from invariants.replay.header_codec import apply_delta, canonical, diff_header, header_equals
from invariants.simulate.sample import Sample

EPOCH_MS = 1_783_900_800_000  # 2026-07-13T00:00:00Z, the last day of the seed era
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


def _dump(value: Any) -> bytes:
    """``JSON.stringify`` bytes: no spaces, key order kept, UTF-8 unescaped."""
    return orjson.dumps(value)


def _clone(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


# --------------------------------------------------------------------------- clock, ids, sinks


class Clock:
    """Epoch milliseconds that only move when told, by seeded amounts."""

    def __init__(self, start_ms: int, rng: random.Random):
        self.now = start_ms
        self._rng = rng

    def tick(self, lo: int = 0, hi: int = 1) -> int:
        self.now += self._rng.randint(lo, hi)
        return self.now


class World:
    """The randomness and clock shared by every session of one scenario."""

    def __init__(self, seed: int, start_ms: int = EPOCH_MS):
        self.rng = random.Random(seed)
        self.clock = Clock(start_ms, self.rng)

    def session_id(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"

    def call_id(self, index: int) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return f"call_{index:02d}_" + "".join(self.rng.choice(alphabet) for _ in range(24))


class MemoryLines:
    """JSONL lines kept in memory, so faults can be injected before writing."""

    keeps_history = True

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, obj: Any) -> None:
        self.lines.append(_dump(obj))

    def write_raw(self, line: bytes) -> None:
        self.lines.append(line)

    def getvalue(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)

    def close(self) -> None:
        pass


class FileLines:
    """JSONL lines streamed straight to a file (benchmark logs)."""

    keeps_history = False

    def __init__(self, path: str | Path):
        self._fh = open(path, "wb")

    def write(self, obj: Any) -> None:
        self._fh.write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))

    def write_raw(self, line: bytes) -> None:
        self._fh.write(line + b"\n")

    def close(self) -> None:
        self._fh.close()


class NullLines:
    keeps_history = False

    def write(self, obj: Any) -> None:
        pass

    def write_raw(self, line: bytes) -> None:
        pass

    def close(self) -> None:
        pass


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


# --------------------------------------------------------------------------- fault injection


def _edit_line(lines: list[bytes], index: int, edit: Callable[[dict], Any]) -> Any:
    obj = orjson.loads(lines[index])
    result = edit(obj)
    lines[index] = _dump(obj)
    return result


def diverge_message_text(capture_lines: list[bytes], index: int, message: int, suffix: str = " (edited)") -> str:
    """Change the first text block of ``messages[message]`` in one capture line; return its path."""

    def edit(obj: dict) -> str:
        content = obj["request"]["messages"][message]["content"]
        block = next(i for i, b in enumerate(content) if b.get("type") == "text")
        content[block]["text"] += suffix
        return f"messages[{message}].content[{block}].text"

    return _edit_line(capture_lines, index, edit)


def diverge_request_field(capture_lines: list[bytes], index: int, key: str, value: Any) -> str:
    """Set a header-derived request field (model, temperature, ...) in one capture line."""

    def edit(obj: dict) -> None:
        obj["request"][key] = value

    _edit_line(capture_lines, index, edit)
    return f"request.{key}"


def reorder_message_keys(capture_lines: list[bytes], index: int, message: int) -> str:
    """Reverse the key order of one message object: same JSON value, different bytes."""

    def edit(obj: dict) -> None:
        messages = obj["request"]["messages"]
        messages[message] = dict(reversed(list(messages[message].items())))

    _edit_line(capture_lines, index, edit)
    return f"messages[{message}]"


def corrupt_delta_remove_unknown_tool(log_lines: list[bytes], seq: int, tool: str) -> None:
    """Make the tools arm of the delta at ``seq`` remove a tool that is not in force."""

    def edit(obj: dict) -> None:
        assert obj["type"] == "request/header-delta", obj["type"]
        arm = obj["data"].setdefault("tools", {"added": [], "removed": [], "changed": []})
        arm["removed"].append(tool)

    _edit_line(log_lines, seq + 1, edit)


def tear_last_line(data: bytes) -> bytes:
    """Cut the file in the middle of its last line, as a crash during that write would."""
    body = data[:-1] if data.endswith(b"\n") else data
    start = body.rfind(b"\n") + 1
    return body[: start + (len(body) - start) // 2]


# --------------------------------------------------------------------------- sample content


def _tool(name: str, description: str, props: dict, required: list) -> dict:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": required},
    }


def _string(description: str) -> dict:
    return {"type": "string", "description": description}


BASH = _tool(
    "bash",
    "Run a command with `bash -c` and return its output. A non-zero exit is shown as `[exit code: N]`.",
    {
        "command": _string("The command line to run."),
        "description": _string("Five to ten words on what the command does."),
    },
    ["command", "description"],
)
READ = _tool(
    "read",
    "Read a UTF-8 text file; lines come back numbered.",
    {
        "file_path": _string("Path of the file to read."),
        "offset": {"type": "number", "description": "First line to return, 1-based."},
        "limit": {"type": "number", "description": "How many lines to return."},
    },
    ["file_path"],
)
WRITE = _tool(
    "write",
    "Create a file or replace all of its content.",
    {"file_path": _string("Path of the file to write."), "content": _string("The full new content.")},
    ["file_path", "content"],
)
EDIT = _tool(
    "edit",
    "Replace one literal piece of text in an existing file.",
    {
        "file_path": _string("Path of the file to edit."),
        "old_string": _string("Exact text to replace."),
        "new_string": _string("Text to put in its place."),
    },
    ["file_path", "old_string", "new_string"],
)
GREP = _tool(
    "grep",
    "Search files for a regular expression and list the matching lines.",
    {"pattern": _string("The regular expression."), "path": _string("Directory to search.")},
    ["pattern"],
)
SKILL = _tool(
    "skill",
    "Load the full instructions of a skill listed in the session's skill catalog.",
    {"name": _string("The skill's exact name.")},
    ["name"],
)
SUBAGENT_FORK = _tool(
    "subagent_fork",
    "Hand a task to a child agent that starts from this conversation's "
    "finished turns; only its final answer comes back.",
    {"description": _string("Three to five words for display."), "prompt": _string("What the child should do.")},
    ["description", "prompt"],
)

CWD = "/home/dev/project"
SYSTEM = "\n".join(
    [
        "You are an AI agent powered by the DeepSeek Harness SDK.",
        "",
        f"You are a coding assistant. Your working directory is {CWD}.",
        "",
        "Check your changes by running the code or its tests. Answer briefly and stick to facts.",
        "",
        "Prefer the read tool over shell commands such as cat when you look at text files.",
        "",
        "Every bash result ends with an [exit code: N] marker; look into failures before moving on.",
    ]
)
MOCK_SYSTEM = "You are an AI agent powered by the DeepSeek Harness SDK.\n\nsimulated persona"


def skills_prefix(skills: list[tuple[str, str]]) -> list:
    """A session prefix like the skills catalog the harness composes."""
    lines = [
        "<system-reminder>",
        "Skills are reusable task instructions. This session can load:",
        "",
        "<available_skills>",
        *[f"- `{n}`: {d}" for n, d in skills],
        "</available_skills>",
        "",
        "Call the `skill` tool with the exact name before acting on a task that matches a skill.",
        "</system-reminder>",
    ]
    return [{"role": "user", "content": text_content("\n".join(lines))}]


def _bash(command: str, description: str, output: str, code: int = 0) -> ToolCall:
    return ToolCall(
        "bash", {"command": command, "description": description}, f"{output}[exit code: {code}]", is_error=code != 0
    )


# --------------------------------------------------------------------------- samples


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def _single(name: str, **kwargs: Any) -> tuple[World, SessionRecorder]:
    world = World(_seed(name))
    rec = SessionRecorder(
        world, MemoryLines(), MemoryLines(), session_id=world.session_id(), session_file=f"{name}.jsonl", **kwargs
    )
    return world, rec


def _files(name: str, rec: SessionRecorder) -> dict[str, bytes]:
    return {f"{name}.jsonl": rec.log.getvalue(), f"{name}.requests.jsonl": rec.capture.getvalue()}


def _mock_turn(rec: SessionRecorder, prompt: str, answer: str) -> None:
    rec.user_turn(prompt)
    rec.step(Reply(text=answer))
    rec.end_turn()


def _script_clean(rec: SessionRecorder) -> None:
    """Three turns: a bash call, two parallel reads, an edit and a failing test run."""
    rec.start_instance(prefix=skills_prefix([("release-notes", "Draft release notes from the git log.")]))
    rec.user_turn("How many Python files are there under src/? Count them with bash.")
    rec.step(
        Reply(
            reasoning="The user wants the number of Python files in src. I will list them and count lines.",
            calls=[_bash("ls src/*.py | wc -l", "Count Python files in src", "3\n")],
        )
    )
    rec.step(Reply(reasoning="The count came back as 3.", text="There are 3 Python files under src/."))
    rec.end_turn()
    rec.user_turn("Read src/app.py and src/util.py and tell me what util provides.")
    rec.step(
        Reply(
            reasoning="Two independent reads; I can ask for both at once.",
            calls=[
                ToolCall(
                    "read", {"file_path": "src/app.py"}, "1\tfrom util import slugify\n2\tprint(slugify('A B'))\n"
                ),
                ToolCall(
                    "read",
                    {"file_path": "src/util.py"},
                    "1\tdef slugify(text):\n2\t    return text.lower().replace(' ', '-')\n",
                ),
            ],
        )
    )
    rec.step(
        Reply(
            text="util.py provides `slugify`, which lowercases text and turns spaces into dashes; app.py prints a slug."
        )
    )
    rec.end_turn()
    rec.user_turn("Give slugify a docstring and run the tests.")
    rec.step(
        Reply(
            reasoning="Edit the function, then run pytest.",
            calls=[
                ToolCall(
                    "edit",
                    {
                        "file_path": "src/util.py",
                        "old_string": "def slugify(text):\n",
                        "new_string": 'def slugify(text):\n    """Lowercase text and join its words with dashes."""\n',
                    },
                    "Edited src/util.py (1 replacement).",
                )
            ],
        )
    )
    rec.step(
        Reply(
            calls=[
                _bash(
                    "python -m pytest -q",
                    "Run the test suite",
                    "F.\nFAILED tests/test_util.py::test_unicode - AssertionError\n",
                    code=1,
                )
            ]
        )
    )
    rec.step(
        Reply(
            reasoning="One failure, unrelated to the docstring: it is about unicode input.",
            text="The docstring is in. One test fails (`test_unicode`), and it fails without my change too.",
        )
    )
    rec.end_turn()


def sample_clean() -> Sample:
    name = "clean-multi-turn"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, EDIT, SKILL])
    _script_clean(rec)
    return Sample(
        name,
        "clean three-turn session: reasoning, bash, two parallel reads, an edit, a failing "
        "test run; skills-catalog messagePrefix",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_steering() -> Sample:
    name = "steering-injection"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, GREP], chunk_style="mock")
    rec.start_instance()
    rec.user_turn("Find every TODO in the repository.", context=("project uses tabs", plugin("hooks-claude")))
    rec.step(
        Reply(
            text="Searching.",
            calls=[ToolCall("grep", {"pattern": "TODO", "path": "."}, "src/app.py:3: # TODO: handle errors\n")],
        ),
        context_after=[("grep skipped 2 binary files", plugin("native-guard"))],
        steer_after=["actually, only look in tests/"],
    )
    rec.step(Reply(calls=[ToolCall("grep", {"pattern": "TODO", "path": "tests"}, "(no matches)\n")]))
    rec.step(Reply(text="There are no TODOs under tests/."))
    rec.end_turn()
    rec.inject_idle("file changed: src/app.py", plugin("watcher"))
    rec.user_turn("Write a long design note about the error handling.")
    rec.step(
        Reply(
            calls=[ToolCall("bash", {"command": "cat docs/errors.md", "description": "Show the error doc"})],
            finish="max-tokens",
        )
    )
    rec.end_turn()
    rec.user_turn("Keep it short then: one sentence.")
    rec.step(
        Reply(text="Errors are raised as typed exceptions and reported once, at the top level."),
        steer_before=[("keep going: answer the question", plugin("hooks-codex"))],
    )
    rec.end_turn()
    return Sample(
        name,
        "steering after tool results and before a step, prompt-submit and post-execute "
        "context/messages, an idle injection turn, a max-tokens step whose only block was a "
        "dropped tool call (empty-content assistant/message)",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_system() -> Sample:
    name = "delta-system"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH], chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.system = MOCK_SYSTEM + "\n\nAn extra section appended to the system prompt."
    _mock_turn(rec, "turn 2: a section is appended", "ok 2")
    rec.system = rec.system.replace("simulated persona", "simulated persona, revised")
    _mock_turn(rec, "turn 3: a middle line changes", "ok 3")
    rec.system = rec.system.split("\n\nAn extra")[0]
    _mock_turn(rec, "turn 4: the section is removed", "ok 4")
    rec.system = None
    _mock_turn(rec, "turn 5: no system prompt at all", "ok 5")
    rec.system = MOCK_SYSTEM
    _mock_turn(rec, "turn 6: the system prompt is back", "ok 6")
    return Sample(
        name,
        "system-prompt deltas: append a section, change a middle line, remove the section, drop the prompt, restore it",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_tools() -> Sample:
    name = "delta-tools"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH, READ, WRITE], chunk_style="mock")
    rec.start_instance()
    rec.user_turn("turn 1 uses a tool")
    rec.step(Reply(text="reading", calls=[ToolCall("read", {"file_path": "a.txt"}, "1\thello\n")]))
    rec.step(Reply(text="a.txt says hello"))
    rec.end_turn()
    rec.tools = [BASH, READ, WRITE, GREP]
    _mock_turn(rec, "turn 2: grep is added", "ok 2")
    rec.tools = [BASH, READ, GREP]
    _mock_turn(rec, "turn 3: write is removed", "ok 3")
    rec.tools = [dict(BASH, description=BASH["description"] + " Output is cut to its last 2000 lines."), READ, GREP]
    _mock_turn(rec, "turn 4: bash is redescribed", "ok 4")
    rec.tools = [rec.tools[0], dict(GREP, description="Search file contents."), EDIT]
    _mock_turn(rec, "turn 5: read removed, grep changed, edit added", "ok 5")
    return Sample(
        name,
        "tools deltas: added, removed, changed, and all three arms at once",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_config() -> Sample:
    name = "delta-config"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.config = {"model": "mock", "temperature": 0.2}
    _mock_turn(rec, "turn 2: temperature set", "ok 2")
    rec.config = {"model": "mock-b", "temperature": 0.2, "maxTokens": 512, "stop": ["END"]}
    _mock_turn(rec, "turn 3: model switch, maxTokens and stop", "ok 3")
    rec.config = {"model": "mock-b", "temperature": 0.2, "maxTokens": 512, "stop": []}
    _mock_turn(rec, "turn 4: stop becomes an empty list, which differs from absent", "ok 4")
    rec.config = {"model": "mock"}
    _mock_turn(rec, "turn 5: back to the bare config", "ok 5")
    return Sample(
        name,
        "config deltas: temperature, model/maxTokens/stop, stop [] versus absent, back to bare",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_delta_prefix() -> Sample:
    name = "delta-message-prefix"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", chunk_style="mock", framing="per-step")
    rec.start_instance()
    # A constant suffix marks the 17bd71e530 shape: without one the log would read as
    # d060c0dd4f, where the prefix is composed once per loop instance and cannot change.
    rec.request_suffix = [{"role": "user", "content": text_content("<state>clean worktree</state>")}]
    rec.request_prefix = [{"role": "user", "content": text_content("<reminder>catalog: alpha</reminder>")}]
    _mock_turn(rec, "turn 1", "ok 1")
    rec.request_prefix = rec.request_prefix + [
        {"role": "user", "content": text_content("<reminder>catalog: beta</reminder>")}
    ]
    _mock_turn(rec, "turn 2: the prefix grows", "ok 2")
    rec.request_prefix = []
    _mock_turn(rec, "turn 3: the prefix is cleared", "ok 3")
    rec.request_prefix = [{"role": "user", "content": text_content("<reminder>catalog: gamma</reminder>")}]
    _mock_turn(rec, "turn 4: a new prefix", "ok 4")
    # Legal here: in the 17bd71e530 shape the prefix came from a per-step waterfall.
    return Sample(
        name,
        "messagePrefix deltas in the 17bd71e530 per-step shape, with a constant messageSuffix "
        "(prefix grows, is cleared with [], comes back)",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_prefix_unstable() -> Sample:
    name = "prefix-unstable"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", chunk_style="mock")
    rec.start_instance([{"role": "user", "content": text_content("<reminder>skills: alpha</reminder>")}])
    _mock_turn(rec, "turn 1", "ok 1")
    # A plugin recomposes the prefix mid-instance: from ea4c10d753 on the prefix
    # is composed once per loop instance, so this is instability, not drift.
    assert rec.instance is not None
    rec.instance.prefix = [{"role": "user", "content": text_content("<reminder>skills: alpha, beta</reminder>")}]
    _mock_turn(rec, "turn 2: the prefix changed without a resume", "ok 2")
    changes = [
        {"kind": "prefix-changed-in-instance", "seq": e["seq"], "turn": turn, "severity": "error"}
        for turn, e in _prefix_deltas(rec)
    ]
    return Sample(
        name,
        "the session prefix changes inside one loop instance (a messagePrefix delta without a resume)",
        _files(name, rec),
        {f"{name}.jsonl": changes},
    )


def _prefix_deltas(rec: SessionRecorder) -> list[tuple[int, dict]]:
    """(turn, event) for every delta with a messagePrefix arm in an in-memory log."""
    out, turn = [], 0
    for event in map(orjson.loads, rec.log.lines[1:]):
        if event["type"] == "turn/start":
            turn = event["data"]["turn"]
        elif event["type"] == "request/header-delta" and "messagePrefix" in event["data"]:
            out.append((turn, event))
    return out


def sample_fallback() -> Sample:
    name = "fallback-tool-reorder"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH, READ, WRITE], chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.tools = [WRITE, BASH, READ]
    _mock_turn(rec, "turn 2: the same tools, rotated", "ok 2")
    head = rec.seq
    rec.tools = [WRITE, GREP, BASH, READ]
    _mock_turn(rec, "turn 3: a tool inserted in the middle", "ok 3")
    rec.tools = [WRITE, GREP, BASH]
    _mock_turn(rec, "turn 4: a plain removal, which a delta can express", "ok 4")
    log = [orjson.loads(line) for line in rec.log.lines[1:]]
    fallbacks = [e["seq"] for e in log if e["type"] == "request/header" and e["data"]["reason"] == "fallback"]
    assert len(fallbacks) == 2 and fallbacks[1] > head
    notes = [{"kind": "fallback-snapshot", "seq": s, "severity": "info"} for s in fallbacks]
    return Sample(
        name,
        "pure tool reorder and a mid-list insertion, both logged as fallback snapshots; then a removal delta",
        _files(name, rec),
        {f"{name}.jsonl": notes},
    )


def sample_resume_drift() -> Sample:
    name = "resume-prefix-drift"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, SKILL])
    rec.start_instance(prefix=skills_prefix([("release-notes", "Draft release notes from the git log.")]))
    rec.user_turn("What does the Makefile's default target do?")
    rec.step(Reply(calls=[ToolCall("read", {"file_path": "Makefile"}, "1\tall: test\n2\ttest:\n3\t\tpytest -q\n")]))
    rec.step(Reply(text="The default target `all` runs the tests (`pytest -q`)."))
    rec.end_turn()
    _deepseek_turn(rec, "Thanks. Is there a lint target?", "No, the Makefile has only `all` and `test`.")
    rec.start_instance(
        prefix=skills_prefix(
            [
                ("release-notes", "Draft release notes from the git log."),
                ("changelog", "Keep CHANGELOG.md in the project's format."),
            ]
        )
    )
    rec.user_turn("I'm back. Add a lint target that runs ruff.")
    drift_seq = rec.seq + 1  # step/start, then the resume snapshot
    rec.step(
        Reply(
            calls=[
                ToolCall(
                    "edit",
                    {"file_path": "Makefile", "old_string": "test:\n", "new_string": "lint:\n\truff check .\ntest:\n"},
                    "Edited Makefile.",
                )
            ]
        )
    )
    rec.step(Reply(text="Added `lint`, which runs `ruff check .`."))
    rec.end_turn()
    rec.start_instance(
        prefix=skills_prefix(
            [
                ("release-notes", "Draft release notes from the git log."),
                ("changelog", "Keep CHANGELOG.md in the project's format."),
            ]
        )
    )
    _deepseek_turn(rec, "Restarted again; does `make lint` pass?", "I have not run it yet; say if you want me to.")
    return Sample(
        name,
        "three loop instances: the second composes a bigger skills catalog (prefix drift in its "
        "resume snapshot), the third resumes with an unchanged header",
        _files(name, rec),
        {f"{name}.jsonl": [{"kind": "prefix-drift-at-resume", "seq": drift_seq, "turn": 3, "severity": "warning"}]},
    )


def _deepseek_turn(rec: SessionRecorder, prompt: str, answer: str, reasoning: str = "") -> None:
    rec.user_turn(prompt)
    rec.step(Reply(reasoning=reasoning, text=answer))
    rec.end_turn()


def sample_fork() -> Sample:
    name = "fork"
    world = World(_seed(name))
    capture = MemoryLines()
    parent_id = world.session_id()
    parent = SessionRecorder(
        world, MemoryLines(), capture, session_id=parent_id, cwd=CWD, system=SYSTEM, tools=[BASH, READ, SUBAGENT_FORK]
    )
    prefix = skills_prefix([("release-notes", "Draft release notes from the git log.")])
    parent.start_instance(prefix=prefix)
    _deepseek_turn(
        parent,
        "Remember this: the release codename is MARMALADE. Reply OK.",
        "OK",
        reasoning="The user wants me to keep a codename in mind.",
    )
    parent.user_turn("Use subagent_fork to ask a child what the release codename is.")
    call = ToolCall(
        "subagent_fork",
        {"description": "Recall the codename", "prompt": "What is the release codename? Answer with the word only."},
    )
    child_id = world.session_id()
    parent_step = Reply(reasoning="Delegate to a forked child, which sees the finished turns.", calls=[call])
    child: SessionRecorder | None = None

    def run_child() -> str:
        nonlocal child
        child = parent.fork(session_id=child_id)
        child.tools = [BASH, READ]  # a child cannot fork again: its resume snapshot differs
        child.start_instance(prefix=prefix)
        _deepseek_turn(child, call.arguments["prompt"], "MARMALADE")
        return "MARMALADE"

    call.result = run_child
    parent.step(parent_step)
    parent.step(Reply(text="The child answered MARMALADE."))
    parent.end_turn()
    _deepseek_turn(parent, "Great. Now forget it.", "Done.")
    assert child is not None
    files = {
        f"fork/{parent_id}.jsonl": parent.log.getvalue(),
        f"fork/{child_id}.jsonl": child.log.getvalue(),
        "fork/requests.jsonl": capture.getvalue(),
    }
    resume_seq = next(
        e["seq"]
        for e in map(orjson.loads, child.log.lines[1:])
        if e["type"] == "request/header" and e["data"]["reason"] == "resume"
    )
    child_notes = [
        {"kind": "header-drift-at-resume", "seq": resume_seq, "turn": 2, "path": "tools", "severity": "info"}
    ]
    return Sample(
        name,
        "a parent whose tool call forks a child at its last turn/end; the child (no "
        "subagent_fork tool) logs a resume snapshot; one requests.jsonl for both",
        files,
        {f"fork/{parent_id}.jsonl": [], f"fork/{child_id}.jsonl": child_notes},
    )


def sample_compaction() -> Sample:
    name = "compaction"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH])
    rec.start_instance()
    rec.user_turn("Run the five migration steps one at a time.")
    for i in range(3):
        rec.step(
            Reply(
                text=f"Running step {i}.",
                calls=[_bash(f"./migrate.sh {i}", f"Run migration step {i}", f"step {i} applied\n")],
            )
        )
    rec.step(
        Reply(text="Running step 3.", calls=[_bash("./migrate.sh 3", "Run migration step 3", "step 3 applied\n")]),
        compact=Compaction("Steps 0-2 of the migration ran cleanly via ./migrate.sh.", keep_last=2),
    )
    rec.step(Reply(text="Running step 4.", calls=[_bash("./migrate.sh 4", "Run migration step 4", "step 4 applied\n")]))
    rec.step(Reply(text="All five migration steps are applied."))
    rec.end_turn()
    rec.user_turn("Summarize what changed.")
    rec.step(
        Reply(text="Five migration steps ran, 0 through 4, each reporting success."),
        compact=Compaction("The migration (steps 0-4) ran cleanly; the user asked for a summary.", keep_last=1),
    )
    rec.end_turn()
    return Sample(
        name,
        "two compactions in agent/pre-step (the second shadows the first summary), with the "
        "summarize one-shots captured as loopBuilt:false",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_suffix() -> Sample:
    name = "message-suffix"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ], framing="per-step")
    rec.start_instance()
    rec.request_prefix = skills_prefix([("release-notes", "Draft release notes from the git log.")])

    def state(files: int) -> list:
        return [{"role": "user", "content": text_content(f"<state>open editors: {files}</state>")}]

    rec.request_suffix = state(1)
    rec.user_turn("Open the README and check the install section.")
    rec.step(
        Reply(calls=[ToolCall("read", {"file_path": "README.md"}, "1\t# Demo\n2\t## Install\n3\tpip install demo\n")])
    )
    rec.request_suffix = state(2)
    rec.step(Reply(text="The install section says `pip install demo`."))
    rec.end_turn()
    rec.user_turn("And the version?")
    rec.step(
        Reply(calls=[_bash("python -c 'import demo; print(demo.__version__)'", "Print the package version", "1.4.0\n")])
    )
    rec.request_suffix = []
    rec.step(Reply(text="Version 1.4.0."))
    rec.end_turn()
    rec.request_suffix = state(3)
    _deepseek_turn(rec, "Thanks.", "You're welcome.")
    return Sample(
        name,
        "17bd71e530 shape: header carries messagePrefix and messageSuffix; the suffix changes "
        "per step (deltas, one clearing it with [])",
        _files(name, rec),
        {f"{name}.jsonl": []},
    )


def sample_capture_divergence() -> Sample:
    name = "capture-divergence"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, EDIT, SKILL])
    rec.config = {"model": DEFAULT_MODEL, "temperature": 0.2}
    _script_clean(rec)
    lines = rec.capture.lines
    first, second = orjson.loads(lines[2]), orjson.loads(lines[4])
    text_path = diverge_message_text(lines, 2, message=1)
    field_path = diverge_request_field(lines, 4, "temperature", 0.7)
    faults = [
        {
            "kind": "messages-diverge",
            "turn": first["turn"],
            "step": first["step"],
            "logLength": first["logLength"],
            "captureLine": 3,
            "path": text_path,
            "severity": "error",
        },
        {
            "kind": "header-field-diverges",
            "turn": second["turn"],
            "step": second["step"],
            "logLength": second["logLength"],
            "captureLine": 5,
            "path": field_path,
            "severity": "error",
        },
    ]
    return Sample(
        name,
        "clean log; its capture has one request whose message text differs and one whose "
        "temperature differs from the header",
        _files(name, rec),
        {f"{name}.jsonl": faults},
    )


def sample_capture_key_order() -> Sample:
    name = "capture-key-order"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ, EDIT, SKILL])
    _script_clean(rec)
    line = orjson.loads(rec.capture.lines[3])
    path = reorder_message_keys(rec.capture.lines, 3, message=2)
    return Sample(
        name,
        "clean log; one capture line writes a message with its keys in another order (same JSON value)",
        _files(name, rec),
        {
            f"{name}.jsonl": [
                {
                    "kind": "key-order-only",
                    "turn": line["turn"],
                    "step": line["step"],
                    "captureLine": 4,
                    "path": path,
                    "severity": "warning",
                }
            ]
        },
    )


def sample_corrupt_delta() -> Sample:
    name = "corrupt-delta"
    _, rec = _single(name, system=MOCK_SYSTEM, model="mock", tools=[BASH, READ], chunk_style="mock")
    rec.start_instance()
    _mock_turn(rec, "turn 1", "ok 1")
    rec.tools = [BASH, READ, GREP]
    rec.user_turn("turn 2: grep is added")
    delta_seq = rec.seq + 1
    rec.step(Reply(text="ok 2"))
    rec.end_turn()
    _mock_turn(rec, "turn 3", "ok 3")
    corrupt_delta_remove_unknown_tool(rec.log.lines, delta_seq, "write")
    return Sample(
        name,
        "the tools delta of turn 2 also removes `write`, a tool that is not in force",
        _files(name, rec),
        {
            f"{name}.jsonl": [
                {
                    "kind": "delta-does-not-apply",
                    "seq": delta_seq,
                    "turn": 2,
                    "path": "data.tools.removed",
                    "severity": "error",
                }
            ]
        },
    )


def _crash_turn(rec: SessionRecorder, prompt: str, calls: list[ToolCall]) -> None:
    rec.user_turn(prompt)
    try:
        rec.step(Reply(reasoning="Run it.", calls=calls))
    except SimulatedCrash:
        return
    raise AssertionError("the scripted crash did not happen")


def sample_torn_tail() -> Sample:
    name = "torn-tail"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH])
    rec.start_instance()
    _deepseek_turn(rec, "Say hi.", "Hi.")
    _deepseek_turn(rec, "Say bye.", "Bye.")
    crash = ToolCall("bash", {"command": "make -j8", "description": "Build everything"}, CRASH)
    _crash_turn(rec, "Run the slow build.", [crash])
    torn_seq = rec.seq - 1
    files = _files(name, rec)
    files[f"{name}.jsonl"] = tear_last_line(files[f"{name}.jsonl"])
    return Sample(
        name,
        "the process died while writing the tool/call line of an open third turn: the file "
        "ends mid-line with no newline",
        files,
        {
            f"{name}.jsonl": [
                {"kind": "torn-tail", "seq": torn_seq, "turn": 3, "severity": "warning"},
                {"kind": "open-turn-at-end", "turn": 3, "step": 1, "severity": "info"},
            ]
        },
    )


def sample_repaired_resume() -> Sample:
    name = "repaired-resume"
    _, rec = _single(name, cwd=CWD, system=SYSTEM, tools=[BASH, READ])
    rec.start_instance()
    _deepseek_turn(rec, "Which Python is installed?", "Python 3.11.")
    _crash_turn(
        rec,
        "Run the benchmarks and read the report.",
        [
            ToolCall("bash", {"command": "make bench", "description": "Run the benchmarks"}, CRASH),
            ToolCall("read", {"file_path": "bench/report.txt"}, "never read"),
        ],
    )
    rec.repair()
    rec.start_instance()
    _deepseek_turn(
        rec,
        "The machine rebooted. Did the benchmarks finish?",
        "No: the run was interrupted before it reported anything.",
    )
    return Sample(
        name,
        "a crash during the first of two tool calls, the store's repair closers (one result "
        "with and one without sourceEventSeqs, step/end, turn/end interrupted), then a resumed instance",
        _files(name, rec),
        {f"{name}.jsonl": [{"kind": "interrupted-turn-repaired", "turn": 2, "severity": "info"}]},
    )


SAMPLES: list[Callable[[], Sample]] = [
    sample_clean,
    sample_steering,
    sample_delta_system,
    sample_delta_tools,
    sample_delta_config,
    sample_delta_prefix,
    sample_prefix_unstable,
    sample_fallback,
    sample_resume_drift,
    sample_fork,
    sample_compaction,
    sample_suffix,
    sample_capture_divergence,
    sample_capture_key_order,
    sample_corrupt_delta,
    sample_torn_tail,
    sample_repaired_resume,
]


_WORDS = (
    "the build cache test module parser config token stream request header step turn file path error "
    "result value branch merge commit review patch index schema field record event chunk delta window "
    "budget limit retry timeout worker queue session prefix summary context tool call output input"
).split()


def _prose(rng: random.Random, words: int) -> str:
    picked = [rng.choice(_WORDS) for _ in range(words)]
    return " ".join(picked).capitalize() + "."


def _large_reply(rng: random.Random, final: bool) -> Reply:
    reasoning = _prose(rng, rng.randint(30, 120))
    if final:
        return Reply(reasoning=reasoning, text=_prose(rng, rng.randint(20, 80)))
    calls = [
        _bash(f"./task.sh {rng.randint(0, 999)}", "Run one task", _prose(rng, rng.randint(5, 40)) + "\n")
        for _ in range(rng.randint(1, 2))
    ]
    return Reply(reasoning=reasoning, text=_prose(rng, rng.randint(3, 12)), calls=calls)


def _vary_header(rec: SessionRecorder, turn_index: int, every: int) -> None:
    """Every ``every`` turns change the system prompt, tool list or config (a delta each time)."""
    phase = (turn_index // every) % 4
    if turn_index == 0 or turn_index % every:
        return
    if phase == 0:
        rec.system = SYSTEM + f"\n\nReminder {turn_index}: keep answers short."
    elif phase == 1:
        rec.tools = (
            [t for t in rec.tools if t["name"] != "grep"]
            if any(t["name"] == "grep" for t in rec.tools)
            else [*rec.tools, GREP]
        )
    elif phase == 2:
        rec.config = {"model": DEFAULT_MODEL, "temperature": round(0.1 * (turn_index % 7), 1)}
    else:
        rec.config = {"model": DEFAULT_MODEL}


def generate_large(
    path_log: str | Path,
    path_capture: str | Path | None,
    *,
    events: int = 100_000,
    steps: int = 1_000,
    seed: int = 0,
    resume_every: int = 20,
    change_every: int = 8,
    compact_over: int = 40,
) -> dict:
    """Stream a seed-era log of at least ``events`` events and ``steps`` steps to disk.

    Many chunks per step (one per word or two), tool calls, compaction whenever
    the surface passes ``compact_over`` nodes (which also bounds the capture lines), a new
    loop instance with a grown prefix every ``resume_every`` turns and a header
    change (a delta) every ``change_every`` turns.  Only the current
    conversation is held in memory.  ``path_capture=None`` skips captures.
    Returns counts.
    """
    world = World(seed)
    log = FileLines(path_log)
    capture = FileLines(path_capture) if path_capture is not None else NullLines()
    rec = SessionRecorder(
        world,
        log,
        capture,
        session_id=world.session_id(),
        session_file=Path(path_log).name,
        cwd=CWD,
        system=SYSTEM,
        tools=[BASH, READ, EDIT],
    )
    done_steps = turns = instances = 0
    try:
        while rec.seq < events or done_steps < steps:
            if turns % resume_every == 0:
                instances += 1
                rec.start_instance(
                    prefix=skills_prefix([(f"skill-{i}", _prose(world.rng, 6)) for i in range(instances)])
                )
            _vary_header(rec, turns, change_every)
            turns += 1
            rec.user_turn(_prose(world.rng, world.rng.randint(8, 30)))
            n = world.rng.randint(1, 4)
            for k in range(n):
                compact = None
                if rec.surface_size() > compact_over:
                    compact = Compaction(_prose(world.rng, 40), keep_last=6, record_request=False)
                rec.step(_large_reply(world.rng, final=k == n - 1), compact=compact)
                done_steps += 1
            rec.end_turn()
    finally:
        log.close()
        capture.close()
    return {"events": rec.seq, "steps": done_steps, "turns": turns, "instances": instances, "requests": rec.requests}
