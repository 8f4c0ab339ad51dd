"""Fork seeds across sessions: a child's first ``seedLength`` events must be
its parent's, copied verbatim, ending on a closed turn (LOG-FORMAT.md §8)."""

from __future__ import annotations

from itertools import islice
from typing import Callable

from .jsonvalue import first_difference, shorten
from .load import LogReader
from .replay import SessionModel


def _head(model: SessionModel, n: int) -> list:
    reader = LogReader(model.source)
    return [(e.type, e.seq, e.time, e.data, e.surface_op, e.source_seqs) for e in islice(iter(reader), n)]


def check_fork(child: SessionModel, parents: dict[str, SessionModel], emit: Callable[..., None]) -> None:
    hdr = child.header
    if hdr is None or not hdr.parent_session:
        return
    n = hdr.seed_length or 0
    parent = parents.get(hdr.parent_session)
    where = {"file": child.file, "session": child.id, "line": 1}
    if n > child.events:
        emit("FRK004", f"seedLength {n} exceeds the {child.events} events of this log", **where)
        return
    if n == 0:
        return
    child_head = _head(child, n)
    last = child_head[-1] if child_head else None
    boundary_ok = True
    if child.profile.era == "seed":
        boundary_ok = last is not None and last[0] == "turn/end"
    else:
        for ev in reversed(child_head):
            if ev[0] in ("turn/start", "turn/end"):
                boundary_ok = ev[0] == "turn/end"
                break
    if not boundary_ok:
        emit("FRK002", f"the fork seed ends at seq {n - 1} ({last[0] if last else 'nothing'}), not on a closed turn", seq=n - 1, **where)
    if parent is None:
        emit("FRK003", f"parent session {shorten(hdr.parent_session, 60)} is not among the checked logs; the seed was not compared", **where)
        return
    if n > parent.events:
        emit("FRK004", f"seedLength {n} exceeds the {parent.events} events of the parent log {parent.file}", **where)
        return
    parent_head = _head(parent, n)
    fields = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs")
    for a, b in zip(child_head, parent_head):
        for name, x, y in zip(fields, a, b):
            path = first_difference(x, y, name)
            if path is not None:
                emit("FRK001", f"seed event seq {a[1]} differs from the parent's at {path}", seq=a[1], path=path,
                     detail={"parent_file": parent.file, "child": shorten(x, 200), "parent": shorten(y, 200)}, **where)
                return
