"""What a check is asked and what it returns: options, session summaries, request verdicts, the result.

Everything here is plain data that survives a trip through JSON, so a worker
process, the result cache and an in-process run hand the pipeline's second
half the same values.  The replayed :class:`~invariants.replay.model.SessionModel`
objects are kept beside them only when a caller asks (``keep_models``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

from invariants.gate.baseline import BaselineOutcome
from invariants.model.findings import SEVERITY_RANK, Finding
from invariants.read.capture import Recorded
from invariants.read.projected import RUNTIME
from invariants.read.source import LogPath, LogSource, log_path
from invariants.replay.model import SessionModel

if TYPE_CHECKING:
    from invariants.analysis.token_rules import TokenSettings


@dataclass
class CheckOptions:
    """How to read the logs; everything here can change a folder's result, so it keys the result cache."""

    captures: list[LogPath] | None = None  # explicit capture files (paths or URLs); None = look beside each log
    profile: str | None = None  # force a profile; None = sniff per log
    max_line: int | None = None  # bytes per line (default: the reader's bound)
    tokens: TokenSettings | None = None  # count tokens and run the TOK/CTX rules (the optional tokens extra)


@dataclass
class RequestCheck:
    """One recorded request and what became of it."""

    status: str = "unchecked"  # ok | diverges | header | unexplained | one-shot
    session: str | None = None  # the session it was routed to (or named, when unexplained)
    step: int | None = None  # index into that session's steps
    codes: list[str] = field(default_factory=list)
    file: str | None = None  # the capture file and line it was read from
    line: int | None = None
    recorded: Recorded | None = field(default=None, compare=False, repr=False)  # kept in-process only
    # The capture's own verdicts (the harness's live and shadow cross-checks), when it carries them.
    verdict: str | None = None
    shadow_verdict: str | None = None
    attempt: int | None = None  # which dispatch of its step, when the step was sent more than once

    def __post_init__(self) -> None:
        if self.recorded is not None and self.verdict is None and self.shadow_verdict is None:
            extra = self.recorded.extra
            self.verdict = extra.get("verdict") if isinstance(extra.get("verdict"), str) else None
            self.shadow_verdict = extra.get("shadowVerdict") if isinstance(extra.get("shadowVerdict"), str) else None

    @property
    def harness_verdict(self) -> str | None:
        """What the harness said of this request: its live verdict, or the shadow one when it ran unchecked."""
        if self.verdict is not None and self.verdict != "unchecked":
            return self.verdict
        return self.shadow_verdict if self.shadow_verdict is not None else self.verdict

    @property
    def agrees(self) -> bool | None:
        """Whether our verdict matches the harness's (both accept, or both reject); None when either has none:
        the capture carries no verdict, the harness did not check it, or it is a one-shot we do not compare."""
        theirs = self.harness_verdict
        if theirs is None or theirs == "unchecked" or self.status in ("one-shot", "unchecked"):
            return None
        return (theirs == "ok") == (self.status == "ok")

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "session": self.session,
            "step": self.step,
            "codes": list(self.codes),
            "file": self.file,
            "line": self.line,
            "verdict": self.verdict,
            "shadow_verdict": self.shadow_verdict,
            "attempt": self.attempt,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RequestCheck":
        return cls(**d)


@dataclass
class SessionSummary:
    """What reports, baselines, ledgers and fork checks need of one replayed session."""

    session: str
    file: str
    era: str
    profile: str
    events: int
    turns: int
    steps: int
    instances: int
    requests: int
    path: str
    root: str
    parent_session: str | None = None
    seed_length: int = 0
    has_header: bool = True
    torn: bool = False
    bytes: int = 0
    resumes: list[int] = field(default_factory=list)  # seqs of resume anchors
    member: str | None = None  # a session inside a SQLite database
    created_at: Any = None  # the header's createdAt: a fork's parent is created before it
    form: str = "runtime"  # the log's form (invariants.read.projected): a projected snapshot's is named in row()
    findings: list[Finding] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session

    @cached_property
    def source(self) -> LogSource:
        """Made once: the fork pass compares a child with every checked log of its parent's id."""
        return LogSource(log_path(self.path), log_path(self.root), self.member)

    def row(self) -> dict[str, Any]:
        """The session's row of the JSON report (version 1)."""
        return summary_row(self.__getattribute__)

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "findings"}
        d["findings"] = [f.to_json() for f in self.findings]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "SessionSummary":
        d = dict(d)
        findings = [Finding(**f) for f in d.pop("findings")]
        return cls(**d, findings=findings)

    @classmethod
    def from_model(cls, m: SessionModel) -> "SessionSummary":
        hdr = m.header
        return cls(
            session=m.id,
            file=m.file,
            era=m.profile.era,
            profile=m.profile.name,
            events=m.events,
            turns=m.turns,
            steps=len(m.steps),
            instances=len(m.instances),
            requests=len(m.requests),
            path=str(m.source.path),
            root=str(m.source.root),
            parent_session=hdr.parent_session if hdr else None,
            seed_length=(hdr.seed_length or 0) if hdr else 0,
            has_header=hdr is not None,
            torn=bool(m.torn),
            bytes=m.bytes,
            resumes=[i.seq for i in m.instances if i.reason == "resume"],
            member=m.source.member,
            created_at=hdr.created_at if hdr else None,
            form=hdr.form if hdr else "runtime",
            findings=list(m.findings),
        )


@dataclass
class CheckResult:
    """Sessions, findings (after the configuration), request verdicts and unusable inputs of one check.

    ``findings`` are in report order.  ``problems`` are inputs that could not
    be used (the gate exits 2 on any).  ``models`` holds the replayed sessions
    when the check was asked to keep them (the TUI does), else it is empty.
    ``baseline`` says what a baseline absorbed, when one was applied.
    ``notes`` are things skipped on purpose (a FIFO or device named like a
    log inside a folder), said on stderr, never a problem.
    """

    sessions: list[SessionSummary]
    findings: list[Finding]
    requests: list[RequestCheck]
    problems: list[str]
    models: list[SessionModel] = field(default_factory=list)
    baseline: BaselineOutcome | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def requests_checked(self) -> int:
        return sum(1 for r in self.requests if r.status not in ("one-shot", "unexplained"))

    def request_counts(self) -> dict[str, int]:
        """Recorded requests: all, compared, one-shots, unexplained, and verdict disagreements."""
        from invariants.analysis.verdicts import count_requests

        return count_requests(self.requests)

    def counts(self) -> dict[str, int]:
        """Findings per severity."""
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def failed(self, fail_on: str = "error") -> bool:
        """Whether any finding is at or above ``fail_on`` (the gate's exit 1)."""
        threshold = SEVERITY_RANK[fail_on]
        return any(SEVERITY_RANK.get(f.severity, 0) >= threshold for f in self.findings)

    @property
    def ok(self) -> bool:
        """Every input was usable and no finding is an error."""
        return not self.problems and not self.failed("error")

    def summary(self) -> dict[str, int]:
        c = self.counts()
        return {
            "sessions": len(self.sessions),
            "events": sum(m.events for m in self.sessions),
            "requests_checked": self.requests_checked,
            "errors": c["error"],
            "warnings": c["warning"],
            "infos": c["info"],
        }


ROW_FIELDS = ("session", "file", "era", "profile", "events", "turns", "steps", "instances", "requests")


def summary_row(get: Callable[[str], Any]) -> dict[str, Any]:
    """A session's row of the JSON report from its summary's fields (``get``: an attribute of a
    :class:`SessionSummary`, or a key of its JSON, which a spooled report reads without making one)."""
    return with_form({k: get(k) for k in ROW_FIELDS}, get("form"))


def with_form(row: dict[str, Any], form: str) -> dict[str, Any]:
    """``row`` naming the log's form when it is not the runtime form (a projected snapshot, whose
    envelopes were rebuilt): a runtime log's row is as it always was."""
    if form != RUNTIME:
        row["form"] = form
    return row
