"""A request difference as the finding classified it: missing, extra, moved or changed.

The comparison (:mod:`invariants.replay.diff_words`) names the edit that turns the rebuilt
list (``messages``, ``tools``) into the recorded one and stores it in the difference's
``detail["edit"]``.  The Diff tab, the Request tab's ``≠`` marks, ``e`` and the status line
read it from here, so none of them compares positions on its own: an extra recorded message
marks no part of the rebuilt request and has no producing event (the event the finding names
beside it is that of the message it pushed aside, which is innocent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NOUNS = {"messages": ("message", "messages"), "tools": ("tool", "tools")}


@dataclass(slots=True)
class Edit:
    """What one difference is: its kind, the parts of each side it is about and the event that made them."""

    kind: str  # missing | extra | moved | changed
    path: str  # the difference's path
    expected: list[str] = field(default_factory=list)  # parts of the rebuilt request it is about
    recorded: list[str] = field(default_factory=list)  # parts of the recorded request it is about
    source: int | None = None  # the event that produced the expected part (never for an extra part)
    count: int = 1

    @property
    def span(self) -> str:
        """``messages[0]`` or ``messages[2..4]``: where the parts stand (the recorded side for an extra)."""
        return _span(self.recorded if self.kind == "extra" else self.expected) or self.path

    def noun(self) -> str:
        root = self.path.split("[", 1)[0]
        one, many = NOUNS.get(root, ("part", "parts"))
        return f"{self.count} {one if self.count == 1 else many}"

    def words(self) -> str:
        """The edit in a short sentence, as the CLI's finding puts it."""
        if self.kind == "extra":
            return f"the recorded request has {self.noun()} the log does not account for at {self.span}"
        if self.kind == "missing":
            return f"{self.noun()} of the rebuilt request missing from the recorded request at {self.span}"
        if self.kind == "moved":
            return f"{self.noun()} moved: expected at {self.span}, recorded at {_span(self.recorded)}"
        return f"changed at {self.path}"

    def produced(self) -> str:
        """What the producing event made, for ``event seq N produced …``."""
        if self.kind == "missing":
            return f"{self.span}, missing from the recorded request"
        if self.kind == "moved":
            return f"{self.span}, recorded at {_span(self.recorded)}"
        return f"the difference at {self.path}"

    def no_event(self) -> str:
        """Why ``e`` has no event to jump to for this difference."""
        if self.kind == "extra":
            it = "it" if self.count == 1 else "them"
            return (
                f"{self.span} is extra in the recorded request: the log does not account for {it}, no event made {it}"
            )
        return f"no event of the log produced {self.path}"


def _span(paths: list[str]) -> str:
    if len(paths) <= 1:
        return paths[0] if paths else ""
    root, first = paths[0].split("[", 1)
    return f"{root}[{first[:-1]}..{paths[-1].split('[', 1)[1]}"


def edit_of(difference: Any) -> Edit:
    """The classification a difference carries (``changed`` at its path when it carries none)."""
    detail = difference.detail if isinstance(difference.detail, dict) else {}
    edit = detail.get("edit")
    source = detail.get("source_seq")
    source = source if type(source) is int else None
    path = str(difference.path or "")
    root = path.split("[", 1)[0]
    if not isinstance(edit, dict) or edit.get("kind") not in ("missing", "extra", "moved"):
        return Edit("changed", path, [path] if path else [], [path] if path else [], source)
    kind = edit["kind"]
    exp_i, rec_i, n = edit.get("expected_index"), edit.get("recorded_index"), edit.get("count")
    if not (type(exp_i) is int and type(rec_i) is int and type(n) is int and exp_i >= 0 and rec_i >= 0 and n > 0):
        return Edit("changed", path, [path], [path], source)
    expected = [f"{root}[{exp_i + k}]" for k in range(n)]
    recorded = [f"{root}[{rec_i + k}]" for k in range(n)]
    if kind == "extra":
        return Edit("extra", path, [], recorded, None, n)
    if kind == "missing":
        return Edit("missing", path, expected, [], source, n)
    return Edit("moved", path, expected, recorded, source, n)
