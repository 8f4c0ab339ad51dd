"""One pass over a session: the fold that every check and view stands on (:mod:`invariants.replay.fold`),
judging the log's era on the way; :func:`~invariants.replay.checkpoint.resume` continues it over a grown log."""

from __future__ import annotations

from typing import Iterable

from invariants.model.registry import make_finding
from invariants.read.load import LogReader
from invariants.read.profiles import PROFILES, Profile
from invariants.read.source import LogSource
from invariants.replay.fold import Progress, _Replay
from invariants.replay.model import SessionModel


def replay(
    source: LogSource,
    profile: Profile | str | None = None,
    evidence: Iterable[str] = (),
    max_line: int | None = None,
    checkpoint: bool = False,
    head_bytes: int | None = None,
    progress: Progress | None = None,
) -> SessionModel:
    """Read and fold one log. ``profile`` None means: judge the era from the log's shapes.

    The era evidence of the whole log is gathered during the pass; a log whose
    evidence past the provisional window calls for another profile is read once
    more with it (rare: its first era-specific shape comes late).
    ``checkpoint`` asks for ``model.checkpoint``, the state :func:`resume` continues from.
    ``head_bytes`` folds only the events starting in the first that many bytes (the TUI's first screen
    of a huge log, shown while the whole log is checked): the model of a log cut there.
    ``progress(findings, bytes_read)`` is called, in this thread, each time another ``PROGRESS_BYTES``
    of the log are folded, with a copy of the findings so far (the TUI fills them in while a
    huge log is checked); a log read twice (its era judged again) starts over.
    """
    if isinstance(profile, str):
        profile = PROFILES[profile]

    def run(judge_by: Profile | None, seen: dict[str, str] | None = None) -> tuple[_Replay, SessionModel]:
        reader = LogReader(source) if max_line is None else LogReader(source, max_line=max_line)
        state = _Replay(reader, judge_by, list(evidence))
        if seen is not None:  # judged again: keep gathering, so a resume still notices a change
            state.sniffing, state.seen = True, dict(seen)
        state.want_checkpoint = checkpoint
        return state, state.run(head_bytes, progress)

    state, model = run(profile)
    if not state.sniffing:
        return model
    guess = state.verdict()
    if guess.profile != model.profile.name:
        state, model = run(PROFILES[guess.profile], state.seen)
    model.era_evidence = guess.evidence
    if guess.conflicts:
        model.findings.append(
            make_finding(
                "LOG011",
                f"log mixes format eras; judged as {model.profile.name}, "
                f"but it also shows {', '.join(guess.conflicts)}",
                file=model.file,
                session=model.id,
                detail={"evidence": list(guess.evidence)},
            )
        )
    return model
