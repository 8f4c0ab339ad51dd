"""A tiny seed-era log writer for the TUI tests, and helpers to drive the app.

The TUI tests need small logs whose every feature is known: a delta at a
given step, a resume whose prefix drifts, a capture with one diverging
request, hostile text.  :class:`LogBuilder` writes such a log event by event
the way the harness's loop does (step/start, header event, chunks, the
assistant message, step/end); :func:`write_capture` writes the capture by
asking the library for the rebuilt request of each step and applying the
test's edits, so only the edits can diverge.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any, Callable

import orjson

from invariants.read.source import LogSource
from invariants.replay.header_codec import canonical, diff_header
from invariants.replay.session import replay

SYSTEM = "You are a test agent.\n\nAnswer briefly."
TOOLS = [
    {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    },
]


def skills_prefix(names: list[str]) -> list[dict]:
    catalog = "\n".join(f"- `{n}`: a skill" for n in names)
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": f"<system-reminder>\nSkills:\n{catalog}\n</system-reminder>"}],
        }
    ]


def base_header(prefix: list | None = None, **config: Any) -> dict:
    header: dict = {"config": {"model": "test-model", **config}, "system": SYSTEM, "tools": copy.deepcopy(TOOLS)}
    if prefix:
        header["messagePrefix"] = prefix
    return header


class LogBuilder:
    """Write a seed-era session log event by event."""

    def __init__(
        self, session_id: str = "tui-session", cwd: str = "/home/dev/project", created: int = 1783900800000
    ) -> None:
        self.lines: list[bytes] = [
            orjson.dumps({"type": "session", "version": 0, "id": session_id, "createdAt": created, "cwd": cwd})
        ]
        self.id = session_id
        self.seq = 0
        self.time = created
        self.turn = 0
        self.step_no = 0
        self.header: dict | None = None
        self.step_seqs: list[int] = []  # seq of each step/start, in order

    def event(self, type_: str, data: Any, *, surface_op: Any = None, source_seqs: list | None = None) -> int:
        self.time += 1
        ev: dict = {"type": type_, "seq": self.seq, "time": self.time, "data": data}
        if source_seqs is not None:
            ev["sourceEventSeqs"] = source_seqs
        if surface_op is not None:
            ev["surfaceOp"] = surface_op
        self.lines.append(orjson.dumps(ev))
        self.seq += 1
        return self.seq - 1

    def user_turn(self, text: str) -> int:
        self.turn += 1
        self.step_no = 0
        self.event("turn/start", {"turn": self.turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})
        return self.event(
            "user/message",
            {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
            surface_op="append",
        )

    def step(
        self, reply: str = "Done.", *, snapshot: tuple[dict, str] | None = None, delta_to: dict | None = None
    ) -> int:
        """One step: an optional header snapshot ``(header, reason)`` or delta to ``delta_to``, then a reply."""
        self.step_no += 1
        t, s = self.turn, self.step_no
        start = self.event("step/start", {"turn": t, "step": s})
        self.step_seqs.append(start)
        if snapshot is not None:
            header, reason = snapshot
            self.event("request/header", {"header": header, "reason": reason})
            self.header = canonical(header)
        elif delta_to is not None:
            assert self.header is not None
            new = canonical(delta_to)
            delta = diff_header(self.header, new)
            assert delta, "delta_to must change the header"
            self.event("request/header-delta", delta)
            self.header = new
        words = reply.split(" ")
        pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
        chunks = [
            self.event(
                "assistant/chunk",
                {"turn": t, "step": s, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
            )
        ]
        for p in pieces:
            chunks.append(
                self.event(
                    "assistant/chunk", {"turn": t, "step": s, "chunk": {"type": "text-delta", "index": 0, "text": p}}
                )
            )
        chunks.append(
            self.event(
                "assistant/chunk",
                {
                    "turn": t,
                    "step": s,
                    "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": reply}},
                },
            )
        )
        chunks.append(
            self.event(
                "assistant/chunk", {"turn": t, "step": s, "chunk": {"type": "finish", "reason": {"kind": "stop"}}}
            )
        )
        self.event(
            "assistant/message",
            {"turn": t, "step": s, "content": [{"type": "text", "text": reply}]},
            surface_op="append",
            source_seqs=chunks,
        )
        self.event("step/end", {"turn": t, "step": s})
        return start

    def end_turn(self) -> None:
        self.event("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})

    def text(self) -> bytes:
        return b"\n".join(self.lines) + b"\n"

    def write(self, path: Path) -> Path:
        path.write_bytes(self.text())
        return path


def write_capture(log: Path, capture: Path, edits: dict[int, Callable[[dict], None]] | None = None) -> Path:
    """One capture line per dispatched step: the library's rebuilt request, with ``edits[step index]`` applied."""
    model = replay(LogSource(log, log.parent))
    out = []
    for st in model.steps:
        if st.first_chunk_seq is None:
            continue
        exp = model.rebuild_request(st, st.first_chunk_seq)
        assert exp is not None
        request = copy.deepcopy(exp.request)
        if edits and st.index in edits:
            edits[st.index](request)
        out.append(
            orjson.dumps(
                {
                    "sessionId": model.id,
                    "sessionFile": log.name,
                    "logLength": st.first_chunk_seq,
                    "turn": st.turn,
                    "step": st.step,
                    "loopBuilt": True,
                    "request": request,
                }
            )
        )
    capture.write_bytes(b"\n".join(out) + b"\n")
    return capture


def story_log(folder: Path, hostile: str | None = None) -> tuple[Path, Path]:
    """The session most tests use (6 steps, 3 loop instances):

    turn 1: step 1.1 initial snapshot; step 1.2 a system delta
    turn 2: step 2.1 (its capture diverges at messages[2].content[0].text)
    turn 3: step 3.1 resume snapshot whose prefix drifts (a new skill); 3.2 a tools delta
    turn 4: step 4.1 resume with the same header
    """
    b = LogBuilder("story-session")
    h0 = base_header(skills_prefix(["release-notes"]), temperature=0.2)
    b.user_turn(hostile or "How many Python files are there under src/?")
    b.step("Let me count them.", snapshot=(h0, "initial"))
    h1 = copy.deepcopy(h0)
    h1["system"] = SYSTEM + "\n\nA section added by a delta."
    b.step("There are 12 files.", delta_to=h1)
    b.end_turn()
    b.user_turn("And under tests/?")
    b.step("There are 4 test files.")
    b.end_turn()
    h2 = copy.deepcopy(h1)
    h2["messagePrefix"] = skills_prefix(["release-notes", "changelog"])
    b.user_turn("I'm back. Write the changelog.")
    b.step("Loading the changelog skill.", snapshot=(h2, "resume"))
    h3 = copy.deepcopy(h2)
    h3["tools"] = h3["tools"] + [
        {"name": "edit", "description": "Edit a file.", "parameters": {"type": "object", "properties": {}}}
    ]
    b.step("Changelog written.", delta_to=h3)
    b.end_turn()
    b.user_turn("Thanks, that is all.")
    b.step("You are welcome.", snapshot=(h3, "resume"))
    b.end_turn()
    log = b.write(folder / "story.jsonl")

    def edit(request: dict) -> None:
        request["messages"][2]["content"][0]["text"] += " (edited)"

    cap = write_capture(log, folder / "story.requests.jsonl", {2: edit})
    return log, cap


async def settle(pilot: Any, rounds: int = 3) -> None:
    """Let workers finish and their messages be handled."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        # a --follow watcher runs until the app exits: never wait for it
        # (and an empty list would mean "all workers" to wait_for_complete)
        busy = [w for w in app.workers if w.group != "follow"]
        if busy:
            await app.workers.wait_for_complete(busy)
    await pilot.pause()


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)
