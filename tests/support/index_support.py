"""A generated sessions root in the harness layout, for the index tests.

``<root>/--<project>--/<id>/session.jsonl[.zstd]`` with a ``requests.jsonl``
capture beside most sessions, written by ``invariants.simulate.seed_era`` (the
recorder, not a hand-written log), so every step is real and every capture
line is independent of our derivation.  One session forks a child; one is
compressed; one diverges from its capture.  No test functions live here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from invariants.read.zstdio import write_frames
from invariants.simulate.seed_era import (
    BASH,
    CWD,
    READ,
    SYSTEM,
    MemoryLines,
    Reply,
    SessionRecorder,
    ToolCall,
    World,
    diverge_message_text,
)

PROJECTS = ("--home-dev-project--", "--srv-app--")


@dataclass
class Written:
    sid: str
    folder: Path
    log: Path
    lines: list[bytes]
    capture: list[bytes] = field(default_factory=list)
    steps: int = 0


def _turns(rec: SessionRecorder, rng: random.Random, turns: int) -> int:
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


def session(world: World, sid: str, turns: int, *, project_cwd: str = CWD) -> tuple[SessionRecorder, int]:
    rec = SessionRecorder(
        world,
        MemoryLines(),
        MemoryLines(),
        session_id=sid,
        session_file="session.jsonl",
        cwd=project_cwd,
        system=SYSTEM,
        tools=[BASH, READ],
    )
    rec.start_instance(prefix=[])
    steps = _turns(rec, world.rng, turns)
    return rec, steps


def write_log(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".zstd"):
        body = [lines[0] + b"\n"] + [
            b"".join(line + b"\n" for line in lines[i : i + 40]) for i in range(1, len(lines), 40)
        ]
        write_frames(path, body)
    else:
        path.write_bytes(b"".join(line + b"\n" for line in lines))


def write_capture(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def make_root(root: Path, n: int = 8, seed: int = 7, turns: int = 3) -> dict[str, Written]:
    """``n`` sessions (plus a forked child) under ``root``; returns what was written, by session id."""
    world = World(seed)
    out: dict[str, Written] = {}
    for i in range(n):
        sid = world.session_id()
        project = PROJECTS[i % len(PROJECTS)]
        rec, steps = session(world, sid, turns)
        folder = root / project / sid
        name = "session.jsonl.zstd" if i == 1 else "session.jsonl"
        cap = list(rec.capture.lines)
        if i == 2:  # an edited capture line: a request divergence
            diverge_message_text(cap, 0, 0)
        w = Written(sid, folder, folder / name, list(rec.log.lines), cap if i != 3 else [], steps)
        write_log(w.log, w.lines)
        if w.capture:
            write_capture(folder / "requests.jsonl", w.capture)
        out[sid] = w
        if i == 0:  # a forked child of the first session, in its own folder
            child_id = world.session_id()
            child = rec.fork(session_id=child_id, capture=MemoryLines())
            child.start_instance(prefix=[])
            csteps = _turns(child, world.rng, 1)
            cf = root / project / child_id
            cw = Written(
                child_id, cf, cf / "session.jsonl", list(child.log.lines), list(child.capture.lines), steps + csteps
            )  # the seed holds the parent's steps
            write_log(cw.log, cw.lines)
            write_capture(cf / "requests.jsonl", cw.capture)
            out[child_id] = cw
    return out


def add_late(root: Path) -> list[Path]:
    """Late-era sessions from ``invariants.simulate.late_era``: a zstd log in the project/session
    layout with its capture, and a SQLite session database holding a parent and its fork."""
    from invariants.simulate.late_era import sample_late_sqlite, sample_late_zstd

    written = []
    for sample in (sample_late_zstd(), sample_late_sqlite()):
        for rel, data in sample.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
    return written


def growing_session(world_seed: int = 11, turns: int = 12) -> tuple[str, list[bytes], list[bytes], list[int]]:
    """A long session: (id, log lines, capture lines, log line count after each turn/end)."""
    world = World(world_seed)
    sid = world.session_id()
    rec, _ = session(world, sid, turns)
    ends = [i + 1 for i, line in enumerate(rec.log.lines) if b'"type":"turn/end"' in line]
    return sid, list(rec.log.lines), list(rec.capture.lines), ends


def capture_lines_before(capture: list[bytes], log_length: int) -> list[bytes]:
    """Capture lines dispatched while the log had at most ``log_length`` events."""
    return [line for line in capture if orjson.loads(line).get("logLength", 0) <= log_length]
