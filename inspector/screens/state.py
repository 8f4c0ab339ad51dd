"""What the session screen knows about one checked session: pure, no Textual.

Built once per check result (again on each re-check while following), it
answers the questions the views ask: which events belong to a step (its
*window*: from the event after the previous step to its own last event, so
the user message that led to a step is in it), which step a finding or an
event belongs to, which tab shows a finding, the rebuilt request and its
differences for a step (computed on demand and cached), and which event last
changed a header field.  Everything comes from ``invariants``; nothing here
re-derives a rule.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invariants.analysis.blame import BlameLine, blame_request
from invariants.analysis.verdicts import one_shot_steps, verdicts
from invariants.gate.result import CheckResult, RequestCheck, SessionSummary
from invariants.model.findings import SEVERITY_RANK, Finding
from invariants.model.registry import RULES
from invariants.read.capture import Recorded
from invariants.read.source import LogPath, UrlPath
from invariants.replay.compare import Difference, compare
from invariants.replay.header_fold import HeaderVersion
from invariants.replay.model import RebuiltRequest, SessionModel, StepState

DISAGREE = "verdicts disagree"  # the timeline filter for steps where we and the harness judge a request differently

STATUS_LABEL = {
    "ok": "matches the recorded request",
    "diverges": "messages diverge from the recorded request",
    "header": "a header field diverges from the recorded request",
    "unexplained": "the recorded request is unexplained",
    "unchecked": "not checked (no recorded request)",
}


def finding_tab(f: Finding) -> str:
    """The tab that shows a finding best."""
    rule = RULES.get(f.rule)
    return rule.tab if rule is not None else "events"


@dataclass(slots=True)
class TimelineRow:
    """One line of the timeline: a separator, a turn heading or a step."""

    kind: str  # "instance" | "drift" | "compaction" | "turn" | "step"
    step: int | None = None  # step index for "step" rows (and the step a separator precedes)
    instance: int | None = None
    seq: int | None = None
    turn: Any = None


@dataclass
class StepDiff:
    """One recorded request of a step against the rebuilt one."""

    check: RequestCheck
    expected: RebuiltRequest | None
    differences: list[Difference] = field(default_factory=list)

    @property
    def recorded(self) -> Recorded:
        """The recorded request itself (see :func:`kept`)."""
        return kept(self.check)


def check_input(path: LogPath) -> str | Path:
    """``path`` as :func:`~invariants.gate.pipeline.check` is given its inputs: a URL as the text the user
    wrote (check reads it through fsspec again), a local path as it is."""
    return str(path) if isinstance(path, UrlPath) else path


def kept(check: RequestCheck) -> Recorded:
    """The recorded request ``check`` was made of: the screens check with ``keep_models``, so every
    request check they hold keeps its record (only a cached, JSON-read result drops it)."""
    if check.recorded is None:
        raise LookupError(f"{check.file}:{check.line}: the recorded request was not kept")
    return check.recorded


def session_findings(result: CheckResult, session: SessionModel | SessionSummary) -> list[Finding]:
    """The findings of ``session`` among a check of several logs (a database holds several sessions)."""
    others = [m for m in result.sessions if m.file != session.file]
    other_files = {m.file for m in others}
    other_ids = {m.id for m in others} - {session.id}
    return [f for f in result.findings if f.file not in other_files and f.session not in other_ids]


_SERIAL = itertools.count(1)


class SessionState:
    def __init__(self, result: CheckResult, model: SessionModel, upto: int | None = None) -> None:
        """``upto``: the state of a log's head (a preview), whose findings past that seq are of no step shown."""
        self.serial = next(_SERIAL)  # views cache what they drew by it: a re-check is a new serial
        self.result = result
        self.model = model
        self.upto = upto
        self.steps: list[StepState] = model.steps
        # windows: step i owns seqs [starts[i], starts[i+1])
        self.starts: list[int] = [0] + [s.last_seq + 1 for s in self.steps[:-1]] if self.steps else []
        # findings in the order of the log: by step (turn, step), then seq; session-wide ones first
        found = session_findings(result, model)
        where = [self._step_of_finding(f) for f in found]
        order = sorted(
            range(len(found)),
            key=lambda i: (-1 if where[i] is None else where[i], -1 if found[i].seq is None else found[i].seq, i),
        )
        self.findings: list[Finding] = [found[i] for i in order]
        self.finding_step: list[int | None] = [where[i] for i in order]
        self.step_findings: dict[int, list[int]] = {}
        for i, s in enumerate(self.finding_step):
            if s is not None:
                self.step_findings.setdefault(s, []).append(i)
        self._version_seqs = [v.seq for v in model.versions]
        self._expected: dict[tuple[int, int | None], RebuiltRequest | None] = {}
        self._diffs: dict[int, list[StepDiff]] = {}
        self._blame: dict[int, list[BlameLine]] = {}
        # one-shot requests (loopBuilt: false) under the step they belong to; None: under no step
        self.one_shots: dict[int | None, list[RequestCheck]] = one_shot_steps(model.requests, model.steps)
        self.disagreeing: dict[int, int] = {}  # step -> its recorded requests whose verdicts disagree
        for rc in model.requests:
            if rc.step is not None and verdicts(rc).disagree:
                self.disagreeing[rc.step] = self.disagreeing.get(rc.step, 0) + 1

    # -- counts ----------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def categories(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.category] = out.get(f.category, 0) + 1
        if self.disagreeing:
            out[DISAGREE] = sum(self.disagreeing.values())
        return out

    def worst(self, step: int) -> str | None:
        sev = [self.findings[i].severity for i in self.step_findings.get(step, ())]
        return max(sev, key=lambda s: SEVERITY_RANK.get(s, 0)) if sev else None

    # -- windows -----------------------------------------------------------------
    def window(self, index: int) -> tuple[int, int | None, int]:
        """(first seq, last seq or None for the end, a physical line at or before the first)."""
        first = self.starts[index]
        last = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else None
        line = self.steps[index - 1].last_line if index > 0 else 1
        return first, last, max(1, line)

    def step_of_seq(self, seq: int) -> int | None:
        if not self.steps:
            return None
        return max(0, bisect.bisect_right(self.starts, seq) - 1)

    def _step_of_finding(self, f: Finding) -> int | None:
        step_seq = f.detail.get("step_seq") if isinstance(f.detail, dict) else None
        seq = step_seq if isinstance(step_seq, int) else f.seq
        if seq is not None:
            if self.upto is not None and seq > self.upto:
                return None  # past the head shown: the whole check places it
            return self.step_of_seq(seq)
        if f.turn is not None and f.step is not None:
            st = self.model.step_for(f.turn, f.step)
            if st is not None:
                return st.index
        return None

    # -- timeline ------------------------------------------------------------------
    def rows(self, category: str | None = None) -> list[TimelineRow]:
        keep: set[int] | None = None
        if category == DISAGREE:
            keep = set(self.disagreeing)
        elif category is not None:
            keep = {
                s for i, s in enumerate(self.finding_step) if s is not None and self.findings[i].category == category
            }
        instances = self.model.instances
        compactions = self.model.compactions
        out: list[TimelineRow] = []
        last_instance: int | None = None
        last_turn: Any = object()
        for st in self.steps:
            if st.instance is not None and st.instance != last_instance:
                inst = instances[st.instance] if 0 <= st.instance < len(instances) else None
                if keep is None or st.index in keep:
                    out.append(TimelineRow("instance", st.index, st.instance, inst.seq if inst else None))
                    if inst is not None and inst.drift:
                        out.append(TimelineRow("drift", st.index, st.instance, inst.seq))
                    last_turn = object()
                last_instance = st.instance
            if st.compaction_before and (keep is None or st.index in keep):
                first, _, _ = self.window(st.index)
                seqs = [c for c in compactions if first <= c < st.seq]
                out.append(TimelineRow("compaction", st.index, seq=seqs[-1] if seqs else None))
            if keep is not None and st.index not in keep:
                continue
            if st.turn != last_turn:
                out.append(TimelineRow("turn", st.index, turn=st.turn))
                last_turn = st.turn
            out.append(TimelineRow("step", st.index, st.instance, st.seq, st.turn))
        return out

    def instance_first_steps(self) -> list[int]:
        """Step index of the first step of each loop instance (resume boundaries)."""
        out: list[int] = []
        seen: set[int] = set()
        for st in self.steps:
            if st.instance is not None and st.instance not in seen:
                seen.add(st.instance)
                out.append(st.index)
        return out

    # -- requests --------------------------------------------------------------------
    def recorded(self, index: int) -> list[RequestCheck]:
        return [self.model.requests[i] for i in self.steps[index].requests if i < len(self.model.requests)]

    def rebuild_request(self, index: int, log_length: int | None = None) -> RebuiltRequest | None:
        key = (index, log_length)
        if key not in self._expected:
            self._expected[key] = self.model.rebuild_request(self.steps[index], log_length)
        return self._expected[key]

    def rebuilt(self, index: int) -> RebuiltRequest | None:
        """The request the loop must have sent for step ``index`` (at its recorded dispatch when known)."""
        recs = self.recorded(index)
        ll = kept(recs[0]).log_length if recs else None
        return self.rebuild_request(index, ll)

    def diffs(self, index: int) -> list[StepDiff]:
        """The step's recorded requests against the rebuilt one, with its one-shots (shown, not compared),
        in capture order."""
        if index not in self._diffs:
            out = []
            compared = self.recorded(index)
            for rc in compared:
                rec = kept(rc)
                exp = self.rebuild_request(index, rec.log_length)
                out.append(StepDiff(rc, exp, compare(exp, rec.request) if exp is not None and rec.loop_built else []))
            out += [StepDiff(rc, None) for rc in self.one_shots.get(index, []) if all(rc is not c for c in compared)]
            out.sort(key=lambda sd: (sd.recorded.file, sd.recorded.line))
            self._diffs[index] = out
        return self._diffs[index]

    def blame(self, index: int) -> list[BlameLine]:
        """Each part of the step's rebuilt request with the event that produced it (empty without a header)."""
        if index not in self._blame:
            exp = self.rebuilt(index)
            self._blame[index] = blame_request(self.model, exp) if exp is not None else []
        return self._blame[index]

    def divergence(self, index: int) -> tuple[int, StepDiff] | None:
        """The first recorded request of the step that differs from the rebuilt one (its position and diff)."""
        return next(((k, sd) for k, sd in enumerate(self.diffs(index)) if sd.differences), None)

    # -- header history ----------------------------------------------------------------
    def version_index(self, version: HeaderVersion | None) -> int | None:
        if version is None:
            return None
        k = bisect.bisect_left(self._version_seqs, version.seq)
        for j in range(k, len(self.model.versions)):
            if self.model.versions[j] is version:
                return j
        return None

    def step_version(self, index: int) -> int | None:
        exp = self.rebuilt(index)
        if exp is not None:
            v = self.version_index(exp.header_version)
            if v is not None:
                return v
        return self.steps[index].header_version

    def last_change(self, field_name: str, version: int | None) -> int | None:
        """Index of the latest version at or before ``version`` whose event changed ``field_name``."""
        if version is None:
            return None
        for j in range(version, -1, -1):
            if field_name in self.model.versions[j].changed:
                return j
        return None

    def origin_of_message(self, exp: RebuiltRequest, i: int) -> int | None:
        """Seq of the event a message of a rebuilt request came from."""
        region = exp.region(i)
        if region == "derived":
            k = i - exp.prefix_len
            return exp.origins[k] if k < len(exp.origins) else None
        field_name = {"prefix": "messagePrefix", "suffix": "messageSuffix"}.get(region)
        if field_name is None:
            return None
        j = self.last_change(field_name, self.version_index(exp.header_version))
        return self.model.versions[j].seq if j is not None else (exp.header_version.seq if exp.header_version else None)


def describe_version(v: HeaderVersion) -> str:
    """How a header version came to be, in words: a snapshot with its reason, or a delta's arms."""
    if v.kind == "delta":
        return f"delta (arm{'s' if len(v.arms) != 1 else ''} {', '.join(v.arms) or 'none'})"
    return f"{v.kind} snapshot"
