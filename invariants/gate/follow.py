"""Checking logs that grow: resume each replay over the appended bytes instead of replaying it all.

:class:`Follow` checks the same paths round after round and gives, each
round, the :class:`~invariants.gate.result.CheckResult` that
:func:`~invariants.gate.pipeline.check` gives for them at that moment (same
findings, same order, same configuration), through the pipeline's own second
half (:func:`~invariants.gate.pipeline.check_sources` with the models handed
in).  Per log it keeps the replay's checkpoint (``replay(source,
checkpoint=True)``) and, when the file only grew (same inode, larger, the
bytes before the old end unchanged), folds just the appended bytes with
``resume(source, checkpoint)``.  A log whose revision did not change keeps its
model, and a round in which no log, capture or input changed gives the last
result again.  Captures are read again in every other round, as a check reads
them: a line byte for byte its rebuilt request is proved by its bytes and never
parsed, which costs less than comparing records kept from the last round by
value (their requests are the last round's objects).  Anything else (zstd, a
SQLite database that changed, a shrunk or replaced file, a checkpoint that does
not fit, appended lines that change the era verdict) is replayed in full.  :class:`FollowStats` counts what was
replayed, in events, so a test can tell a resume from a replay without a clock.

The TUI's ``--follow`` and ``inspector check --watch`` are its two users; the
watch's rounds, and what is new in each, are :class:`Watch`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import invariants.replay.checkpoint as checkpoint_mod
from invariants.gate.config import Config
from invariants.gate.pipeline import PathLike, check_sources, cyclic_gc_paused, empty_inputs
from invariants.gate.policy import FindingPolicy
from invariants.gate.requests import clear_routing
from invariants.gate.result import CheckOptions, CheckResult
from invariants.gate.result_cache import revision
from invariants.gate.unit import replay_source
from invariants.model.findings import Finding
from invariants.model.registry import make_finding, rules_where
from invariants.read.capture import find_capture
from invariants.read.discover import discover
from invariants.read.lines import open_readonly
from invariants.read.source import LogPath, LogSource, absolute_name
from invariants.replay.model import SessionModel

TAIL_WINDOW = 4096  # bytes before the old end that must be unchanged for a resume
POST_FOLD_RULES = rules_where(fires="after-fold")  # findings replay() adds after the fold, which a resume does not redo
# Findings about where a log ends right now: while it is being written they come and go
# with every append, so a watch reports them only when it stops.
END_OF_LOG_RULES = rules_where(fires="at-end")


@dataclass
class FollowStats:
    """What the rounds read, counted in events and logs (timing-independent)."""

    rounds: int = 0
    events_replayed: int = 0  # events folded over all rounds: a resume counts only the appended ones
    last_events_replayed: int = 0  # the same, for the last round
    # logs per way of reading them, over all rounds (the keys of Follow.modes):
    full: int = 0  # replayed from the first byte
    resume: int = 0  # continued from a checkpoint over the appended bytes
    kept: int = 0  # unchanged: the model was kept
    held: int = 0  # a last line still being written: the previous model was kept


@dataclass(frozen=True)
class _Mark:
    inode: int
    device: int
    size: int  # where the checkpoint resumes (model.bytes)
    tail: str  # hash of the TAIL_WINDOW bytes before it


def _tail_hash(path: LogPath, end: int) -> str:
    import hashlib  # deferred: only a followed log hashes its tail

    with open_readonly(path, -1) as fh:
        start = max(0, end - TAIL_WINDOW)
        fh.seek(start)
        return hashlib.sha256(fh.read(end - start)).hexdigest()


def _stamp(src: LogSource) -> tuple | None:
    """The source's file revision (a database's ``-wal`` file too); None when it cannot be stat'ed."""
    rev = revision(src.path)
    if rev is None:
        return None
    return (tuple(rev), tuple(revision(f"{src.path}-wal") or ())) if src.member is not None else tuple(rev)


def _ends_mid_line(path: LogPath) -> bool:
    try:
        with open_readonly(path, -1) as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"
    except OSError:
        return False  # empty or unreadable: the replay says so


@dataclass
class _Followed:
    """One log between rounds: its last model (or why it could not be read), its revision, its checkpoint."""

    model: SessionModel | str
    stamp: tuple | None
    mark: _Mark | None = None
    carry: list[Finding] = field(default_factory=list)  # POST_FOLD_RULES findings of the full replay
    # While the last line is being written: the last state that ended on a whole line (the next round resumes
    # from its checkpoint); None when this one did.
    base: _Followed | None = None


class Follow:
    """Check ``paths`` again and again as their logs grow; ``modes`` says how each log was read last.

    ``hold_partial`` in :meth:`check`: a plain log whose last line is still
    being written (no final newline) is read up to that line (the complete
    lines before it are folded this round; the fragment is a torn tail, which a
    watch reports only when it stops), and the next round continues from the
    last checkpoint that ended on a whole line, so only the partial line waits.
    """

    def __init__(
        self,
        paths: PathLike | Iterable[PathLike],
        options: CheckOptions | None = None,
        *,
        config: Config | None = None,
        allow_empty: bool = False,
    ) -> None:
        self.paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        self.options = options or CheckOptions()
        self.policy = FindingPolicy.of(config)
        self.allow_empty = allow_empty
        self.stats = FollowStats()
        self.modes: dict[str, str] = {}  # source display -> full | resume | kept | held
        self._logs: dict[tuple[str, str | None], _Followed] = {}
        self._last: tuple[tuple, CheckResult] | None = None  # the last round's inputs and result

    @property
    def last_mode(self) -> str:
        """How the last round read its one log (``none`` before the first round or with several logs)."""
        return next(iter(self.modes.values())) if len(self.modes) == 1 else "none"

    def check(self, hold_partial: bool = False) -> CheckResult:
        """One round: what :func:`~invariants.gate.pipeline.check` gives for the paths now."""
        with cyclic_gc_paused():
            sources, problems = discover(self.paths)
            if not self.allow_empty:
                problems.extend(empty_inputs(self.paths, sources))
            logs: dict[tuple[str, str | None], _Followed] = {}
            models: list[SessionModel | str] = []
            self.modes = {}
            replayed = 0
            for src in sources:
                key = (absolute_name(src.path), src.member)
                followed, mode, events = self._read(src, self._logs.get(key), hold_partial)
                logs[key] = followed
                models.append(followed.model)
                self.modes[src.display] = mode
                replayed += events
                setattr(self.stats, mode, getattr(self.stats, mode) + 1)
            unchanged = list(logs) == list(self._logs) and all(m == "kept" for m in self.modes.values())
            self._logs = logs
            self.stats.rounds += 1
            self.stats.last_events_replayed = replayed
            self.stats.events_replayed += replayed
            inputs = (problems, self._capture_stamps(sources))
            if unchanged and self._last is not None and self._last[0] == inputs:
                return self._last[1]  # no log, capture or input changed: the last result stands
            for m in models:
                if isinstance(m, SessionModel):
                    clear_routing(m)  # a kept model's captures are matched again (no-op on a new one)
            result = check_sources(
                sources,
                self.options,
                self.policy,
                problems=problems,
                models=models,
                keep_models=True,
            )
            self._last = (inputs, result)
            return result

    def _capture_stamps(self, sources: list[LogSource]) -> list:
        """The revisions of every capture the round reads (beside its logs, or named)."""
        named = self.options.captures
        paths = list(named) if named is not None else [find_capture(s.path) for s in sources]
        return [(str(p), revision(p)) for p in dict.fromkeys(paths) if p is not None]

    # -- one log ---------------------------------------------------------------------------
    def _read(self, src: LogSource, prev: _Followed | None, hold_partial: bool) -> tuple[_Followed, str, int]:
        """The log's model for this round, how it was made, and how many events were folded for it."""
        stamp = _stamp(src)
        if prev is not None and stamp is not None and stamp == prev.stamp:
            return prev, "kept", 0
        base = prev.base if prev is not None and prev.base is not None else prev
        now, mode, events = None, "full", 0
        if base is not None and isinstance(base.model, SessionModel):
            now = self._resume(src, base, stamp)
            if now is not None:
                mode, events = "resume", _events(now.model) - _events(base.model)
        if now is None:
            now = self._full(src, stamp)
            events = _events(now.model)
        if prev is not None and hold_partial and src.resumable and now.mark is None and _ends_mid_line(src.path):
            # the complete lines are in this round's model; the next resumes from the last whole-line checkpoint
            return _Followed(now.model, stamp, base=base), "held", events
        return now, mode, events

    def _full(self, src: LogSource, stamp: tuple | None) -> _Followed:
        checkpoint = src.resumable and self.options.max_line is None
        model = replay_source(src, self.options, checkpoint=checkpoint)
        followed = _Followed(model, stamp)
        if isinstance(model, SessionModel) and model.checkpoint is not None:
            followed.mark = self._mark(src, model)
            followed.carry = [f for f in model.findings if f.rule in POST_FOLD_RULES]
        return followed

    def _resume(self, src: LogSource, prev: _Followed, stamp: tuple | None) -> _Followed | None:
        model, mark = prev.model, prev.mark
        if mark is None or not isinstance(model, SessionModel) or model.checkpoint is None:
            return None
        try:
            st = src.path.stat()
            if (st.st_ino, st.st_dev) != (mark.inode, mark.device) or st.st_size <= mark.size:
                return None  # replaced, shrunk, or rewritten at the same size
            if _tail_hash(src.path, mark.size) != mark.tail:
                return None
        except OSError:
            return None
        try:
            resumed = checkpoint_mod.resume(src, model.checkpoint)
        except Exception:  # whatever went wrong, a full replay says it properly
            resumed = None
        if resumed is None:
            return None
        resumed.findings.extend(
            make_finding(
                f.rule,
                f.message,
                file=resumed.file,
                session=resumed.id,
                seq=f.seq,
                line=f.line,
                turn=f.turn,
                step=f.step,
                path=f.path,
                detail=f.detail,
            )
            for f in prev.carry
        )
        followed = _Followed(resumed, stamp, carry=list(prev.carry))
        if resumed.checkpoint is not None:
            followed.mark = self._mark(src, resumed)
        return followed

    @staticmethod
    def _mark(src: LogSource, model: SessionModel) -> _Mark | None:
        try:
            st = src.path.stat()
            return _Mark(st.st_ino, st.st_dev, model.bytes, _tail_hash(src.path, model.bytes))
        except OSError:
            return None


def finding_key(f: Finding) -> tuple:
    """What makes a finding the same one in the next round (its detail aside)."""
    return (f.rule, f.severity, f.file, f.session, f.seq, f.line, f.turn, f.step, f.path, f.message)


class Watch:
    """Rounds of a :class:`Follow`, each giving the findings that no earlier round reported.

    Findings about where a log ends (:data:`END_OF_LOG_RULES`) change with
    every append, so they wait for the final round.  ``result`` is the last
    round's :class:`~invariants.gate.result.CheckResult`.
    """

    def __init__(self, follow: Follow) -> None:
        self.follow = follow
        self.result: CheckResult | None = None
        self._seen: set[tuple] = set()

    def rounds(self, changes: Iterable[object]) -> Iterator[list[Finding]]:
        """A first round, then one per batch of ``changes`` (what a file watcher yields; only its arrival counts)."""
        yield self.round()
        for _ in changes:
            yield self.round()

    def round(self, final: bool = False) -> list[Finding]:
        """Check again; the new findings.  Only the ``final`` round (the logs as they are when the
        watch stops, a half-written last line included) reports end-of-log findings, so its result
        is what the gate would say of the logs then."""
        first = self.follow.stats.rounds == 0
        self.result = self.follow.check(hold_partial=not (first or final))
        new = []
        for f in self.result.findings:
            key = finding_key(f)
            if key in self._seen or (not final and f.rule in END_OF_LOG_RULES):
                continue
            self._seen.add(key)
            new.append(f)
        return new


def _events(model: SessionModel | str) -> int:
    """Events a followed log holds (none when it could not be read)."""
    return model.events if isinstance(model, SessionModel) else 0
