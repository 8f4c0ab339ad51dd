"""The finding: one thing the checker has to say, with where it says it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
CATEGORIES = (
    "log-integrity",
    "event-contract",
    "header-codec",
    "unexplained-request",
    "request-divergence",
    "header-divergence",
    "prefix-instability",
    "prefix-drift",
    "fork-seed",
    "token-accounting",
    "context-pressure",
)


@dataclass(slots=True)
class Finding:
    rule: str
    category: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    session: str | None = None
    seq: int | None = None
    turn: int | None = None
    step: int | None = None
    path: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape of one finding (report version 1)."""
        return {
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "session": self.session,
            "seq": self.seq,
            "turn": self.turn,
            "step": self.step,
            "path": self.path,
            "message": self.message,
            "detail": self.detail,
        }

    def sort_key(self) -> tuple:
        return (
            self.file or "",
            self.session or "",
            self.line if self.line is not None else -1,
            self.seq if self.seq is not None else -1,
            self.rule,
        )
