"""A tiny seed-era log writer for rule tests: exact events, no simulation.

Tests that need a realistic session use ``invariants.simulate.seed_era``; tests that
need one precise violation build it here, event by event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

TOOLS = [
    {"name": "read", "description": "read a file", "parameters": {"type": "object"}},
    {"name": "bash", "description": "run a command", "parameters": {"type": "object"}},
]
HEADER = {"config": {"model": "m1"}, "system": "line A\nline B\nline C", "tools": TOOLS}


class Log:
    def __init__(self, session_id: str = "s1", **header: Any) -> None:
        self.header = {"type": "session", "version": 0, "id": session_id, "createdAt": 1_700_000_000_000, **header}
        self.events: list[dict] = []
        self.requests: list[dict] = []

    @property
    def seq(self) -> int:
        return len(self.events)

    def add(self, type_: str, data: Any, **extra: Any) -> int:
        ev = {"type": type_, "seq": self.seq, "time": 1_700_000_000_000 + self.seq, "data": data, **extra}
        self.events.append(ev)
        return ev["seq"]

    # -- vocabulary ------------------------------------------------------------
    def turn_start(self, turn: int) -> int:
        return self.add("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})

    def turn_end(self, turn: int) -> int:
        return self.add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})

    def user(self, text: str, **extra: Any) -> int:
        extra.setdefault("surfaceOp", "append")
        return self.add(
            "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, **extra
        )

    def step_start(self, turn: int, step: int) -> int:
        return self.add("step/start", {"turn": turn, "step": step})

    def step_end(self, turn: int, step: int) -> int:
        return self.add("step/end", {"turn": turn, "step": step})

    def snapshot(self, reason: str = "initial", header: dict | None = None) -> int:
        return self.add("request/header", {"header": header if header is not None else HEADER, "reason": reason})

    def delta(self, payload: Any) -> int:
        return self.add("request/header-delta", payload)

    def chunk(self, turn: int, step: int, text: str = "hi") -> int:
        return self.add(
            "assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": text}}
        )

    def assistant(self, turn: int, step: int, content: list, sources: list[int] | None = None) -> int:
        extra: dict = {"surfaceOp": "append"}
        if sources:
            extra["sourceEventSeqs"] = sources
        return self.add("assistant/message", {"turn": turn, "step": step, "content": content}, **extra)

    def tool_call(self, turn: int, step: int, call_id: str, name: str = "read") -> int:
        return self.add("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": "{}"})

    def tool_result(self, turn: int, step: int, call_id: str, call_seq: int | None = None, **data: Any) -> int:
        payload = {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "content": [{"type": "text", "text": "ok"}],
            "isError": False,
            **data,
        }
        extra: dict = {"surfaceOp": "append"}
        if call_seq is not None:
            extra["sourceEventSeqs"] = [call_seq]
        return self.add("tool/result", payload, **extra)

    def simple_step(
        self, turn: int, step: int, text: str = "hello", header_reason: str | None = None, header: dict | None = None
    ) -> None:
        """step/start, optional header snapshot, one chunk, assistant message, step/end."""
        self.step_start(turn, step)
        if header_reason:
            self.snapshot(header_reason, header)
        c = self.chunk(turn, step, text)
        self.assistant(turn, step, [{"type": "text", "text": text}], [c])
        self.step_end(turn, step)

    def clean_turn(
        self, turn: int, text: str = "hi", header_reason: str | None = None, header: dict | None = None
    ) -> None:
        self.turn_start(turn)
        self.user(text)
        self.simple_step(turn, 1, f"answer {turn}", header_reason, header)
        self.turn_end(turn)

    # -- output ------------------------------------------------------------------
    def lines(self) -> list[bytes]:
        return [orjson.dumps(self.header)] + [orjson.dumps(e) for e in self.events]

    def write(self, path: Path) -> Path:
        path.write_bytes(b"\n".join(self.lines()) + b"\n")
        return path

    def write_requests(self, path: Path, requests: list[dict]) -> Path:
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in requests))
        return path
