"""What one pass over a session leaves: the step states and the session model.

:class:`SessionModel` keeps, for each ``step/start``, a small :class:`StepState` (turn, step, seq,
surface position, instance, header in force at dispatch).  Requests are not kept:
:meth:`SessionModel.rebuild_request` materialises one on demand from a step state or a dispatch
position, in time proportional to its size.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

from invariants.model.findings import Finding
from invariants.model.records import SessionHeader
from invariants.read.profiles import Profile
from invariants.read.source import LogSource
from invariants.replay.header_fold import HeaderFold, HeaderVersion, Instance, prefix_of
from invariants.replay.surface import Surface

SPREAD_CONFIG = frozenset({"provider", "reasoningEffort"})  # config fields a request carries beyond the checked ones


@dataclass(slots=True)
class StepState:
    index: int
    turn: Any
    step: Any
    seq: int
    line: int
    surface: tuple[int, int]  # surface position over events < step/start
    instance: int | None = None
    header_version: int | None = None  # version index in force when the step dispatched
    header_event: int | None = None  # version index written inside this step
    first_chunk_seq: int | None = None
    end_seq: int | None = None
    last_seq: int = -1
    last_line: int = 0
    chunks: int = 0
    usage: dict | None = None
    compaction_before: bool = False
    status: str = "unchecked"  # ok | diverges | header | unexplained | unchecked
    requests: list = field(default_factory=list)  # indexes into SessionModel.requests

    @property
    def dispatched(self) -> bool:
        return self.first_chunk_seq is not None


@dataclass(slots=True)
class RebuiltRequest:
    """A rebuilt request, with where each message came from."""

    request: dict
    prefix_len: int
    derived_len: int
    suffix_len: int
    origins: list[int]  # event seq of each derived message
    header_version: HeaderVersion | None
    boundary_seq: int
    versions: list[HeaderVersion] = field(default_factory=list, repr=False)  # the fold's, for :meth:`setter`

    def setter(self, part: str) -> HeaderVersion | None:
        """The header version whose event last set ``part`` of the header in force (a header field such as
        ``messagePrefix`` or ``system``, or ``config.<name>``); None when no header event set it."""
        v = self.header_version
        i = v.set_by.get(part) if v is not None else None
        return self.versions[i] if i is not None and i < len(self.versions) else None

    def region(self, index: int) -> str:
        if index < self.prefix_len:
            return "prefix"
        if index < self.prefix_len + self.derived_len:
            return "derived"
        if index < self.prefix_len + self.derived_len + self.suffix_len:
            return "suffix"
        return "beyond"


@dataclass
class SessionModel:
    source: LogSource
    header: SessionHeader | None
    profile: Profile
    era_evidence: list[str]
    steps: list[StepState]
    fold: HeaderFold
    surface: Surface
    findings: list[Finding]
    events: int = 0
    chunks: int = 0
    chunk_rows: int = 0
    turns: int = 0
    lines: int = 0
    bytes: int = 0
    compactions: list[int] = field(default_factory=list)
    contexts: list[tuple[int, dict]] = field(default_factory=list)  # (seq, data) of each request/context
    end_seed_seqs: list[int] = field(default_factory=list)
    torn: bool = False
    open_turn_at_end: bool = False
    requests: list = field(default_factory=list)  # filled by capture matching
    checkpoint: builtins.bytes | None = None  # opaque: resume state for a log that grows (see resume())
    _step_seqs: list = field(default_factory=list, repr=False)

    @property
    def id(self) -> str:
        return self.header.id if self.header else self.source.path.stem

    @property
    def file(self) -> str:
        return self.source.display

    @property
    def instances(self) -> list[Instance]:
        return self.fold.instances

    @property
    def versions(self) -> list[HeaderVersion]:
        return self.fold.versions

    def step_for_log_length(self, log_length: int) -> StepState | None:
        """The step a request dispatched at ``log_length`` events belongs to: the last step/start before it."""
        import bisect

        if len(self._step_seqs) != len(self.steps):
            self._step_seqs = [s.seq for s in self.steps]
        k = bisect.bisect_left(self._step_seqs, log_length)
        return self.steps[k - 1] if k else None

    def step_for(self, turn: Any, step: Any) -> StepState | None:
        """The last step numbered (turn, step), compared with ``==`` as a scan would (1 == 1.0)."""
        key = (turn, step)
        try:
            hash(key)
        except TypeError:  # a list or object for a number: only a scan can compare it
            for s in reversed(self.steps):
                if s.turn == turn and s.step == step:
                    return s
            return None
        index = self.__dict__.get("_step_index")
        if index is None or index[0] != len(self.steps):
            table: dict = {}
            for s in self.steps:  # in order: the last step with a number wins
                try:
                    table[(s.turn, s.step)] = s
                except TypeError:
                    pass
            index = self.__dict__["_step_index"] = (len(self.steps), table)
        return index[1].get(key)

    def rebuild_request(self, step: StepState, log_length: int | None = None) -> RebuiltRequest | None:
        """The request the loop must have sent for ``step`` (dispatched at ``log_length`` when known)."""
        if log_length is not None:
            version = self.fold.version_before(log_length)
        else:
            version = self.versions[step.header_version] if step.header_version is not None else None
        if version is None:
            return None
        if self.profile.request_rule == "dispatch":
            position = self.surface.position_before(
                log_length if log_length is not None else (step.first_chunk_seq or step.last_seq + 1)
            )
        else:
            position = step.surface
        header = version.header
        derived, origins = self.surface.messages_at(position)
        prefix = prefix_of(header)
        suffix = header.get("messageSuffix", [])
        suffix = suffix if isinstance(suffix, list) else [suffix]
        config = header.get("config") or {}
        # Keys in the order the recorded requests of both eras carry them (so a replayed request is
        # byte-identical to the captured one): model, system, tools, messages, the call settings, then
        # the config fields the late era spreads unchecked (provider, reasoningEffort) in the config's order.
        request: dict = {"model": config.get("model")}
        for key in ("system", "tools"):
            if key in header:
                request[key] = header[key]
        request["messages"] = [*prefix, *derived, *suffix]
        for key in ("temperature", "maxTokens", "stop"):
            if key in config:
                request[key] = config[key]
        for key in config:
            if key in SPREAD_CONFIG:
                request[key] = config[key]
        return RebuiltRequest(
            request, len(prefix), len(derived), len(suffix), origins, version, step.seq, self.fold.versions
        )
