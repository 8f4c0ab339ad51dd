"""What is being reduced: the log, its capture lines tied to the steps they were sent for (each as a patch on the
rebuilt request), and the oracle that says whether a candidate subset still shows the target finding."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invariants.analysis.forks import encode_id
from invariants.gate.pipeline import check
from invariants.model.findings import Finding
from invariants.read.source import LogSource, strip_log_suffix
from invariants.reduce.logfile import LogData, kept_seqs, new_log_length, renumber, write_captures, write_log
from invariants.reduce.patch import apply_patch, request_patch
from invariants.replay.model import SessionModel
from invariants.replay.session import replay

CAPTURE_NAME = "requests.jsonl"


@dataclass
class CaptureLine:
    line: dict  # the recorded line as read
    step_index: int | None  # index (into the events) of the step/start it was sent for; None: kept verbatim
    patch: dict | None = None


@dataclass
class Subject:
    log: LogData
    lines: list[CaptureLine] = field(default_factory=list)


def signature(f: Finding) -> tuple:
    """What makes two findings "the same" for the reducer: the rule and the region of the request."""
    d = f.detail or {}
    return (f.rule, d.get("region"), d.get("field"))


def _model(path: Path) -> SessionModel:
    return replay(LogSource(path, path.parent))


def tie_captures(log: LogData, path: Path) -> list[CaptureLine]:
    """Each capture line with the step it belongs to and its difference from the rebuilt request."""
    model = _model(path)
    index_of = {ev["seq"]: i for i, ev in enumerate(log.events)}
    out = []
    for line in log.captures:
        step, rebuilt = _rebuilt(model, line)
        if rebuilt is None or not isinstance(line.get("request"), dict) or line.get("loopBuilt") is False:
            out.append(CaptureLine(line, None))
            continue
        out.append(CaptureLine(line, index_of.get(step.seq), request_patch(rebuilt, line["request"])))
    return out


def _rebuilt(model: SessionModel, line: dict) -> tuple[Any, dict | None]:
    length = line.get("logLength")
    if isinstance(length, int) and not isinstance(length, bool):
        step = model.step_for_log_length(length)
    else:
        length, step = None, model.step_for(line.get("turn"), line.get("step"))
    if step is None:
        return None, None
    built = model.rebuild_request(step, length)
    return step, None if built is None else built.request


def materialise(subject: Subject, keep: list[int], keep_lines: list[int], folder: Path) -> Path | None:
    """Write the candidate into ``folder`` (the log under its own name, the captures as requests.jsonl);
    None when the candidate cannot be written as a well-formed log."""
    log = subject.log
    events = renumber(log, keep)
    if events is None:
        return None
    path = folder / log.name
    seqs = sorted(kept_seqs(log, keep))
    header = dict(log.header)
    if isinstance(header.get("seedLength"), int) and header["seedLength"]:
        header["seedLength"] = new_log_length(seqs, header["seedLength"])
    write_log(path, header, events)
    if log.parent is not None and not _write_parent(log, keep, folder):
        return None
    cap = folder / CAPTURE_NAME
    if not keep_lines:
        cap.unlink(missing_ok=True)
        return path
    model = None
    kept = set(keep)
    position = {i: n for n, i in enumerate(keep)}
    out = []
    for k in keep_lines:
        cl = subject.lines[k]
        line = dict(cl.line)
        if cl.step_index is None:
            out.append(line)
            continue
        if cl.step_index not in kept:
            continue  # its step is gone: the request goes with it
        if isinstance(line.get("logLength"), int):
            line["logLength"] = new_log_length(seqs, line["logLength"])
        start = events[position[cl.step_index]]["data"]
        line["turn"], line["step"] = start.get("turn"), start.get("step")
        model = model or _model(path)
        _, rebuilt = _rebuilt(model, line)
        request = None if rebuilt is None or cl.patch is None else apply_patch(cl.patch, rebuilt)
        if request is None:
            return None
        line["request"] = request
        out.append(line)
    write_captures(cap, out)
    return path


def parent_name(parent: LogData) -> str:
    """The parent's file name where ``check`` looks for it beside the child: its (maybe redacted) id, encoded."""
    pid = parent.header.get("id")
    suffix = parent.name[len(strip_log_suffix(parent.name)) :]
    return f"{encode_id(pid)}{suffix}" if isinstance(pid, str) and pid else parent.name


def _write_parent(log: LogData, keep: list[int], folder: Path) -> bool:
    """Write the fork parent beside the child: the events the child's kept seed events copy (the same indices),
    so the seed still lines up; the parent's own tail is not needed."""
    assert log.parent is not None
    parent = log.parent
    bound = min(log.seed_length, len(parent.events))
    events = renumber(parent, [i for i in keep if i < bound])
    if events is None:
        return False
    write_log(folder / parent_name(parent), parent.header, events)
    return True


class Oracle:
    """Checks candidates in this process through the library pipeline; counts them."""

    def __init__(self, subject: Subject, target: tuple, allowed: set[str]) -> None:
        self.subject = subject
        self.target = target
        self.allowed = allowed  # rules the original already had: anything else is a new finding
        self.candidates = 0
        self._tmp = tempfile.TemporaryDirectory(prefix="inspector-reduce-")

    def close(self) -> None:
        self._tmp.cleanup()

    def findings(self, keep: list[int], keep_lines: list[int], subject: Subject | None = None) -> list[Finding] | None:
        """The findings of the candidate (``subject``, default the oracle's, cut to ``keep`` and ``keep_lines``);
        None when it cannot be written as a well-formed log."""
        self.candidates += 1
        folder = Path(self._tmp.name) / "c"
        folder.mkdir(exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        path = materialise(subject or self.subject, keep, keep_lines, folder)
        if path is None:
            return None
        return check(path).findings

    def holds(self, keep: list[int], keep_lines: list[int], subject: Subject | None = None) -> bool:
        found = self.findings(keep, keep_lines, subject)
        if found is None:
            return False
        if any(f.rule not in self.allowed for f in found):
            return False
        return any(signature(f) == self.target for f in found)
