"""The attempts of a step: where each request of a retried step was dispatched.

The late-era loop retries a failed or cut-off call within the same step and
derives the request again for each attempt, so every attempt has its own
dispatch position.  A failed stream ends with a ``finish`` chunk of reason
``error``; a chunk after it is the next attempt's (the loop's own
request-error recovery writes no event of its own).  ``llm/retry`` is a retry plugin's decision (it ends the
attempt before it); its new attempt begins at ``llm/retry-started`` (a retry
cancelled during its delay has none).  An attempt was dispatched before its
first ``assistant/chunk``; one that streamed nothing was dispatched before
the event that ended it.  A position is a log length (the events with ``seq``
below it existed), the argument :meth:`SessionModel.rebuild_request` takes.

The model keeps no per-event data, so the step's events are read back from
the log (:func:`invariants.analysis.events_view.read_events`).
"""

from __future__ import annotations

from typing import Any, Iterable

from invariants.analysis.events_view import RawEvent, read_events


def _failed(ev: RawEvent) -> bool:
    """A ``finish`` chunk with reason ``error``: the stream failed and the loop may dispatch again."""
    data = ev.obj.get("data")
    chunk = data.get("chunk") if isinstance(data, dict) else None
    if not isinstance(chunk, dict) or chunk.get("type") != "finish":
        return False
    reason = chunk.get("reason")
    return isinstance(reason, dict) and reason.get("kind") == "error"


def dispatch_positions(events: Iterable[RawEvent], end: int) -> list[int]:
    """Log length at each attempt's dispatch, over the events of one step after its ``step/start``.

    ``end`` is the position after the step's last event: where a retried attempt that streamed
    nothing before the step ended was dispatched at the latest.  A step that never streamed and
    was never retried has no attempt.
    """
    out: list[int] = []
    running, dispatched, retried = True, False, False  # attempt 1 begins at step/start

    def close(at: int) -> None:
        nonlocal dispatched
        if running and not dispatched:
            out.append(at)
            dispatched = True

    for ev in events:
        if ev.type == "assistant/chunk":
            if not running:  # a chunk after a failed stream: the loop recovered with a new attempt
                running, dispatched = True, False
            close(ev.seq)
            if _failed(ev):
                running = False
        elif ev.type == "llm/retry":
            close(ev.seq)
            running = False
        elif ev.type == "llm/retry-started":
            close(ev.seq)
            running, dispatched, retried = True, False, True
    if retried:
        close(end)
    return out


def step_attempts(model: Any, step: Any) -> list[int]:
    """Dispatch positions of every attempt of ``step`` (a ``StepState`` of ``model``), in order."""
    last = step.end_seq if step.end_seq is not None else step.last_seq
    events = read_events(model.source, step.seq + 1, last, start_line=step.line)
    return dispatch_positions(events, last + 1)
