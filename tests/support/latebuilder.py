"""A HEAD-era log writer for late-era rule tests: exact events, HEAD shapes.

Messages are identified objects (``user/message`` data *is* the message;
``assistant/message`` and ``tool/result`` wrap one), ``turn/start`` has no
trigger, headers carry a provider, and a step's user messages follow its
``step/start`` (LOG-FORMAT.md §5.2, §6, §9).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

TOOLS = [{"name": "read", "description": "read a file", "parameters": {"type": "object"}}]
HEADER = {"config": {"provider": "p", "model": "m"}, "system": "sys", "tools": TOOLS}


class LateLog:
    def __init__(self, session_id: str = "late-1", **header: Any) -> None:
        self.header = {
            "type": "session",
            "version": 0,
            "id": session_id,
            "createdAt": 1_786_000_000_000,
            "delegationDepth": 0,
            **header,
        }
        self.events: list[dict] = []
        self.messages: list[dict] = []  # the conversation as the loop holds it (oracle for captures)
        self.requests: list[dict] = []
        self._ids = 0

    @property
    def seq(self) -> int:
        return len(self.events)

    def add(self, type_: str, data: Any, **extra: Any) -> int:
        ev = {"type": type_, "seq": self.seq, "time": 1_786_000_000_000 + self.seq, "data": data, **extra}
        self.events.append(ev)
        return ev["seq"]

    def mid(self) -> str:
        self._ids += 1
        return f"m{self._ids}"

    # -- vocabulary ------------------------------------------------------------
    def turn_start(self, turn: int) -> int:
        return self.add("turn/start", {"turn": turn})

    def turn_end(self, turn: int, kind: str = "completed") -> int:
        return self.add("turn/end", {"turn": turn, "reason": {"kind": kind}})

    def step_start(self, turn: int, step: int) -> int:
        return self.add("step/start", {"turn": turn, "step": step})

    def step_end(self, turn: int, step: int) -> int:
        return self.add("step/end", {"turn": turn, "step": step})

    def user(self, text: str, **extra: Any) -> int:
        msg = {
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
            "role": "user",
            "id": self.mid(),
        }
        extra.setdefault("surfaceOp", "append")
        self.messages.append(msg)
        return self.add("user/message", msg, **extra)

    def snapshot(self, reason: str = "initial", header: dict | None = None) -> int:
        return self.add("request/header", {"header": header if header is not None else HEADER, "reason": reason})

    def chunk(self, turn: int, step: int, text: str = "hi") -> int:
        return self.add(
            "assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": text}}
        )

    def assistant(self, turn: int, step: int, blocks: list, sources: list[int] | None = None) -> int:
        msg = {
            "role": "assistant",
            "content": blocks,
            "source": {"kind": "model", "provider": "p", "model": "m"},
            "id": self.mid(),
        }
        if blocks:
            self.messages.append(msg)
        extra: dict = {"surfaceOp": "append"}
        if sources is not None:
            extra["sourceEventSeqs"] = sources
        return self.add("assistant/message", {"turn": turn, "step": step, "message": msg}, **extra)

    def tool_call(self, turn: int, step: int, call_id: str, name: str = "read") -> int:
        return self.add("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": "{}"})

    def tool_result(
        self,
        turn: int,
        step: int,
        call_id: str,
        call_seq: int | None = None,
        text: str = "ok",
        error: dict | None = None,
        is_error: bool = False,
        surface_op: Any = "append",
    ) -> int:
        msg = {
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": [{"type": "text", "text": text}],
                    "isError": is_error,
                }
            ],
            "role": "user",
            "id": self.mid(),
        }
        data: dict = {"turn": turn, "step": step, "message": msg}
        if error is not None:
            data["error"] = error
        extra: dict = {"surfaceOp": surface_op}
        if call_seq is not None:
            extra["sourceEventSeqs"] = [call_seq]
        if surface_op == "append":
            self.messages.append(msg)
        return self.add("tool/result", data, **extra)

    def request(self, turn: int, step: int, header: dict | None = None, **overrides: Any) -> dict:
        """A capture line for a dispatch now: HEAD request = config spread, messages, system, tools."""
        h = header if header is not None else HEADER
        req = {
            **h["config"],
            "messages": list(self.messages),
            **{k: h[k] for k in ("system", "tools") if k in h},
            **overrides,
        }
        line = {
            "sessionId": self.header["id"],
            "logLength": self.seq,
            "turn": turn,
            "step": step,
            "loopBuilt": True,
            "request": req,
        }
        self.requests.append(line)
        return line

    def step(
        self,
        turn: int,
        step: int,
        prompt: str | None = None,
        reply: str = "hello",
        header_reason: str | None = "initial",
        header: dict | None = None,
        capture: bool = True,
    ) -> None:
        """step/start, the prompt (after step/start, HEAD order), header, dispatch, one chunk, the reply, step/end."""
        self.step_start(turn, step)
        if prompt is not None:
            self.user(prompt)
        if header_reason is not None:
            self.snapshot(header_reason, header)
        if capture:
            self.request(turn, step, header)
        c = self.chunk(turn, step, reply)
        self.assistant(turn, step, [{"type": "text", "text": reply}], [c])
        self.step_end(turn, step)

    def lines(self) -> list[bytes]:
        return [orjson.dumps(self.header)] + [orjson.dumps(e) for e in self.events]

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(line + b"\n" for line in self.lines()))
        return path

    def write_requests(self, path: Path) -> Path:
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in self.requests))
        return path


def one_turn(log: LateLog | None = None, prompt: str = "hi") -> LateLog:
    log = log or LateLog()
    log.turn_start(1)
    log.step(1, 1, prompt)
    log.turn_end(1)
    return log
