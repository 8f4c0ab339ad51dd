"""The surface fold and the derived message list, kept incrementally.

The surface is the ordered list of event seqs whose messages the model sees.
Appends only grow it; a replace (compaction, a tool-result rewrite) splices
it.  Instead of copying the list at every step we keep *generations*: the
current list grows in place, and a replace starts a new generation.  A
position in history is then ``(generation, length)``, and the messages of any
step are materialised on demand in time proportional to their number.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ReplaceOutcome:
    ok: bool
    problem: str | None = None
    shadowed: list[int] = field(default_factory=list)


class Surface:
    def __init__(self) -> None:
        self.generations: list[list[int]] = [[]]
        self.messages: dict[int, Any] = {}  # seq -> projected message (None = projects to nothing)
        self.lines: dict[int, int] = {}  # seq -> physical line of the surface event
        # (seq of the surface change, generation, length after it), in seq order
        self._points_seq: list[int] = []
        self._points: list[tuple[int, int]] = []

    @property
    def nodes(self) -> list[int]:
        return self.generations[-1]

    def position(self) -> tuple[int, int]:
        return len(self.generations) - 1, len(self.generations[-1])

    def append(self, seq: int, message: Any, line: int = 0) -> None:
        self.messages[seq] = message
        self.lines[seq] = line
        self.generations[-1].append(seq)
        self._mark(seq)

    def check_replace(self, start: int, end: int) -> ReplaceOutcome:
        nodes = self.nodes
        try:
            i = nodes.index(start)
        except ValueError:
            return ReplaceOutcome(False, f"start seq {start} is not on the surface")
        try:
            j = nodes.index(end)
        except ValueError:
            return ReplaceOutcome(False, f"end seq {end} is not on the surface")
        if i > j:
            return ReplaceOutcome(False, f"start seq {start} (position {i}) is after end seq {end} (position {j}) on the surface")
        return ReplaceOutcome(True, shadowed=nodes[i : j + 1])

    def replace(self, seq: int, start: int, end: int, message: Any, line: int = 0) -> None:
        """Splice ``[start..end]`` (by position) into the new node; caller checked it."""
        nodes = self.nodes
        i, j = nodes.index(start), nodes.index(end)
        self.messages[seq] = message
        self.lines[seq] = line
        self.generations.append(nodes[:i] + [seq] + nodes[j + 1 :])
        self._mark(seq)

    def _mark(self, seq: int) -> None:
        gen, length = self.position()
        self._points_seq.append(seq)
        self._points.append((gen, length))

    def position_before(self, seq: int) -> tuple[int, int]:
        """The surface as it stood over events with seq < ``seq``."""
        k = bisect.bisect_left(self._points_seq, seq)
        if k == 0:
            return 0, 0
        return self._points[k - 1]

    def seqs_at(self, position: tuple[int, int]) -> list[int]:
        gen, length = position
        return self.generations[gen][:length]

    def messages_at(self, position: tuple[int, int]) -> tuple[list[Any], list[int]]:
        """Derived messages at a position, with the seq each came from."""
        out: list[Any] = []
        origins: list[int] = []
        for s in self.seqs_at(position):
            m = self.messages.get(s)
            if m is not None:
                out.append(m)
                origins.append(s)
        return out, origins
