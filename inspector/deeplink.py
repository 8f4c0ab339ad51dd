"""``--at``: where ``inspector PATH --at SEQ`` or ``--at TURN.STEP`` opens a session."""

from __future__ import annotations

import re
from dataclasses import dataclass

_STEP = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class At:
    """An event (``seq``) or a step (``turn``, ``step``) of a session."""

    seq: int | None = None
    turn: int | None = None
    step: int | None = None

    def __str__(self) -> str:
        return str(self.seq) if self.seq is not None else f"{self.turn}.{self.step}"


def parse_at(text: str) -> At | None:
    """``12`` is event seq 12, ``2.1`` is turn 2 step 1; anything else is None."""
    text = text.strip()
    if text.isdigit():
        return At(seq=int(text))
    m = _STEP.fullmatch(text)
    return At(turn=int(m.group(1)), step=int(m.group(2))) if m else None
