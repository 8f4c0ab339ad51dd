"""Our verdict on a recorded request beside the harness's own, and where the recorded requests stand.

The conformance corpus records what the harness's live cross-check said
(``verdict``: ``ok``, its error message, or ``unchecked``) and, for every loop
request, what the same check said when run silently (``shadowVerdict``).  A
user matching our view to the harness's wants both side by side and the
places they disagree: we say a request diverges and the harness said ``ok``,
or the other way round.  One-shot requests (``loopBuilt: false``) are shown,
never checked, so they have no verdict of ours.

The functions take the pipeline's request checks (``gate.result.RequestCheck``:
``status`` and the ``recorded`` line) as plain objects: this layer sits below
the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOT_OURS = ("one-shot", "unexplained")  # recorded, but not compared with a rebuilt request


@dataclass(slots=True, frozen=True)
class Verdicts:
    """One recorded request's verdicts: ours (the check's status) and the capture's, when it carries them."""

    ours: str  # ok | diverges | header | unexplained | one-shot
    harness: str | None  # the capture's ``verdict`` (None: absent or not a string)
    shadow: str | None  # its ``shadowVerdict``
    disagree: bool  # the request check's own judgement (``RequestCheck.agrees is False``)


def verdicts(rc: Any) -> Verdicts:
    """Ours and the capture's verdicts on one request check."""
    return Verdicts(rc.status, rc.verdict, rc.shadow_verdict, rc.agrees is False)


def count_requests(requests: list[Any]) -> dict[str, int]:
    """Recorded requests: all of them, those compared, one-shots (shown, not checked), those no log
    explains, and those where our verdict and the capture's own disagree."""
    one_shot = sum(1 for r in requests if r.status == "one-shot")
    unexplained = sum(1 for r in requests if r.status == "unexplained")
    return {
        "recorded": len(requests),
        "compared": len(requests) - one_shot - unexplained,
        "one_shot": one_shot,
        "unexplained": unexplained,
        "disagreements": sum(1 for r in requests if r.agrees is False),
    }


def request_counts(requests: list[Any]) -> str:
    """The recorded requests of a session in words: ``9 recorded: 7 compared, 2 one-shot``."""
    c = count_requests(requests)
    parts = [f"{c['compared']} compared"]
    if c["one_shot"]:
        parts.append(f"{c['one_shot']} one-shot")
    if c["unexplained"]:
        parts.append(f"{c['unexplained']} unexplained")
    return f"{c['recorded']} recorded: {', '.join(parts)}"


def one_shot_steps(requests: list[Any], steps: list[Any]) -> dict[int | None, list[Any]]:
    """One-shot requests under the step they name (``turn``/``step``), else under the step whose events
    were the last ones logged before it (``logLength``); ``None`` holds those no step takes."""
    by_number = {(st.turn, st.step): st.index for st in steps}
    out: dict[int | None, list[Any]] = {}
    for rc in requests:
        if rc.status != "one-shot" or rc.recorded is None:
            continue
        rec = rc.recorded
        index = by_number.get((rec.turn, rec.step)) if rec.turn is not None and rec.step is not None else None
        if index is None and isinstance(rec.log_length, int) and rec.log_length > 0:
            index = next((st.index for st in reversed(steps) if st.seq < rec.log_length), None)
        out.setdefault(index, []).append(rc)
    return out
