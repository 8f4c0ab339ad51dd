"""What a report writer reads: the run's blocks in report order, and the totals the report heads with.

A block is one checked session with the findings of its file, or (after the
sessions) one file no checked session owns with its findings.  Findings are
final: in report order, selected and re-graded by the configuration, the
baseline applied.  The blocks live in a :class:`~invariants.gate.spool.Spool`
(a temporary file for a streamed ``inspector check``, a list otherwise), so a
writer may read them more than once (the JSON report lists every session,
then every finding) without the run being held in memory.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator

from invariants.gate.baseline import BaselineOutcome
from invariants.gate.result import CheckResult, RequestCheck, SessionSummary, summary_row
from invariants.gate.spool import Spool
from invariants.model.findings import SEVERITY_RANK, Finding


@dataclass(slots=True)
class Block:
    """A session (or None: a file no checked session owns) and its file's findings."""

    session: SessionSummary | None
    file: str
    findings: list[Finding]


def encode_block(b: Block) -> list:
    s = b.session
    return [None if s is None else s.to_json(), b.file, [f.to_json() for f in b.findings]]


def decode_block(v: list) -> Block:
    s, file, found = v
    return Block(None if s is None else SessionSummary.from_json(s), file, [Finding(**f) for f in found])


@dataclass(slots=True)
class RequestTally:
    """:func:`~invariants.analysis.verdicts.count_requests`, one request at a time."""

    recorded: int = 0
    one_shot: int = 0
    unexplained: int = 0
    disagreements: int = 0

    def add(self, r: RequestCheck) -> None:
        self.recorded += 1
        self.one_shot += r.status == "one-shot"
        self.unexplained += r.status == "unexplained"
        self.disagreements += r.agrees is False

    def counts(self) -> dict[str, int]:
        return {
            "recorded": self.recorded,
            "compared": self.recorded - self.one_shot - self.unexplained,
            "one_shot": self.one_shot,
            "unexplained": self.unexplained,
            "disagreements": self.disagreements,
        }


class ReportView:
    """The report of one check as its writers read it (the same methods a :class:`CheckResult` has
    for its totals: ``summary``, ``counts``, ``request_counts``, ``failed``)."""

    def __init__(
        self,
        blocks: Spool[Block],
        problems: list[str],
        baseline: BaselineOutcome | None,
        requests: RequestTally,
        sessions: int,
        events: int,
    ) -> None:
        self.blocks = blocks
        self.problems = problems
        self.baseline = baseline
        self.tally = requests
        self.session_count = sessions
        self.events = events
        self.severities: Counter = Counter()
        self.rules: Counter = Counter()  # findings per rule, in order of first occurrence
        self.rule_severities: dict[str, Counter] = {}
        self.finding_count = 0
        self.notes: list[str] = []  # things skipped on purpose, said on stderr (CheckResult.notes)
        self.projected = 0  # sessions read from the projected snapshot form (the summary line says so)

    def count(self, f: Finding) -> None:
        """Note one final finding (as it is written to the blocks)."""
        self.finding_count += 1
        self.severities[f.severity] += 1
        self.rules[f.rule] += 1
        self.rule_severities.setdefault(f.rule, Counter())[f.severity] += 1

    @classmethod
    def of(cls, result: CheckResult) -> "ReportView":
        """The view of a whole result (in memory): its findings grouped under their sessions' files."""
        by_file: dict[str, list[Finding]] = {}
        for f in result.findings:
            by_file.setdefault(f.file or "", []).append(f)
        blocks: Spool[Block] = Spool()
        for s in result.sessions:
            blocks.append(Block(s, s.file, by_file.pop(s.file, [])))
        for file, found in by_file.items():
            blocks.append(Block(None, file, found))
        tally = RequestTally()
        for r in result.requests:
            tally.add(r)
        view = cls(blocks, list(result.problems), result.baseline, tally, len(result.sessions), 0)
        view.notes = list(result.notes)
        view.events = sum(m.events for m in result.sessions)
        view.projected = sum(1 for m in result.sessions if is_projected(m))
        for f in result.findings:
            view.count(f)
        return view

    def sessions(self) -> Iterator[SessionSummary]:
        for b in self.blocks:
            if b.session is not None:
                yield b.session

    def session_rows(self) -> Iterator[dict[str, Any]]:
        """Each session's row of the JSON report; a spooled block's is read from its JSON, no summary made."""
        if not self.blocks.on_disk:
            yield from (s.row() for s in self.sessions())
            return
        for s, _, _ in self.blocks.encoded():
            if s is not None:
                yield summary_row(s.__getitem__)

    def findings(self) -> Iterator[Finding]:
        if not self.blocks.on_disk:
            for b in self.blocks:
                yield from b.findings
            return
        for _, _, found in self.blocks.encoded():  # (the sessions left as JSON: most blocks have no finding)
            for f in found:
                yield Finding(**f)

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        out.update(self.severities)
        return out

    def request_counts(self) -> dict[str, int]:
        return self.tally.counts()

    @property
    def requests_checked(self) -> int:
        c = self.tally.counts()
        return c["compared"]

    def summary(self) -> dict[str, int]:
        c = self.counts()
        return {
            "sessions": self.session_count,
            "events": self.events,
            "requests_checked": self.requests_checked,
            "errors": c["error"],
            "warnings": c["warning"],
            "infos": c["info"],
        }

    def failed(self, fail_on: str = "error") -> bool:
        threshold = SEVERITY_RANK[fail_on]
        return any(SEVERITY_RANK.get(sev, 0) >= threshold for sev, n in self.severities.items() if n)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.failed("error")

    def statistics(self) -> list[dict[str, Any]]:
        """Findings per rule, most frequent first (:func:`~invariants.gate.formats.context.statistics`)."""
        from invariants.model.registry import RULES

        rows = []
        for rule, n in sorted(self.rules.items(), key=lambda kv: (-kv[1], kv[0])):
            r = RULES.get(rule)
            rows.append(
                {
                    "rule": rule,
                    "name": r.name if r else "",
                    "category": r.category if r else "",
                    "severity": self.rule_severities[rule].most_common(1)[0][0],
                    "count": n,
                }
            )
        return rows

    def plain_json(self) -> bool:
        """Whether every row and finding encodes as JSON without the ``ensure_ascii`` fallback (lone
        surrogates, huge integers): the JSON writers then keep non-ASCII text as it is, as a whole
        report made at once would."""
        if self.blocks.on_disk:
            return not self.blocks.fallbacks
        import orjson

        try:
            for b in self.blocks:
                orjson.dumps([None if b.session is None else b.session.row(), [f.to_json() for f in b.findings]])
        except (TypeError, orjson.JSONEncodeError):
            return False
        return True

    def close(self) -> None:
        self.blocks.close()


def view_of(result: CheckResult | ReportView) -> ReportView:
    """A writer's input: a view as it is, a whole result made into one."""
    return result if isinstance(result, ReportView) else ReportView.of(result)


def is_projected(m: Any) -> bool:
    """Whether a session (a summary) was read from the projected snapshot form (its report row names the form)."""
    from invariants.read.projected import PROJECTED

    return m.row().get("form") == PROJECTED
