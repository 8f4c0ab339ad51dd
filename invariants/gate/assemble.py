"""The cross-session half of a check, streamed: unit results in any order -> the report, in report order.

Units complete in whatever order their executor finishes them.  Each
result is split into its sessions' blocks (a session's findings, then the
read and check findings of its folder's captures that name its file) and
held in a *reorder window* until every session before it in discovery order
has arrived; then it is written to a :class:`~invariants.gate.spool.Spool`
(a temporary file for the CLI), and the ledger sees it.  A spooled run's
window that holds :data:`WINDOW` blocks parks later arrivals on disk
(:class:`~invariants.gate.parking.Parking`) until their turn.  What stays in
memory is the window and the findings that name no session of their unit (few).
Forked children are checked against their parents at the end, from the
spool read once into a temporary table
(:class:`~invariants.gate.session_table.SessionTable`).  So a run holds what
its largest window holds, not a summary per session.

:meth:`Assembler.finish` then merges the late findings (fork seeds, a
capture's lines no log explains) into their places, applies the
configuration (select, ignore, severity, per-path ignores, then the baseline
in report order) and writes the final blocks that the writers read
(:class:`~invariants.gate.view.ReportView`).  The order is exactly the sort
:func:`~invariants.gate.policy.report_order` gives a whole run: sessions in
discovery order, then files no session owns by name; within a file, seq,
line and rule, ties in the order a serial run gathers findings.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator

from invariants.gate.executor import AUTO_BYTES, Executor
from invariants.gate.parking import Parking
from invariants.gate.policy import FindingPolicy
from invariants.gate.result import CheckOptions, CheckResult, RequestCheck, SessionSummary
from invariants.gate.result_cache import ResultCache
from invariants.gate.spool import Spool
from invariants.gate.unit import Unit, UnitOutcome
from invariants.gate.view import Block, ReportView, RequestTally, decode_block, encode_block, is_projected
from invariants.model.findings import Finding
from invariants.replay.model import SessionModel

END = 1 << 60  # the order of a capture's problem (after every source's)
WINDOW = 4096  # blocks the reorder window holds in memory; later arrivals wait on disk


def _in_file(f: Finding) -> tuple:
    """A finding's place within its file's block (the tail of :func:`~invariants.gate.policy.report_order`)."""
    return (f.seq if f.seq is not None else -1, f.line or 0, f.rule)


def _encode_parked(b: Block | None) -> list | None:
    return None if b is None else encode_block(b)


def _decode_parked(v: list | None) -> Block | None:
    return None if v is None else decode_block(v)


FORK_BYTES = 256 << 10
"""A forked child's log below which comparing its seed costs about what sending it to a worker does: on
100,000 corpus logs (16,000 children of ~6 KB) the fork pass took 2.7 s here, 3.8 s on two workers."""


class Assembler:
    """Takes ``add(n, unit, outcome)`` for every unit (``n`` its place in the plan) in any order, then
    ``finish()``.

    ``spooled``: blocks go to temporary files (the streamed CLI run); otherwise they stay in memory
    and :meth:`result` gives the whole :class:`CheckResult`.  ``keep``: outcomes carry models and live
    request verdicts (an in-process run)."""

    def __init__(
        self,
        options: CheckOptions,
        policy: FindingPolicy,
        *,
        cache: ResultCache | None = None,
        stats: Any = None,
        ledger: str | os.PathLike | None = None,
        keep: bool = False,
        executor: Executor | None = None,
        spooled: bool = False,
        on_session: Callable[[SessionSummary], None] | None = None,
    ) -> None:
        self.options = options
        self.policy = policy
        self.cache = cache
        self.stats = stats
        self.keep = keep
        self.executor = executor
        self.spooled = spooled
        self.on_session = on_session
        self.total = 0  # sources of the units added so far
        self.window: dict[int, Block | None] = {}  # source index -> its block (None: the source is a problem)
        self.next = 0  # the next source index to leave the window
        self.parking: Parking[Block | None] = Parking(_encode_parked, _decode_parked)
        self.blocks: Spool[Block] = Spool(encode_block, decode_block) if spooled else Spool()
        self.late: list[tuple[tuple, Finding]] = []  # (tiebreak, finding) naming no session of its unit
        self.source_problems: list[tuple[int, int, int, str]] = []
        self.tally = RequestTally()
        self.requests: list[tuple[int, int, list[RequestCheck]]] = []  # kept for a CheckResult only
        self.models: list[tuple[int, SessionModel]] = []
        self.forked = 0  # sessions whose header names a parent (the fork pass reads them from the blocks)
        self.fork_bytes = 0  # their logs' bytes: about what comparing their seeds reads
        self.sessions = 0
        self.events = 0
        self.projected = 0
        self.notes: list[str] = []  # said on stderr, never a problem (a ledger migrated)
        self.ledger = None
        if ledger is not None:
            from invariants.gate.ledger import Ledger

            self.ledger = Ledger(ledger, notes=self.notes)

    # -- the window -------------------------------------------------------------------------------

    def add(self, n: int, unit: Unit, outcome: UnitOutcome) -> None:
        """Unit ``n``'s result: its blocks enter the window, and every block now in order leaves it."""
        self.total += len(unit.indexes)
        res = outcome.data
        indexes = unit.indexes
        blocks: dict[str, Block] = {}
        placed: list[tuple[int, Block | None]] = []
        for idx, s in res["sessions"]:
            summary = s if isinstance(s, SessionSummary) else SessionSummary.from_json(s)
            block = Block(summary, summary.file, list(summary.findings))
            blocks[summary.file] = block
            placed.append((indexes[idx], block))
        if self.keep:
            self.models.extend((indexes[idx], m) for (idx, _), m in zip(res["sessions"], outcome.models))
        for idx, msg in res["problems"]:
            if idx < len(indexes):
                self.source_problems.append((indexes[idx], idx, n, msg))
                placed.append((indexes[idx], None))
            else:
                self.source_problems.append((END, idx, n, msg))
        caps = sorted(enumerate(res["captures"]), key=lambda kc: kc[1]["first"])
        for phase, part in ((1, "read"), (2, "check")):
            for k, cap in caps:
                first = cap["first"]
                g = indexes[first] if first < len(indexes) else 0
                for pos, f in enumerate(cap[part]):
                    finding = f if isinstance(f, Finding) else Finding(**f)
                    owner = blocks.get(finding.file or "")
                    if owner is not None:
                        owner.findings.append(finding)
                    else:
                        self.late.append(((phase, g, n, k, pos), finding))
        for k, cap in caps:
            first = cap["first"]
            g = indexes[first] if first < len(indexes) else 0
            live = outcome.requests[k] if self.keep else None
            checks = live if live is not None else [RequestCheck.from_json(r) for r in cap["requests"]]
            for r in checks:
                self.tally.add(r)
            if not self.spooled:
                self.requests.append((g, n, checks))
        window = self.window
        for i, held in sorted(placed, key=lambda ib: ib[0]):  # in place order: parked runs stay long
            if not self.spooled or len(window) < WINDOW or i == self.next:  # (a run in memory keeps it all)
                window[i] = held
            else:
                self.parking.park(i, held)
        self._drain()

    def _drain(self) -> None:
        window, parking = self.window, self.parking
        while True:
            if self.next in window:
                due: Iterable[Block | None] = (window.pop(self.next),)
            elif self.next in parking:
                due = parking.take(self.next)  # a run of consecutive places, in order
            else:
                return
            for block in due:
                self.next += 1
                if block is not None:
                    self._emit(block)

    def _emit(self, block: Block) -> None:
        s = block.session
        assert s is not None
        self.sessions += 1
        self.events += s.events
        self.projected += is_projected(s)
        if self.ledger is not None:
            block.findings.extend(self.ledger.see(s))
        if s.has_header and s.parent_session:
            self.forked += 1
            self.fork_bytes += s.bytes
        if self.spooled and s.findings:
            s.findings = []  # a spooled block carries them in its own list
        self.blocks.append(block)
        if self.on_session is not None:
            self.on_session(s)

    # -- the end ----------------------------------------------------------------------------------

    def finish(self, problems: list[str]) -> ReportView:
        """The late findings merged in, the configuration applied: the view the writers read."""
        if self.next != self.total or self.window or self.parking:
            missing = self.total - self.next
            raise RuntimeError(f"check: {missing} source(s) never came back from their unit")
        self.parking.close()
        # The seed comparisons go to the executor when they read enough to pay for it: AUTO_BYTES in all,
        # as for units, and FORK_BYTES a child; else its workers are let go now, not held to the end.
        pooled = not self.keep and self.fork_bytes >= max(AUTO_BYTES, self.forked * FORK_BYTES)
        if not pooled and (idle := getattr(self.executor, "idle", None)) is not None:
            idle()
        by_file: dict[str, list[tuple[tuple, Finding]]] = {}
        if self.forked:
            self._forks(self.executor if pooled else None)
        for tie, f in self.late:
            by_file.setdefault(f.file or "", []).append((tie, f))
        if self.ledger is not None:
            self.ledger.save()
        policy = self.policy
        matcher = None
        if policy.baseline_entries is not None:
            from invariants.gate.baseline import BaselineMatcher

            matcher = BaselineMatcher(policy.baseline_entries, str(policy.baseline_file))
            for c in self.options.captures or []:
                matcher.saw(c)
        out: Spool[Block] = Spool(encode_block, decode_block) if self.spooled else Spool()
        self.source_problems.sort(key=lambda t: (t[0], t[1], t[2]))
        view = ReportView(
            out,
            problems + [msg for _, _, _, msg in self.source_problems],
            None,
            self.tally,
            self.sessions,
            self.events,
        )
        view.notes.extend(self.notes)
        view.projected = self.projected
        kept: list[Finding] = []

        def final(found: list[Finding]) -> list[Finding]:
            done = []
            for f in found:
                g = policy.judge(f)
                if g is None:
                    continue
                if matcher is not None:
                    if g.file:
                        matcher.saw(g.file)
                    if matcher.take(g):
                        continue
                done.append(g)
                view.count(g)
            if not self.spooled:
                kept.extend(done)
            return done

        for block in self._to_judge(out, by_file, matcher is None):
            s = block.session
            assert s is not None
            found = block.findings
            extra = by_file.pop(block.file, None)
            if extra:
                found = found + [f for _, f in extra]
            found.sort(key=_in_file)  # stable: gathered in the order a serial run gathers them
            if matcher is not None:
                matcher.saw_session(s)
            out.append(Block(s, block.file, final(found)))
        orphans = sorted(
            ((f, tie) for found in by_file.values() for tie, f in found),
            key=lambda ft: (ft[0].file or "", *_in_file(ft[0]), ft[1]),
        )
        group: list[Finding] = []
        for f, _ in orphans:
            if group and (group[0].file or "") != (f.file or ""):
                out.append(Block(None, group[0].file or "", final(group)))
                group = []
            group.append(f)
        if group:
            out.append(Block(None, group[0].file or "", final(group)))
        if matcher is not None:
            view.baseline = matcher.outcome(kept if not self.spooled else None, view.finding_count)
        if self.spooled:
            self.blocks.close()
        self._kept = kept
        return view

    def _to_judge(self, out: Spool[Block], by_file: dict, unmatched: bool) -> Iterator[Block]:
        """The blocks in order; a spooled one with no finding to judge or merge (and no baseline to
        match it) goes to ``out`` as it was spooled, not decoded and encoded again."""
        if not self.spooled:
            yield from self.blocks
            return
        for v in self.blocks.encoded():
            if unmatched and not v[2] and v[1] not in by_file:
                out.append_encoded(v)
            else:
                yield decode_block(v)

    def _forks(self, executor: Executor | None) -> None:
        """Fork seed findings of every child, its parent chosen among the checked sessions of its parent's
        id: the blocks are read once into a temporary table, which hands the children out one by one."""
        from invariants.gate.fork_checks import fork_findings
        from invariants.gate.session_table import SessionTable

        if self.blocks.on_disk:  # each summary as spooled: no session is decoded and encoded again
            sessions = (v[0] for v in self.blocks.encoded() if v[0] is not None)
        else:
            sessions = (b.session.to_json() for b in self.blocks if b.session is not None)
        table = SessionTable(sessions)
        try:
            lost: list[str] = []
            forks, hits = fork_findings(table.forks(), self.cache, executor, lost)
        finally:
            table.close()
        self.source_problems.extend((END + 1, 0, n, msg) for n, msg in enumerate(lost))  # after the captures'
        if self.stats is not None:
            self.stats.fork_hits += hits
        for pos, f in enumerate(forks):
            self.late.append(((3, 0, 0, 0, pos), f))

    def result(self, view: ReportView) -> CheckResult:
        """The whole result of an in-memory run (sessions with their raw findings, models, request verdicts)."""
        self.requests.sort(key=lambda t: (t[0], t[1]))  # stable: a unit's captures keep their order
        self.models.sort(key=lambda t: t[0])
        return CheckResult(
            [b.session for b in view.blocks if b.session is not None],
            self._kept,
            [r for _, _, checks in self.requests for r in checks],
            view.problems,
            [m for _, m in self.models],
            view.baseline,
            list(view.notes),
        )
