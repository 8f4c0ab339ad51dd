"""Checking a log that grows (``--follow``): resume the fold instead of replaying it all.

:class:`FollowCheck` gives the same :class:`~invariants.gate.result.CheckResult`
``check([path], keep_models=True)`` gives, but for a plain ``.jsonl`` log it
keeps the replay's checkpoint (``replay(source, checkpoint=True)``) and, when
the file only grew (same inode, larger, the bytes before the old end
unchanged), reads just the appended bytes with ``resume(source, checkpoint)``.
The resumed model goes through the rest of the one pipeline
(:func:`~invariants.gate.pipeline.check_sources`: captures, fork seeds, the
configuration), with a capture reader that reads a capture again only when
it changed.  Anything else (zstd, a SQLite database, a shrunk or replaced
file, a checkpoint that does not fit, a log still shorter than the era
sniff's window) is a full re-check.  Pure: no Textual.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import invariants.replay.session as replay_mod
from invariants.gate.config import Config
from invariants.gate.pipeline import check, check_sources, cyclic_gc_paused
from invariants.gate.policy import FindingPolicy
from invariants.gate.result import CheckOptions, CheckResult
from invariants.gate.unit import replay_source
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.read.capture import Recorded, read_capture
from invariants.read.discover import discover
from invariants.read.source import LogSource
from invariants.replay.session import SessionModel

TAIL_WINDOW = 4096  # bytes before the old end that must be unchanged for a resume
POST_FOLD_RULES = ("LOG011",)  # findings replay() adds after the fold, which a resume does not redo


@dataclass(frozen=True)
class _Mark:
    inode: int
    device: int
    size: int  # where the checkpoint resumes (model.bytes)
    tail: str  # hash of the TAIL_WINDOW bytes before it


def _tail_hash(path: Path, end: int) -> str:
    with open(path, "rb") as fh:
        start = max(0, end - TAIL_WINDOW)
        fh.seek(start)
        return hashlib.sha256(fh.read(end - start)).hexdigest()


class FollowCheck:
    """Check one log again and again as it grows; ``last_mode`` says how the last check ran."""

    def __init__(self, source: LogSource, options: CheckOptions, config: Config | None = None) -> None:
        self.source = source
        self.options = options
        self.config = config
        self.model: SessionModel | None = None  # the last model, when it carries a checkpoint
        self.mark: _Mark | None = None
        self.carry: list[Finding] = []
        self.last_mode = "none"  # full | resume | check
        self._captures: dict[Path, tuple[tuple, list[Recorded], list[Finding]]] = {}  # by (size, mtime, inode)

    @property
    def plain(self) -> bool:
        return not self.source.compressed and self.source.member is None and self.options.max_line is None

    def check(self) -> CheckResult:
        with cyclic_gc_paused():
            if self.plain:
                result = self._resume()
                if result is not None:
                    self.last_mode = "resume"
                    return result
                self.last_mode = "full"
                return self._full()
            self.last_mode = "check"
            self.model = self.mark = None
            return check([self.source.path], self.options, config=self.config, keep_models=True)

    # -- full ---------------------------------------------------------------------------
    def _full(self) -> CheckResult:
        self.model = self.mark = None
        sources, problems = discover([self.source.path])
        models = [replay_source(src, self.options, checkpoint=True) for src in sources]
        if len(models) == 1 and isinstance(models[0], SessionModel) and models[0].checkpoint is not None:
            self._keep(models[0], [f for f in models[0].findings if f.rule in POST_FOLD_RULES])
        return self._finish(sources, models, problems)

    # -- resume ---------------------------------------------------------------------------
    def _resume(self) -> CheckResult | None:
        model, mark = self.model, self.mark
        if model is None or mark is None or model.checkpoint is None:
            return None
        try:
            st = os.stat(self.source.path)
            if (st.st_ino, st.st_dev) != (mark.inode, mark.device) or st.st_size <= mark.size:
                return None  # replaced, shrunk, or rewritten at the same size
            if _tail_hash(self.source.path, mark.size) != mark.tail:
                return None
        except OSError:
            return None
        try:
            resumed = replay_mod.resume(self.source, model.checkpoint)
        except Exception:  # whatever went wrong, a full replay says it properly
            resumed = None
        if resumed is None:
            self.model = self.mark = None
            return None
        carry = [
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
            for f in self.carry
        ]
        resumed.findings.extend(carry)
        if resumed.checkpoint is not None:
            self._keep(resumed, self.carry)
        else:
            self.model = self.mark = None
        return self._finish([self.source], [resumed], [])

    def _keep(self, model: SessionModel, carry: list[Finding]) -> None:
        try:
            st = os.stat(self.source.path)
            self.mark = _Mark(st.st_ino, st.st_dev, model.bytes, _tail_hash(self.source.path, model.bytes))
        except OSError:
            self.model = self.mark = None
            return
        self.model = model
        self.carry = list(carry)

    def _read_capture(self, path: Path) -> tuple[list[Recorded], list[Finding]]:
        """read_capture, again only when the capture file changed (a big capture is most of a resume's time)."""
        try:
            st = os.stat(path)
            stamp: tuple | None = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        except OSError:
            stamp = None
        kept = self._captures.get(path)
        if stamp is not None and kept is not None and kept[0] == stamp:
            return kept[1], list(kept[2])
        records, found = read_capture(path, self.options.max_line)
        if stamp is not None:
            self._captures[path] = (stamp, records, list(found))
        return records, found

    # -- the rest of the pipeline ----------------------------------------------------------------
    def _finish(self, sources: list[LogSource], models: list, problems: list[str]) -> CheckResult:
        return check_sources(
            sources,
            self.options,
            FindingPolicy.of(self.config),
            problems=problems,
            models=models,
            read=self._read_capture,
            keep_models=True,
        )
