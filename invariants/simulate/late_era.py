"""Late-era (HEAD 611615650f) sample sessions: the current harness's storage forms.

A small recorder that writes sessions the way HEAD's agent loop does
(``agent.ts``: ``step/start``, the step's claimed ``user/message`` events,
``deriveMessages()``, ``request/header`` when needed, ``request/context``
when the route changes, dispatch; LOG-FORMAT.md §5.2, §6, §9), with
identified message objects, retries inside a step (``llm/retry`` /
``llm/retry-started``), inbox splices outside turns and ``session/end-seed``
on resume.  Each request's capture line carries messages taken from the
recorder's own conversation list, not from a derivation over the log.

The samples are stored like the current backends store them: a
``--<project>--/<id>/session.jsonl.zstd`` session with chunk runs packed into
rows and one zstd frame per append batch, the same kind of session torn
inside its last frame by a crash, and a schema-17 SQLite database holding a
parent and its forked child.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import orjson

from invariants.analysis.forks import encode_id
from invariants.read.chunk_rows import pack_events
from invariants.read.zstdio import write_frames
from invariants.simulate.convert import project_key
from invariants.simulate.sample import Sample

PROVIDER = "deepseek-official"
MODEL = "deepseek-v4-flash"
PRO = "deepseek-v4-pro"
EPOCH_MS = 1_786_000_000_000  # 2026-08-06, between af3a9bbf74 and HEAD


class LateRecorder:
    """One HEAD-era session: ``events`` (dicts), frame batch boundaries, capture lines."""

    def __init__(
        self,
        rng: random.Random,
        session_id: str,
        *,
        cwd: str | None,
        system: str,
        tools: list,
        seed: list[dict] | None = None,
        parent: str | None = None,
        depth: int = 0,
        session_file: str = "session.jsonl.zstd",
        start_ms: int = EPOCH_MS,
    ) -> None:
        self.rng = rng
        self.id = session_id
        self.header: dict = {"type": "session", "version": 0, "id": session_id, "createdAt": start_ms}
        if cwd is not None:
            self.header["cwd"] = cwd
        if parent is not None:
            self.header["parentSession"] = parent
            self.header["seedLength"] = len(seed or [])
        if depth:
            self.header["origin"] = "subagent"
        self.header["delegationDepth"] = depth
        self.events: list[dict] = [dict(e) for e in (seed or [])]
        self.now = start_ms
        self.system, self.tools = system, tools
        self.session_file = session_file
        self.batch_ends: list[int] = []  # event counts at which a durable flush happened
        self.capture: list[dict] = []
        self.messages: list[dict] = []  # the oracle: the conversation as the loop holds it
        self.turn = max((e["data"]["turn"] for e in self.events if e["type"] == "turn/start"), default=0)
        self.logged = False  # this loop instance logged its anchor header
        self.fold: dict | None = None
        self.context: dict | None = None
        for e in self.events:  # a seed's conversation and header fold
            if e["type"] == "request/header":
                self.fold = e["data"]["header"]
            elif e["type"] == "request/context":
                self.context = e["data"]
            if e.get("surfaceOp") == "append":
                msg = e["data"] if e["type"] == "user/message" else e["data"].get("message")
                if msg and (msg.get("role") != "assistant" or msg.get("content")):
                    self.messages.append(msg)
        if seed is not None:
            self.append("session/end-seed", {})

    # -- writing -------------------------------------------------------------
    def tick(self, lo: int = 0, hi: int = 3) -> int:
        self.now += self.rng.randint(lo, hi)
        return self.now

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def append(self, type_: str, data: Any, surface_op: Any = None, sources: list | None = None) -> int:
        ev: dict = {"type": type_, "seq": len(self.events), "time": self.tick(), "data": data}
        if sources is not None:
            ev["sourceEventSeqs"] = sources
        if surface_op is not None:
            ev["surfaceOp"] = surface_op
        self.events.append(ev)
        return ev["seq"]

    def flush(self) -> None:
        if not self.batch_ends or self.batch_ends[-1] != len(self.events):
            self.batch_ends.append(len(self.events))

    def user_message(self, text: str, kind: str = "user") -> dict:
        return {"content": [{"type": "text", "text": text}], "source": {"kind": kind}, "role": "user", "id": self.uid()}

    # -- the loop --------------------------------------------------------------
    def inbox(self, text: str) -> dict:
        """A prompt queued while idle: spliced into the next turn's inbox, outside any turn."""
        msg = self.user_message(text)
        self.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]})
        return msg

    def run_turn(self, prompt: dict, steps: list[dict], model: str = MODEL, effort: str | None = None) -> None:
        """``steps``: each ``{"reply": blocks, "calls": [(name, args, output)], "retry": bool}``."""
        self.turn += 1
        turn = self.turn
        self.append("turn/start", {"turn": turn})
        self.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})
        for index, spec in enumerate(steps, start=1):
            self.append("step/start", {"turn": turn, "step": index})
            if index == 1:  # the claimed prompt joins the step after step/start (HEAD order)
                self.append("user/message", prompt, "append")
                self.messages.append(prompt)
            attempts = 2 if spec.get("retry") else 1
            for attempt in range(attempts):
                failed = attempt < attempts - 1
                self._request(turn, index, model, effort)
                chunk_seqs = self._stream(turn, index, spec, failed, model)
                if failed:
                    retry_id = self.uid()
                    self.append(
                        "llm/retry",
                        {
                            "retryId": retry_id,
                            "turn": turn,
                            "step": index,
                            "provider": PROVIDER,
                            "mode": "normal",
                            "policyKey": '["normal",1,["RATE_LIMIT","SERVER"],1,1,0]',
                            "retry": 1,
                            "maxRetries": 1,
                            "delayMs": 1,
                            "failure": {"message": "temporary outage", "code": "SERVER"},
                        },
                    )
                    self.append("llm/retry-started", {"retryId": retry_id, "turn": turn, "step": index, "retry": 1})
                    continue
                self._finish_step(turn, index, spec, chunk_seqs, model)
            self.append("step/end", {"turn": turn, "step": index})
            if spec.get("flush_inside"):
                self.flush()
        self.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        self.flush()

    def _request(self, turn: int, step: int, model: str, effort: str | None) -> None:
        config: dict = {"provider": PROVIDER, "model": model}
        if effort is not None:
            config["reasoningEffort"] = effort
        header: dict = {"config": config, "system": self.system, "tools": self.tools}
        if not self.logged:
            self.append("request/header", {"header": header, "reason": "initial" if self.fold is None else "resume"})
            self.logged = True
        elif header != self.fold:
            self.append("request/header", {"header": header, "reason": "change"})
        self.fold = header
        context = {"provider": PROVIDER, "model": model, "contextWindow": 1_000_000}
        if context != self.context:
            self.append("request/context", context)
            self.context = context
        request = {**config, "messages": list(self.messages), "system": self.system, "tools": self.tools}
        self.capture.append(
            {
                "sessionId": self.id,
                "sessionFile": self.session_file,
                "logLength": len(self.events),
                "turn": turn,
                "step": step,
                "loopBuilt": True,
                "time": self.now,
                "request": request,
            }
        )

    def _stream(self, turn: int, step: int, spec: dict, failed: bool, model: str) -> list[int]:
        seqs: list[int] = []

        def chunk(c: dict) -> None:
            seqs.append(self.append("assistant/chunk", {"turn": turn, "step": step, "chunk": c}))

        blocks = spec["reply"]
        for i, block in enumerate(blocks):
            chunk({"type": "block-start", "index": i, "blockType": block["type"]})
            if block["type"] in ("text", "reasoning"):
                for piece in _pieces(block["text"], self.rng):
                    chunk({"type": f"{block['type']}-delta", "index": i, "text": piece})
            else:
                for j, piece in enumerate(_pieces(block["arguments"], self.rng)):
                    delta = {"type": "tool-call-delta", "index": i, "id": block["id"]}
                    if j == 0:
                        delta["name"] = block["name"]
                    delta["argumentsDelta"] = piece
                    chunk(delta)
            if failed:
                break
            chunk({"type": "block-end", "index": i, "block": block})
        if failed:
            chunk(
                {
                    "type": "finish",
                    "reason": {"kind": "error", "failure": {"message": "temporary outage", "code": "SERVER"}},
                }
            )
            return seqs
        chunk(
            {"type": "usage", "usage": {"inputTokens": 100 + 40 * len(self.messages), "outputTokens": 7 * len(blocks)}}
        )
        calls = any(b["type"] == "tool-call" for b in blocks)
        chunk({"type": "finish", "reason": {"kind": "tool-calls" if calls else "stop"}})
        return seqs

    def _finish_step(self, turn: int, step: int, spec: dict, chunk_seqs: list[int], model: str) -> None:
        blocks = spec["reply"]
        message = {
            "role": "assistant",
            "content": blocks,
            "source": {"kind": "model", "provider": PROVIDER, "model": model},
            "id": self.uid(),
        }
        self.append(
            "assistant/message",
            {
                "turn": turn,
                "step": step,
                "message": message,
                "usage": {"inputTokens": 100 + 40 * len(self.messages), "outputTokens": 7 * len(blocks)},
            },
            "append",
            chunk_seqs,
        )
        self.messages.append(message)
        outputs = dict((name_args[0], name_args[1]) for name_args in spec.get("outputs", []))
        for block in blocks:
            if block["type"] != "tool-call":
                continue
            call_seq = self.append(
                "tool/call",
                {
                    "turn": turn,
                    "step": step,
                    "callId": block["id"],
                    "name": block["name"],
                    "arguments": block["arguments"],
                },
            )
            result = {
                "source": {"kind": "tool", "callId": block["id"]},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": block["id"],
                        "content": [{"type": "text", "text": outputs.get(block["id"], "ok")}],
                        "isError": False,
                    }
                ],
                "role": "user",
                "id": self.uid(),
            }
            self.append("tool/result", {"turn": turn, "step": step, "message": result}, "append", [call_seq])
            self.messages.append(result)

    # -- storage ----------------------------------------------------------------
    def jsonl_frames(self, pack: bool = True) -> list[bytes]:
        """Frame payloads: the header line, then one batch per flush."""
        frames = [orjson.dumps(self.header) + b"\n"]
        start = 0
        for end in self.batch_ends + (
            [len(self.events)] if not self.batch_ends or self.batch_ends[-1] != len(self.events) else []
        ):
            batch = self.events[start:end]
            if batch:
                records = pack_events(batch) if pack else batch
                frames.append(b"".join(orjson.dumps(r) + b"\n" for r in records))
            start = end
        return frames

    def capture_bytes(self) -> bytes:
        return b"".join(orjson.dumps(c) + b"\n" for c in self.capture)

    def relpath(self) -> str:
        cwd = self.header.get("cwd")
        project = project_key(cwd) if cwd else "_no-cwd"
        return f"{project}/{encode_id(self.id)}/session.jsonl.zstd"


def _pieces(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(2, 9)
        out.append(text[i : i + n])
        i += n
    return out or [""]


def _call(rng: random.Random, name: str, args: dict) -> dict:
    return {
        "type": "tool-call",
        "id": f"call_{rng.getrandbits(40):010x}",
        "name": name,
        "arguments": orjson.dumps(args).decode(),
    }


TOOLS = [
    {
        "name": "read",
        "description": "Read a UTF-8 text file; lines come back numbered.",
        "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
    },
    {
        "name": "bash",
        "description": "Run a command with bash -c and return its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
]
SYSTEM = "You are a coding agent working in the user's repository.\nPrefer small, verified changes."
CWD = "/home/dev/project"


def _clean_session(rng: random.Random, session_id: str) -> LateRecorder:
    rec = LateRecorder(rng, session_id, cwd=CWD, system=SYSTEM, tools=TOOLS)
    first = rec.inbox("Read README.md and tell me what the project does.")
    read = _call(rng, "read", {"file_path": "README.md"})
    rec.run_turn(
        first,
        [
            {
                "reply": [
                    {"type": "reasoning", "text": "The user wants a summary of README.md, so I will read it first."},
                    read,
                ],
                "outputs": [(read["id"], "1: # slugify\n2: Turn titles into URL slugs.\n")],
                "flush_inside": True,
            },
            {
                "reply": [{"type": "text", "text": "The project is a small library that turns titles into URL slugs."}],
                "retry": True,
            },
        ],
    )
    second = rec.inbox("Count the Python files with bash, using the pro model.")
    count = _call(rng, "bash", {"command": "ls src/*.py | wc -l"})
    rec.run_turn(
        second,
        [
            {
                "reply": [{"type": "reasoning", "text": "A quick count with ls and wc will do."}, count],
                "outputs": [(count["id"], "3\n")],
            },
            {"reply": [{"type": "text", "text": "There are 3 Python files under src/."}]},
        ],
        model=PRO,
        effort="high",
    )
    return rec


def sample_late_zstd() -> Sample:
    """A clean HEAD session as session.jsonl.zstd (packed rows, one frame per batch) with its capture."""
    rng = random.Random(611615650)
    rec = _clean_session(rng, "8d0c3b1e-5f27-4a61-9c2e-2b7f0d4e6a11")
    rel = f"late/{rec.relpath()}"
    import io

    buf = io.BytesIO()
    write_frames(buf, rec.jsonl_frames())
    cap = rel.rsplit("/", 1)[0] + "/requests.jsonl"
    return _sample("late/--home-dev-project--/", {rel: buf.getvalue(), cap: rec.capture_bytes()}, {rel: []})


def sample_late_torn() -> Sample:
    """The same kind of session, cut by a crash inside its last zstd frame (mid-turn)."""
    rng = random.Random(611615651)
    rec = _clean_session(rng, "3f4e9a2c-71b8-4d05-8e6a-c90b1d2f3a44")
    rec.batch_ends = [n for n in rec.batch_ends]  # last batch = the second turn's tail
    cut = rec.events[rec.batch_ends[-2] :]
    step2 = next(i for i, e in enumerate(cut) if e["type"] == "step/start" and e["data"]["step"] == 2)
    rec.batch_ends.insert(-1, rec.batch_ends[-2] + step2)  # a flush window closed just before step 2
    import io

    frames = rec.jsonl_frames()
    buf = io.BytesIO()
    write_frames(buf, frames)
    data = buf.getvalue()
    last = io.BytesIO()
    write_frames(last, [frames[-1]])
    torn = data[: len(data) - len(last.getvalue()) + len(last.getvalue()) // 2]
    rel = f"late/torn/{rec.relpath()}"
    last_step = rec.turn
    return _sample(
        "late/torn/",
        {rel: torn},
        {
            rel: [
                {
                    "kind": "torn-zstd-frame",
                    "severity": "warning",
                    "note": "EOF inside the last frame; its batch (turn 2, step 2 onward) is lost",
                },
                {
                    "kind": "open-turn-at-end",
                    "severity": "info",
                    "turn": last_step,
                    "note": "the kept events end inside turn 2; the harness appends closers on load",
                },
            ]
        },
    )


def sample_late_sqlite() -> Sample:
    """A schema-17 SQLite database with a parent and its forked subagent child, and one capture."""
    import tempfile

    from invariants.read.sqlite_backend import write_database

    rng = random.Random(611615652)
    parent = LateRecorder(rng, "parent-2c9a", cwd=CWD, system=SYSTEM, tools=TOOLS, session_file="sessions.sqlite")
    prompt = parent.inbox(
        "Summarise the last commit. " + "Context: " + "the diff touches slugify and its tests; " * 120
    )
    parent.run_turn(
        prompt, [{"reply": [{"type": "text", "text": "The last commit adds a unicode test for slugify. " * 30}]}]
    )
    child = LateRecorder(
        rng,
        "child-7e41",
        cwd=CWD,
        system=SYSTEM,
        tools=TOOLS,
        seed=parent.events,
        parent=parent.id,
        depth=1,
        session_file="sessions.sqlite",
        start_ms=parent.now + 5,
    )
    ask = child.inbox("Now list the test files.")
    ls = _call(rng, "bash", {"command": "ls tests"})
    child.run_turn(
        ask,
        [
            {
                "reply": [{"type": "reasoning", "text": "List the tests directory."}, ls],
                "outputs": [(ls["id"], "test_slugify.py\n")],
            },
            {"reply": [{"type": "text", "text": "There is one test file, tests/test_slugify.py."}]},
        ],
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.sqlite"
        write_database(
            path,
            [(parent.header, parent.events), (child.header, child.events)],
            uuids=lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        )
        data = path.read_bytes()
    rel = "late/db/sessions.sqlite"
    cap = b"".join(orjson.dumps(c) + b"\n" for c in parent.capture + child.capture)
    return _sample(
        "late/db/", {rel: data, "late/db/requests.jsonl": cap}, {f"{rel}#{parent.id}": [], f"{rel}#{child.id}": []}
    )


def _sample(name: str, files: dict[str, bytes], expected: dict[str, list]) -> Sample:
    return Sample(name, LATE_DESCRIPTIONS[name], files, expected)


LATE_SAMPLES = [sample_late_zstd, sample_late_torn, sample_late_sqlite]
LATE_DESCRIPTIONS = {
    "late/--home-dev-project--/": "HEAD-era session stored as `session.jsonl.zstd` in its project/session directory: "
    "chunk runs packed into rows, one zstd frame per append batch, inbox splices outside turns, a retried step "
    "(two requests), a model change (`change` snapshot, `request/context`); `requests.jsonl` beside it",
    "late/torn/": "the same kind of session cut by a crash inside its last zstd frame",
    "late/db/": "a schema-17 SQLite session database (packed rows, zstd data from 4 KiB, varint sourceEventSeqs) "
    "with a parent and its forked subagent child, and one `requests.jsonl` for both",
}
