"""Session logs for tests: one builder for both eras, the captures beside them, generated roots.

:class:`Log` writes a log event by event, exactly as the test says (no
simulation), in the seed era's shapes or HEAD's (``era="late"``: identified
message objects, ``turn/start`` without a trigger, the prompt after
``step/start``; LOG-FORMAT.md §5.2, §6, §9).  Its vocabulary names events with
explicit turn and step numbers (``turn_start(1)``, ``simple_step(1, 2)``); the
recorder calls (``user_turn``, ``streamed_step``, ``end_turn``) number them
itself and stream a reply the way the loop does.

:func:`write_capture` records a capture from the library's rebuilt requests
(so only a test's edits can diverge); :func:`story_log` is the session the TUI
tests open; :func:`seq_of` finds an event by content, so no test hard-codes
the seqs of a log it did not write event by event.  :func:`make_root` and
:func:`growing_session` write sessions recorded by ``invariants.simulate``
(every step real, captures independent of our derivation) in the harness's
directory layout, for the index tests.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from invariants.read.source import LogSource
from invariants.read.zstdio import write_frames
from invariants.replay.header_codec import canonical, diff_header
from invariants.replay.session import replay
from invariants.simulate.content import BASH, CWD, READ, SYSTEM
from invariants.simulate.faults import diverge_message_text
from invariants.simulate.late_era import sample_late_sqlite, sample_late_zstd
from invariants.simulate.recorder import Reply, SessionRecorder, ToolCall
from invariants.simulate.world import MemoryLines, World

SEED_TOOLS = [
    {"name": "read", "description": "read a file", "parameters": {"type": "object"}},
    {"name": "bash", "description": "run a command", "parameters": {"type": "object"}},
]
SEED_HEADER = {"config": {"model": "m1"}, "system": "line A\nline B\nline C", "tools": SEED_TOOLS}
LATE_TOOLS = [{"name": "read", "description": "read a file", "parameters": {"type": "object"}}]
LATE_HEADER = {"config": {"provider": "p", "model": "m"}, "system": "sys", "tools": LATE_TOOLS}

_ERAS = {
    # era: (default session id, default createdAt, default request header)
    "seed": ("s1", 1_700_000_000_000, SEED_HEADER),
    "late": ("late-1", 1_786_000_000_000, LATE_HEADER),
}


class Log:
    """One session log, written event by event.

    Event ``seq`` is its index and its ``time`` is ``created + 1 + seq``.
    ``header`` is the session line; ``requests`` the capture lines
    :meth:`request` recorded; in the late era ``messages`` is the conversation
    as the loop holds it (what a request sends).
    """

    def __init__(self, session_id: str | None = None, *, era: str = "seed", created: int | None = None, **header: Any):
        default_id, default_created, self.request_header = _ERAS[era]
        self.era = era
        self.created = default_created if created is None else created
        self.header: dict[str, Any] = {
            "type": "session",
            "version": 0,
            "id": default_id if session_id is None else session_id,
            "createdAt": self.created,
            **({"delegationDepth": 0} if era == "late" else {}),
            **header,
        }
        self.events: list[dict] = []
        self.requests: list[dict] = []
        self.messages: list[dict] = []
        self.turn = 0  # the last turn started (the recorder calls number from it)
        self.step_no = 0  # the last step started in that turn
        self.header_in_force: dict | None = None  # the last snapshot's header, or the last delta's target
        self._ids = 0

    @property
    def id(self) -> str:
        return self.header["id"]

    @property
    def seq(self) -> int:
        """The seq the next event gets."""
        return len(self.events)

    def add(self, type_: str, data: Any, **extra: Any) -> int:
        """Any event: the envelope, then ``extra`` keys in the order given."""
        ev = {"type": type_, "seq": self.seq, "time": self.created + 1 + self.seq, "data": data, **extra}
        self.events.append(ev)
        return ev["seq"]

    def _message_id(self) -> str:
        self._ids += 1
        return f"m{self._ids}"

    @staticmethod
    def _surface(sources: list[int] | None, surface_op: Any) -> dict[str, Any]:
        """The surface keys in the harness's order: sourceEventSeqs, then surfaceOp."""
        extra: dict[str, Any] = {}
        if sources is not None:
            extra["sourceEventSeqs"] = sources
        extra["surfaceOp"] = surface_op
        return extra

    # -- events, with explicit turn and step numbers --------------------------------
    def turn_start(self, turn: int) -> int:
        self.turn, self.step_no = turn, 0
        if self.era == "late":
            return self.add("turn/start", {"turn": turn})
        return self.add("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})

    def turn_end(self, turn: int, kind: str = "completed") -> int:
        return self.add("turn/end", {"turn": turn, "reason": {"kind": kind}})

    def step_start(self, turn: int, step: int) -> int:
        self.step_no = step
        return self.add("step/start", {"turn": turn, "step": step})

    def step_end(self, turn: int, step: int) -> int:
        return self.add("step/end", {"turn": turn, "step": step})

    def user(self, text: str, **extra: Any) -> int:
        extra.setdefault("surfaceOp", "append")
        if self.era == "late":
            msg = {
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "user"},
                "role": "user",
                "id": self._message_id(),
            }
            self.messages.append(msg)
            return self.add("user/message", msg, **extra)
        return self.add(
            "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, **extra
        )

    def snapshot(self, reason: str = "initial", header: dict | None = None) -> int:
        """A ``request/header`` snapshot of ``header`` (the era's default header when None)."""
        header = self.request_header if header is None else header
        self.header_in_force = header
        return self.add("request/header", {"header": header, "reason": reason})

    def delta(self, payload: Any) -> int:
        return self.add("request/header-delta", payload)

    def chunk(self, turn: int, step: int, text: str = "hi", *, chunk: dict | None = None) -> int:
        """An ``assistant/chunk``: a text delta of ``text``, or ``chunk`` as given."""
        body = {"type": "text-delta", "index": 0, "text": text} if chunk is None else chunk
        return self.add("assistant/chunk", {"turn": turn, "step": step, "chunk": body})

    def assistant(self, turn: int, step: int, content: list, sources: list[int] | None = None, **data: Any) -> int:
        """An ``assistant/message`` of ``content`` (``data`` keys, e.g. ``usage``, are set on its data last)."""
        if self.era == "late":
            msg = {
                "role": "assistant",
                "content": content,
                "source": {"kind": "model", "provider": "p", "model": "m"},
                "id": self._message_id(),
            }
            if content:
                self.messages.append(msg)
            payload: dict = {"turn": turn, "step": step, "message": msg}
        else:
            payload = {"turn": turn, "step": step, "content": content}
        payload.update(data)
        return self.add("assistant/message", payload, **self._surface(sources, "append"))

    def tool_call(self, turn: int, step: int, call_id: str, name: str = "read") -> int:
        return self.add("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": "{}"})

    def tool_result(
        self,
        turn: int,
        step: int,
        call_id: Any,
        call_seq: int | None = None,
        *,
        text: str = "ok",
        is_error: bool = False,
        error: dict | None = None,
        surface_op: Any = "append",
        **data: Any,
    ) -> int:
        """A ``tool/result`` for ``call_id`` (``data`` keys are set on the event's data last)."""
        content = [{"type": "text", "text": text}]
        if self.era == "late":
            msg = {
                "source": {"kind": "tool", "callId": call_id},
                "content": [{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": is_error}],
                "role": "user",
                "id": self._message_id(),
            }
            payload: dict = {"turn": turn, "step": step, "message": msg}
            if surface_op == "append":
                self.messages.append(msg)
        else:
            payload = {"turn": turn, "step": step, "callId": call_id, "content": content, "isError": is_error}
        if error is not None:
            payload["error"] = error
        payload.update(data)
        sources = [call_seq] if call_seq is not None else None
        return self.add("tool/result", payload, **self._surface(sources, surface_op))

    def request(self, turn: int, step: int, header: dict | None = None, **overrides: Any) -> dict:
        """A capture line for a dispatch now, as HEAD sends it: config spread, messages, system, tools."""
        assert self.era == "late", "only HEAD's request shape is built here; seed tests write theirs"
        h = self.request_header if header is None else header
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

    # -- whole steps and turns, with explicit numbers -------------------------------
    def simple_step(
        self,
        turn: int,
        step: int,
        reply: str = "hello",
        *,
        prompt: str | None = None,
        header_reason: str | None = None,
        header: dict | None = None,
        capture: bool = False,
    ) -> None:
        """step/start, the prompt, a header snapshot, the captured dispatch, one chunk, the reply, step/end."""
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

    def clean_turn(
        self,
        turn: int,
        text: str = "hi",
        *,
        reply: str | None = None,
        header_reason: str | None = None,
        header: dict | None = None,
        capture: bool = False,
    ) -> None:
        """A turn of one step answering ``text`` (the prompt before step/start, or after it in the late era)."""
        self.turn_start(turn)
        if self.era == "seed":
            self.user(text)
        prompt = text if self.era == "late" else None
        reply = f"answer {turn}" if reply is None else reply
        self.simple_step(turn, 1, reply, prompt=prompt, header_reason=header_reason, header=header, capture=capture)
        self.turn_end(turn)

    # -- the recorder: numbered turns and steps, streamed replies -------------------
    def user_turn(self, text: str) -> int:
        """turn/start of the next turn and its prompt; returns the prompt's seq."""
        assert self.era == "seed", "HEAD puts the prompt after step/start: use simple_step(prompt=...)"
        self.turn_start(self.turn + 1)
        return self.user(text)

    def streamed_step(
        self,
        reply: str = "Done.",
        *,
        header_reason: str | None = None,
        header: dict | None = None,
        delta_to: dict | None = None,
    ) -> int:
        """The next step of this turn: a header snapshot or a delta to ``delta_to``, the reply streamed
        word by word (block-start, text deltas, block-end, finish), the message, step/end.
        Returns the step/start seq."""
        t, s = self.turn, self.step_no + 1
        start = self.step_start(t, s)
        if header_reason is not None:
            self.snapshot(header_reason, header)
        elif delta_to is not None:
            assert self.header_in_force is not None, "a delta needs a snapshot before it"
            delta = diff_header(canonical(self.header_in_force), canonical(delta_to))
            assert delta, "delta_to must change the header"
            self.delta(delta)
            self.header_in_force = delta_to
        words = reply.split(" ")
        chunks = [self.chunk(t, s, chunk={"type": "block-start", "index": 0, "blockType": "text"})]
        chunks += [self.chunk(t, s, w if i == 0 else " " + w) for i, w in enumerate(words)]
        chunks.append(
            self.chunk(t, s, chunk={"type": "block-end", "index": 0, "block": {"type": "text", "text": reply}})
        )
        chunks.append(self.chunk(t, s, chunk={"type": "finish", "reason": {"kind": "stop"}}))
        self.assistant(t, s, [{"type": "text", "text": reply}], chunks)
        self.step_end(t, s)
        return start

    def end_turn(self) -> int:
        return self.turn_end(self.turn)

    def fork(self, child_id: str) -> Log:
        """A child forked here: its seed is every event so far, its header names this log as parent."""
        extra = {k: v for k, v in self.header.items() if k not in ("type", "version", "id", "createdAt")}
        child = Log(child_id, era=self.era, created=self.created, **extra)
        child.header.update(parentSession=self.id, seedLength=self.seq)
        child.events = copy.deepcopy(self.events)
        child.turn, child.step_no, child.header_in_force = self.turn, self.step_no, self.header_in_force
        return child

    # -- output ---------------------------------------------------------------------
    def lines(self) -> list[bytes]:
        """The session line and one line per event, without newlines."""
        return [orjson.dumps(self.header)] + [orjson.dumps(e) for e in self.events]

    def text(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines())

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.text())
        return path

    def write_requests(self, path: Path, requests: list[dict] | None = None) -> Path:
        """A capture file of ``requests`` (default: the lines :meth:`request` recorded)."""
        lines = self.requests if requests is None else requests
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
        return path


USAGE = {"inputTokens": 10, "outputTokens": 5}


def streamed_steps() -> Log:
    """A turn of two streamed steps, each: 30 text deltas, a usage chunk, 5 more, a block start and end,
    a finish (the chunk kinds a run may hold), then the message and the step's end."""
    log = Log()
    log.turn_start(1)
    log.user("hi")
    for step in (1, 2):
        log.step_start(1, step)
        if step == 1:
            log.snapshot()
        seqs = [log.chunk(1, step, f" w{i}") for i in range(30)]
        log.add("assistant/chunk", {"turn": 1, "step": step, "chunk": {"type": "usage", "usage": USAGE}})
        seqs += [log.chunk(1, step, f" v{i}") for i in range(5)]
        log.chunk(1, step, chunk={"type": "block-start", "index": 1, "blockType": "text"})
        log.chunk(1, step, chunk={"type": "block-end", "block": {"type": "text", "text": "w"}})
        log.chunk(1, step, chunk={"type": "finish", "reason": {"kind": "stop"}})
        log.assistant(1, step, [{"type": "text", "text": "w"}], seqs)
        log.step_end(1, step)
    log.turn_end(1)
    return log


def one_turn(log: Log | None = None, prompt: str = "hi") -> Log:
    """The late-era session most late tests start from: one turn, one captured step answering ``prompt``."""
    log = Log(era="late") if log is None else log
    log.clean_turn(1, prompt, reply="hello", header_reason="initial", capture=True)
    return log


def seq_of(
    log: Log | Path, type_: str, *, text: str | None = None, has: tuple[str, ...] = (), nth: int = 0, **data: Any
) -> int:
    """The seq of the ``nth`` event of ``type_`` whose data holds the keys ``has`` and the values
    ``data`` gives and, with ``text``, a ``text`` member equal to it anywhere inside (a content
    block, a chunk, a message)."""
    if isinstance(log, Log):
        events = log.events
    else:
        events = [orjson.loads(line) for line in log.read_bytes().splitlines()[1:]]
    hits = [
        e["seq"]
        for e in events
        if e["type"] == type_
        and isinstance(e["data"], dict)
        and all(k in e["data"] for k in has)
        and all(e["data"].get(k) == v for k, v in data.items())
        and (text is None or _has_text(e["data"], text))
    ]
    assert len(hits) > nth, f"no event #{nth} of type {type_} with keys {has}, {data}, text {text!r}: {hits}"
    return hits[nth]


def _has_text(value: Any, text: str) -> bool:
    if isinstance(value, dict):
        return value.get("text") == text or any(_has_text(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_has_text(v, text) for v in value)
    return False


# -- captures from the library's rebuilt requests, and the TUI's story session ---------

STORY_SYSTEM = "You are a test agent.\n\nAnswer briefly."
STORY_TOOLS = [
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
STORY_CREATED = 1783900800000  # 2026-07-13 00:00 UTC: the date the TUI shows


def story_session(session_id: str, cwd: str = "/home/dev/project", created: int = STORY_CREATED) -> Log:
    """An empty seed-era log dated and placed like the story (what the TUI tests open)."""
    return Log(session_id, created=created, cwd=cwd)


def story_steps(session_id: str, steps: int) -> Log:
    """A story log of one turn of ``steps`` streamed steps (the first with the initial header), ended:
    the log a followed session grows from, and a timeline longer than a screen."""
    b = story_session(session_id)
    b.user_turn("q")
    b.streamed_step("a", header_reason="initial", header=story_header())
    for i in range(steps - 1):
        b.streamed_step(f"reply {i}")
    b.end_turn()
    return b


def skills_prefix(names: list[str]) -> list[dict]:
    catalog = "\n".join(f"- `{n}`: a skill" for n in names)
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": f"<system-reminder>\nSkills:\n{catalog}\n</system-reminder>"}],
        }
    ]


def story_header(prefix: list | None = None, **config: Any) -> dict:
    header: dict = {
        "config": {"model": "test-model", **config},
        "system": STORY_SYSTEM,
        "tools": copy.deepcopy(STORY_TOOLS),
    }
    if prefix:
        header["messagePrefix"] = prefix
    return header


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


STORY_DIVERGES_AT = "messages[2].content[0].text"  # where step 2.1's capture was edited


def story_log(folder: Path, hostile: str | None = None) -> tuple[Path, Path]:
    """The session most TUI tests use (6 steps, 3 loop instances):

    turn 1: step 1.1 initial snapshot; step 1.2 a system delta
    turn 2: step 2.1 (its capture diverges at messages[2].content[0].text)
    turn 3: step 3.1 resume snapshot whose prefix drifts (a new skill); 3.2 a tools delta
    turn 4: step 4.1 resume with the same header
    """
    b = story_session("story-session")
    h0 = story_header(skills_prefix(["release-notes"]), temperature=0.2)
    b.user_turn(hostile or "How many Python files are there under src/?")
    b.streamed_step("Let me count them.", header_reason="initial", header=h0)
    h1 = copy.deepcopy(h0)
    h1["system"] = STORY_SYSTEM + "\n\nA section added by a delta."
    b.streamed_step("There are 12 files.", delta_to=h1)
    b.end_turn()
    b.user_turn("And under tests/?")
    b.streamed_step("There are 4 test files.")
    b.end_turn()
    h2 = copy.deepcopy(h1)
    h2["messagePrefix"] = skills_prefix(["release-notes", "changelog"])
    b.user_turn("I'm back. Write the changelog.")
    b.streamed_step("Loading the changelog skill.", header_reason="resume", header=h2)
    h3 = copy.deepcopy(h2)
    h3["tools"] = h3["tools"] + [
        {"name": "edit", "description": "Edit a file.", "parameters": {"type": "object", "properties": {}}}
    ]
    b.streamed_step("Changelog written.", delta_to=h3)
    b.end_turn()
    b.user_turn("Thanks, that is all.")
    b.streamed_step("You are welcome.", header_reason="resume", header=h3)
    b.end_turn()
    log = b.write(folder / "story.jsonl")

    def edit(request: dict) -> None:
        request["messages"][2]["content"][0]["text"] += " (edited)"

    cap = write_capture(log, folder / "story.requests.jsonl", {2: edit})
    return log, cap


LONG_SYSTEM = " ".join(
    f"Rule {i}: answer the user in plain words, cite the file you read, and never run a command nobody asked for."
    for i in range(1, 41)
)


def long_system_log(folder: Path) -> tuple[Path, Path]:
    """One step whose recorded system prompt (4,270 characters) differs from the log's in one word in the middle."""
    b = story_session("long-system")
    header = story_header()
    header["system"] = LONG_SYSTEM
    b.user_turn("What does rule 20 say?")
    b.streamed_step("It says to answer in plain words.", header_reason="initial", header=header)
    b.end_turn()
    log = b.write(folder / "long-system.jsonl")

    def edit(request: dict) -> None:
        request["system"] = request["system"].replace(
            "Rule 20: answer the user in plain", "Rule 20: answer the user in terse"
        )

    cap = write_capture(log, folder / "long-system.requests.jsonl", {0: edit})
    return log, cap


# -- recorded sessions in the harness layout (for the index tests) ---------------------

PROJECTS = ("--home-dev-project--", "--srv-app--")


@dataclass
class Written:
    sid: str
    folder: Path
    log: Path
    lines: list[bytes]
    capture: list[bytes] = field(default_factory=list)
    steps: int = 0


def _recorded_turns(rec: SessionRecorder, rng: random.Random, turns: int) -> int:
    steps = 0
    for t in range(turns):
        rec.user_turn(f"Task {t}: count the files and explain the result in a few words.")
        n = rng.randint(1, 3)
        for k in range(n):
            last = k == n - 1
            if last:
                reply = Reply(
                    reasoning="Summarise what the tool said. " * rng.randint(1, 3),
                    text=f"There are {rng.randint(1, 99)} files; nothing else to do here.",
                )
            else:
                reply = Reply(
                    reasoning="I should run a command first, then read the result carefully.",
                    text="Running it.",
                    calls=[
                        ToolCall(
                            "bash",
                            {"command": f"ls | wc -l # {t}.{k}", "description": "count"},
                            result=f"{rng.randint(1, 99)}\n",
                        )
                    ],
                )
            rec.step(reply)
            steps += 1
        rec.end_turn()
    return steps


def recorded_session(world: World, sid: str, turns: int) -> tuple[SessionRecorder, int]:
    """A session the seed-era recorder writes (log and capture in memory) and its step count."""
    rec = SessionRecorder(
        world,
        MemoryLines(),
        MemoryLines(),
        session_id=sid,
        session_file="session.jsonl",
        cwd=CWD,
        system=SYSTEM,
        tools=[BASH, READ],
    )
    rec.start_instance(prefix=[])
    steps = _recorded_turns(rec, world.rng, turns)
    return rec, steps


def write_lines(path: Path, lines: list[bytes]) -> None:
    """Lines as a log file: plain, or (``.zstd``) the header frame then one frame per 40 lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".zstd"):
        body = [lines[0] + b"\n"] + [
            b"".join(line + b"\n" for line in lines[i : i + 40]) for i in range(1, len(lines), 40)
        ]
        write_frames(path, body)
    else:
        path.write_bytes(b"".join(line + b"\n" for line in lines))


def make_root(root: Path, n: int = 8, seed: int = 7, turns: int = 3) -> dict[str, Written]:
    """``n`` recorded sessions (plus a forked child) under ``root``; what was written, by session id.

    Session 1 is compressed, session 2's capture diverges, session 3 has no capture.
    """
    world = World(seed)
    out: dict[str, Written] = {}
    for i in range(n):
        sid = world.session_id()
        project = PROJECTS[i % len(PROJECTS)]
        rec, steps = recorded_session(world, sid, turns)
        folder = root / project / sid
        name = "session.jsonl.zstd" if i == 1 else "session.jsonl"
        cap = list(rec.capture.lines)
        if i == 2:  # an edited capture line: a request divergence
            diverge_message_text(cap, 0, 0)
        w = Written(sid, folder, folder / name, list(rec.log.lines), cap if i != 3 else [], steps)
        write_lines(w.log, w.lines)
        if w.capture:
            write_lines(folder / "requests.jsonl", w.capture)
        out[sid] = w
        if i == 0:  # a forked child of the first session, in its own folder
            child_id = world.session_id()
            child = rec.fork(session_id=child_id, capture=MemoryLines())
            child.start_instance(prefix=[])
            csteps = _recorded_turns(child, world.rng, 1)
            cf = root / project / child_id
            cw = Written(
                child_id, cf, cf / "session.jsonl", list(child.log.lines), list(child.capture.lines), steps + csteps
            )  # the seed holds the parent's steps
            write_lines(cw.log, cw.lines)
            write_lines(cf / "requests.jsonl", cw.capture)
            out[child_id] = cw
    return out


def add_late(root: Path) -> list[Path]:
    """Late-era sessions from ``invariants.simulate.late_era``: a zstd log in the project/session
    layout with its capture, and a SQLite session database holding a parent and its fork."""
    written = []
    for sample in (sample_late_zstd(), sample_late_sqlite()):
        for rel, data in sample.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
    return written


def growing_session(world_seed: int = 11, turns: int = 12) -> tuple[str, list[bytes], list[bytes], list[int]]:
    """A long recorded session: (id, log lines, capture lines, log line count after each turn/end)."""
    world = World(world_seed)
    sid = world.session_id()
    rec, _ = recorded_session(world, sid, turns)
    ends = [i + 1 for i, line in enumerate(rec.log.lines) if b'"type":"turn/end"' in line]
    return sid, list(rec.log.lines), list(rec.capture.lines), ends


def capture_lines_before(capture: list[bytes], log_length: int) -> list[bytes]:
    """Capture lines dispatched while the log had at most ``log_length`` events."""
    return [line for line in capture if orjson.loads(line).get("logLength", 0) <= log_length]
