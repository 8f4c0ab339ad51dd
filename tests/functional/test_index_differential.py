"""An index kept up to date run by run equals an index built from scratch.

Each round changes a few files at random (a seeded generator, so a failure
repeats): a log appended to, cut short, touched, deleted or given a repeated
line; a capture reordered and cut, appended to or removed; and, in a root of
recorded sessions that grow, a session grown in place to a later point (at a
turn's end or inside a step) with the capture lines dispatched by then.  Then
the incremental index and a ``full`` one must hold the same rows.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from inspector.index import build_index
from tests.conftest import SAMPLES
from tests.support.logs import capture_lines_before, growing_session, write_lines

# What a session, a step, a request or a finding says, by file path (ids and timestamps differ).
TABLES = {
    "sessions": "SELECT path, uid, era, profile, events, turns, steps, requests, errors, warnings, infos, worst "
    "FROM sessions",
    "steps": "SELECT s.path, t.idx, t.turn, t.step, t.seq, t.status, t.requests, t.header_hash "
    "FROM steps t JOIN sessions s ON s.id = t.session_id",
    "requests": "SELECT c.path, r.line, s.path, r.step_idx, r.status, r.codes "
    "FROM requests r JOIN captures c ON c.id = r.capture_id LEFT JOIN sessions s ON s.id = r.session_id",
    "findings": "SELECT f.rule, f.severity, f.file, f.seq, f.line, f.request_line, f.source, f.message, s.path "
    "FROM findings f LEFT JOIN sessions s ON s.id = f.session_id",
    "captures": "SELECT path, records, checked_lines FROM captures",
    "messages": "SELECT s.path, m.seq, m.role, m.text FROM messages m JOIN sessions s ON s.id = m.session_id",
    "versions": "SELECT s.path, v.idx, v.seq, v.kind, v.header_hash "
    "FROM versions v JOIN sessions s ON s.id = v.session_id",
}


def rows(db: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(db)
    try:
        return {name: sorted(map(repr, conn.execute(sql))) for name, sql in TABLES.items()}
    finally:
        conn.close()


def change(rnd: random.Random, root: Path) -> str:
    """One random change to a log or a capture under ``root``; what it was."""
    files = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    captures = [p for p in files if p.name.endswith("requests.jsonl")]
    logs = [p for p in files if p not in captures]
    if captures and rnd.random() < 0.4:
        p = rnd.choice(captures)
        lines = p.read_bytes().splitlines(True)
        what = rnd.choice(["reorder and cut", "append", "remove"])
        if what == "remove" or not lines:
            p.unlink()
        elif what == "append":
            with p.open("ab") as fh:
                fh.write(rnd.choice(lines))
        else:
            rnd.shuffle(lines)
            p.write_bytes(b"".join(lines[: max(1, len(lines) - 1)]))
        return f"{what} {p.relative_to(root)}"
    p = rnd.choice(logs)
    lines = p.read_bytes().splitlines(True)
    what = rnd.choice(["append", "cut", "touch", "repeat a line", "delete"])
    if what == "delete" or len(lines) < 4:
        p.unlink()
        what = "delete"
    elif what == "append":
        with p.open("ab") as fh:
            fh.write(rnd.choice(lines[1:]))
    elif what == "cut":
        p.write_bytes(b"".join(lines[: rnd.randint(2, len(lines) - 1)]))
    elif what == "touch":
        os.utime(p)
    else:
        i = rnd.randint(1, len(lines) - 1)
        p.write_bytes(b"".join(lines[:i] + [lines[i]] + lines[i:]))
    return f"{what} {p.relative_to(root)}"


class Growing:
    """A recorded session written up to a point, grown in place (same inode) to later points."""

    def __init__(self, folder: Path, world_seed: int, log_name: str = "session.jsonl") -> None:
        _, self.lines, self.capture, self.ends = growing_session(world_seed, turns=6)
        self.log = folder / log_name
        self.requests = folder / (
            log_name.replace(".jsonl", ".requests.jsonl") if log_name != "session.jsonl" else "requests.jsonl"
        )
        self.at = 0
        folder.mkdir(parents=True, exist_ok=True)

    def grow(self, rnd: random.Random) -> str:
        later = [e for e in self.ends if e > self.at] or [len(self.lines)]
        n = min(len(self.lines), rnd.choice(later) + rnd.choice([0, 0, 3, 11]))  # a turn's end, or inside a step
        if not self.log.exists():
            self.at = 0
        have = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as fh:
            fh.write(b"".join(line + b"\n" for line in self.lines[:n])[have:])
        write_lines(self.requests, capture_lines_before(self.capture, n - 1))
        self.at = n
        return f"grow {self.log.name} to line {n}"


def growing_root(root: Path) -> list[Growing]:
    """Two sessions in the harness layout and two in one seed-era folder, each written to its first turn."""
    sessions = [Growing(root / "--home-dev-project--" / f"s{k}", 11 + k) for k in range(2)]
    seed_era = root / "cwd-0123456789ab"
    sessions += [Growing(seed_era, 21 + k, f"log{k}.jsonl") for k in range(2)]
    rnd = random.Random(0)
    for g in sessions:
        g.grow(rnd)
    return sessions


@pytest.mark.parametrize("spill", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("kind", ["samples", "growing"])
def test_an_index_kept_up_to_date_equals_a_full_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, seed: int, spill: bool
) -> None:
    """``spill``: the kept index gives every folder's rows through a file (:mod:`inspector.index.spill`),
    the full one holds them."""
    from inspector.index import spill

    root = tmp_path / "logs"
    growing = growing_root(root) if kind == "growing" else []
    if kind == "samples":
        shutil.copytree(SAMPLES, root)
    rnd = random.Random(seed)
    db = tmp_path / "index.db"
    if spill:
        monkeypatch.setattr(spill, "SPILL_LOGS", 0)
    build_index([root], db, jobs=1)
    for round_ in range(3):
        done = [
            rnd.choice(growing).grow(rnd) if growing and rnd.random() < 0.6 else change(rnd, root)
            for _ in range(rnd.randint(1, 4))
        ]
        build_index([root], db, jobs=1)
        fresh = tmp_path / f"full-{round_}.db"
        with monkeypatch.context() as m:
            m.setattr(spill, "SPILL_LOGS", 10**9)  # the full index holds every folder's rows
            build_index([root], fresh, jobs=1, full=True)
        assert rows(db) == rows(fresh), f"round {round_}, after: {done}"
