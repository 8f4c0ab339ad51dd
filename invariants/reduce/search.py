"""First the tail cut, then ddmin over the units of a log, coarse to fine, then single-unit removals until none
succeeds (1-minimal), then chunk-run collapses (:mod:`invariants.reduce.collapse`) and string cuts
(:mod:`invariants.reduce.shorten`)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from invariants.reduce.collapse import collapse, runs
from invariants.reduce.shorten import apply_cut, cuts, long_strings
from invariants.reduce.subject import Oracle
from invariants.reduce.units import Unit, levels


@dataclass
class Search:
    oracle: Oracle
    deadline: float | None = None
    events: set[int] = field(default_factory=set)  # kept event indices
    lines: set[int] = field(default_factory=set)
    timed_out: bool = False
    progress: bool | Callable[[int, int], None] = (
        False  # True: a line on stderr; a callable: told (candidates, events left)
    )
    shortened: int = 0  # strings cut
    collapsed: int = 0  # chunk runs collapsed
    _started: float = field(default_factory=time.monotonic)

    def _expired(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.timed_out = True
        return self.timed_out

    def _present(self, u: Unit) -> bool:
        return bool(u.events & self.events or u.lines & self.lines)

    def _try_without(self, units: list[Unit]) -> bool:
        events = self.events.difference(*[u.events for u in units])
        lines = self.lines.difference(*[u.lines for u in units])
        if (events, lines) == (self.events, self.lines) or self._expired():
            return False
        self._tick()
        if self.oracle.holds(sorted(events), sorted(lines)):
            self.events, self.lines = events, lines
            return True
        return False

    def _tick(self) -> None:
        if callable(self.progress):
            self.progress(self.oracle.candidates, len(self.events))
            return
        if self.progress and time.monotonic() - self._started > 1:
            print(
                f"\rreduce: {self.oracle.candidates} candidates, {len(self.events)} events left",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def ddmin(self, units: list[Unit]) -> None:
        units = [u for u in units if self._present(u)]
        n = 2
        while len(units) >= 2 and not self._expired():
            size = -(-len(units) // n)
            chunks = [units[k : k + size] for k in range(0, len(units), size)]
            for chunk in chunks:
                if self._expired():
                    return
                if self._try_without(chunk):
                    units = [u for u in units if self._present(u)]
                    n = max(n - 1, 2)
                    break
            else:
                if n >= len(units):
                    break
                n = min(2 * n, len(units))
        if len(units) == 1 and not self._expired():
            self._try_without(units)

    def one_minimal(self, units: list[Unit]) -> None:
        changed = True
        while changed and not self._expired():
            changed = False
            for u in units:
                if self._expired():
                    return
                if self._present(u) and self._try_without([u]):
                    changed = True

    def collapse_runs(self) -> None:
        """Collapse the chunk runs left: all at once, else each on its own."""
        found = runs(self.oracle.subject, sorted(self.events))
        if not found:
            return
        for batch in [found] + ([[r] for r in found] if len(found) > 1 else []):
            if self._expired():
                return
            candidate, dropped = collapse(self.oracle.subject, batch)
            if not dropped:
                continue
            self._tick()
            if self.oracle.holds(sorted(self.events - dropped), sorted(self.lines), candidate):
                self.oracle.subject = candidate
                self.events -= dropped
                self.collapsed += len(batch)
                if batch is found:
                    return

    def shorten(self) -> None:
        """Try each string cut once on the reduced log; keep those that keep the finding."""
        subject = self.oracle.subject
        for cut in cuts(long_strings(subject, sorted(self.events), sorted(self.lines))):
            if self._expired():
                return
            present = set(long_strings(subject, sorted(self.events), sorted(self.lines)))
            if not present.intersection(cut):
                continue  # cut already, as the partner of an earlier string
            candidate = apply_cut(subject, cut)
            self._tick()
            if self.oracle.holds(sorted(self.events), sorted(self.lines), candidate):
                subject = self.oracle.subject = candidate
                self.shortened += len(cut)

    def cut_tail(self, at: int | None) -> None:
        """First, one candidate without everything after the turn that holds the finding (event index ``at``)
        and without every capture line but the one sent for the finding's step; failing that, one without the
        tail only.  Most findings depend on neither, and on a long log each of these saves a whole search tier
        of large candidates."""
        subject = self.oracle.subject
        events = subject.log.events
        if at is None or not 0 <= at < len(events):
            return
        end = next((i for i in range(at, len(events)) if events[i].get("type") == "turn/end"), len(events) - 1)
        tail = frozenset(range(end + 1, len(events)))
        sent = [c.step_index for c in subject.lines if c.step_index is not None and c.step_index <= at]
        own = max(sent, default=None)
        others = frozenset(k for k, c in enumerate(subject.lines) if c.step_index is None or c.step_index != own)
        later = frozenset(k for k, c in enumerate(subject.lines) if c.step_index is not None and c.step_index > end)
        if not (others and self._try_without([Unit("tail", tail, others)])):
            self._try_without([Unit("tail", tail, later)])

    def run(self, at: int | None = None) -> None:
        self.cut_tail(at)
        tiers = levels(self.oracle.subject)
        for tier in tiers:
            self.ddmin(tier)
        self.one_minimal([u for tier in tiers for u in tier])
        self.collapse_runs()
        self.shorten()
        if self.progress is True and time.monotonic() - self._started > 1:
            print(file=sys.stderr)
