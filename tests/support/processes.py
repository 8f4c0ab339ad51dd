"""A process's tree as /proc shows it (Linux): what a test that kills a command checks is gone."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    out: list[int] = []
    todo = [pid]
    while todo:
        found = children(todo.pop())
        out += found
        todo += found
    return out


def alive(pid: int) -> bool:
    """``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """Those of ``pids`` still running after waiting up to ``seconds`` for them to end; they are killed."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return left
