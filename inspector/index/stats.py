"""What a build did, counted as it goes (the run summary of ``inspector index``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class IndexStats:
    sessions: int = 0
    new: int = 0
    appended: int = 0
    replaced: int = 0
    unchanged: int = 0
    removed: int = 0
    groups: int = 0
    groups_written: int = 0
    parsed_groups: int = 0
    captures: int = 0
    fork_checks: int = 0
    steps_added: int = 0
    findings: int = 0
    seconds: float = 0.0
    written: bool = True  # False: nothing to index and no database yet, so none was created
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # skipped on purpose (a FIFO named like a log): never a problem

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("problems", "notes")}
        out["problems"] = len(self.problems)
        return out
