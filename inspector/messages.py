"""Every custom message of the TUI, in one place.

UI state flows one way: widgets post these, the screen that owns the state
handles them and sets its reactives; workers (threads) report their results
with them.  Each is a small dataclass; ``control`` lets ``@on(…, "#id")``
selectors match the widget that sent it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from textual.widget import Widget

    from invariants.analysis.events_view import Match, RawEvent
    from invariants.gate.result import CheckResult
    from invariants.read.source import LogPath
    from invariants.replay.model import SessionModel


# -- workers -> screens ---------------------------------------------------------
@dataclass
class SessionLoaded(Message):
    """A check of the session's log finished (``refresh``: a re-check while following)."""

    result: "CheckResult"
    model: "SessionModel"
    elapsed: float
    refresh: bool = False


@dataclass
class SessionPreviewed(Message):
    """The first steps of a huge log, replayed from its head while the whole log is checked."""

    model: "SessionModel"
    head_bytes: int
    size: int


@dataclass
class FindingsArrived(Message):
    """The findings so far of a check still replaying the log, and how much of it has been read."""

    findings: list
    read_bytes: int


@dataclass
class SessionLoadFailed(Message):
    """The log could not be checked at all (unreadable, not a log)."""

    error: str


@dataclass
class SessionSummaryReady(Message):
    """One row of the session list is ready (rows arrive one log at a time)."""

    summary: Any  # inspector.screens.session_list.SessionRow


@dataclass
class SessionScanFinished(Message):
    """Every log under the list's path has been summarised."""

    count: int
    elapsed: float
    problems: list[str] = field(default_factory=list)


@dataclass
class TokensCounted(Message):
    """The DeepSeek V4 token counts of every step of one checked state (``serial``), by step index."""

    serial: int
    steps: dict[int, Any]  # step index -> invariants.analysis.token_steps.StepTokens


@dataclass
class EventsRead(Message):
    """The raw events of one step, read back from the file."""

    step: int
    events: list["RawEvent"]
    elapsed: float
    target: int | None = None  # the seq to put the cursor on


@dataclass
class SearchFinished(Message):
    """Events whose text contains ``query``, in log order."""

    query: str
    matches: list["Match"]
    elapsed: float


# -- widgets -> screens ---------------------------------------------------------
@dataclass
class StepSelected(Message):
    """The user picked a step in the timeline (index into ``SessionModel.steps``)."""

    index: int


@dataclass
class _BlockMessage(Message):
    """A document view's block, named by ``key``; the view is the control."""

    view: "Widget"
    key: Any

    @property
    def control(self) -> "Widget":
        return self.view


@dataclass
class BlockSelected(_BlockMessage):
    """The cursor of a document view moved to the block with ``key``."""


@dataclass
class BlockActivated(_BlockMessage):
    """Enter (or a double click) on a block of a document view."""


@dataclass
class SessionChosen(Message):
    """Enter on a row of the session list."""

    path: LogPath
    session_id: str
