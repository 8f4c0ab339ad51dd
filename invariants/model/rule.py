"""What a rule is: the fields of a row of the rule table (:mod:`invariants.model.registry`)."""

from __future__ import annotations

from dataclasses import dataclass

TABS = ("request", "diff", "header", "prefix", "events", "findings")  # the TUI's tabs, in order
FIRES = ("while-read", "after-fold", "at-end")


@dataclass(slots=True, frozen=True)
class Rule:
    """One rule: everything the checks, the report, the TUI and follow mode know about it.

    ``tab``: the TUI tab that shows one of its findings best (one of :data:`TABS`).
    ``fires``: ``while-read`` as the log is read and folded (or its requests compared);
    ``after-fold`` by ``replay()`` once the fold is done, which a resumed replay does not
    redo (follow mode and the index carry these findings over); ``at-end`` about where
    the log ends right now, which comes and goes while a log is written (follow mode
    reports it only when it stops).  ``loses_header``: what a lost header event would explain
    (no header in force, a delta or resume with nothing to apply to): after events were lost
    since the last anchor snapshot, it is counted in that loss instead of reported.
    ``relaxed_in_fixtures``: an error in a snapshot fixture (a placeholder cwd) becomes LOG015.
    ``unreadable_line``: a line the reader cannot read as an event; a run of them is one finding,
    and a log mostly made of them is LOG019.
    Where it is raised is found in the source (``inspector rules CODE``).
    """

    code: str
    name: str
    category: str
    severity: str
    summary: str
    rationale: str
    example: str = ""
    tab: str = "events"
    fires: str = "while-read"
    loses_header: bool = False
    relaxed_in_fixtures: bool = False
    unreadable_line: bool = False
