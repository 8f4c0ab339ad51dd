"""Token rules: capture-less mismatch hints and context pressure.

``TOK001`` needs no recorded request: each step's provider usage says how
many tokens the provider received, and the rebuilt request says how many
the log implies.  Their difference is steady within a session (the template
overheads we do not model exactly, a header recorded differently), so a
step is a hint only when its difference departs from the previous step's by
more than :data:`HINT_TOLERANCE` allows; the next step takes the new level as
its baseline, so one unexplained message gives one hint.  A new loop
instance (resume, fork) composes its header anew, so its first step starts
a new baseline.

The context rules (``CTX001``..``CTX004``) set the request's tokens against the
model's window: the ``request/context`` the log wrote before the step, else
the configured per-model table, else ``--context-window``.  The compaction
threshold is ``floor(window × ratio)`` with the harness's default ratio 0.8
(``compaction-basic``).  The harness gates on its own estimate, not on this
tokenizer, so crossing the threshold is information, never an error; the
under-gate case is a warning because it names a known bug class: the gate
reads the previous instance's folded prefix before the new instance logs
its own.

:func:`token_findings` is the one entry point; it is pure over a replayed
:class:`~invariants.replay.model.SessionModel` and loads the tokenizer only
when called.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from invariants.analysis.token_steps import StepTokens, step_tokens, usage_kind
from invariants.analysis.tokens import counter_for, rebuilt_tokens
from invariants.model.findings import Finding
from invariants.model.registry import make_finding
from invariants.replay.header_fold import prefix_of

DEFAULT_THRESHOLD_RATIO = 0.8  # compaction-basic's DEFAULT_THRESHOLD_RATIO


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far a step's difference may move from the previous step's without a hint."""

    tokens: int  # fixed part
    share_of_new: float  # part proportional to the tokens the step added

    def allows(self, departure: float, new_tokens: int) -> bool:
        return abs(departure) <= self.tokens + self.share_of_new * max(0, new_tokens)


# Calibrated on every real-usage step of the corpus (benchmarks/tokens_calibration.py):
# the largest step-to-step departure on an accepted log is 28 tokens on 149 new
# ones (allowed: 45).  On injected faults (benchmarks/tokens_hints.py, docs/TOKENS.md)
# 100 tokens or more the log lacks, adds or alters are caught at their step (233 of
# 234), 50 tokens 69-82 % of the time, 25 tokens rarely; no false hint.
HINT_TOLERANCE = Tolerance(tokens=30, share_of_new=0.1)


@dataclass(frozen=True)
class TokenSettings:
    context_window: int | None = None  # --context-window: for requests whose log names no window
    windows: dict[str, int] = field(default_factory=dict)  # "provider/model" or "model" -> window
    threshold_ratio: float = DEFAULT_THRESHOLD_RATIO


def _n(x: float) -> str:
    return f"{round(x):,}"


def _where(model: Any, st: Any) -> dict:
    return {"file": model.file, "session": model.id, "turn": st.turn, "step": st.step, "seq": st.seq, "line": st.line}


def _label(st: Any) -> str:
    from invariants.model.inert import inert

    return inert(f"{st.turn}.{st.step}")


# --------------------------------------------------------------------------- TOK001


def hint_findings(model: Any, steps: list[StepTokens], tolerance: Tolerance = HINT_TOLERANCE) -> list[Finding]:
    if usage_kind(model, steps) != "real":
        return []
    out: list[Finding] = []
    prev: StepTokens | None = None
    for s in steps:
        if s.provider is None:
            continue
        if prev is not None and model.steps[prev.index].instance != model.steps[s.index].instance:
            prev = None  # a new loop instance composes its header anew: the steady difference starts over
        if prev is not None and s.provider is not None and prev.provider is not None:
            diff, base = s.provider - s.tokens.total, prev.provider - prev.tokens.total
            departure = diff - base
            added = s.tokens.total - prev.tokens.total
            if not tolerance.allows(departure, added):
                st = model.steps[s.index]
                if departure > 0:
                    tail = f"about {_n(departure)} tokens were sent that the log does not explain"
                else:
                    tail = f"about {_n(-departure)} tokens the log implies were not sent"
                out.append(
                    make_finding(
                        "TOK001",
                        f"step {_label(st)}: provider counted {_n(s.provider)} input tokens, the log implies "
                        f"{_n(s.tokens.total)}: {tail} (step {_label(model.steps[prev.index])} differed by "
                        f"{base:+,}, this one by {diff:+,})",
                        **_where(model, st),
                        detail={
                            "provider_input": s.provider,
                            "log_tokens": s.tokens.total,
                            "difference": diff,
                            "baseline": base,
                            "baseline_step": prev.index,
                            "departure": departure,
                            "tolerance": round(tolerance.tokens + tolerance.share_of_new * max(0, added)),
                        },
                    )
                )
        prev = s
    return out


# --------------------------------------------------------------------------- context pressure


@dataclass(slots=True)
class Window:
    tokens: int
    source: str  # "request/context seq N", "configuration", "--context-window"
    provider: Any
    model: Any

    @property
    def target(self) -> str:
        """provider/model as far as known, inert."""
        return _target_name(self.provider, self.model)


def _target(model: Any, st: Any) -> tuple[str | None, str | None]:
    version = model.versions[st.header_version] if st.header_version is not None else None
    config = (version.header.get("config") if version is not None else None) or {}
    config = config if isinstance(config, dict) else {}
    return config.get("provider"), config.get("model")


def window_for(model: Any, st: Any, settings: TokenSettings) -> Window | None:
    limit = st.first_chunk_seq if st.first_chunk_seq is not None else st.last_seq + 1
    logged = None
    for seq, data in getattr(model, "contexts", ()):
        if seq >= limit:
            break
        logged = (seq, data)
    provider, name = _target(model, st)
    if logged is not None:
        seq, data = logged
        provider, name = data.get("provider", provider), data.get("model", name)
        w = data.get("contextWindow")
        if type(w) is int and w > 0:
            return Window(w, f"request/context seq {seq}", provider, name)
    for key in (f"{provider}/{name}", name):
        w = settings.windows.get(key) if isinstance(key, str) else None
        if w:
            return Window(w, "configuration", provider, name)
    if settings.context_window:
        return Window(settings.context_window, "--context-window", provider, name)
    return None


def _target_name(provider: Any, name: Any) -> str:
    from invariants.model.inert import inert
    from invariants.model.jsonvalue import shorten

    parts = [p if isinstance(p, str) else shorten(p, 40) for p in (provider, name) if p is not None]
    return inert("/".join(parts)) if parts else "the model"


def _overflow_refused(model: Any, st: Any) -> bool:
    """Whether the step's events show the provider refusing a request as too large for the context."""
    from invariants.analysis.events_view import read_events

    end = st.end_seq if st.end_seq is not None else st.last_seq
    for ev in read_events(model.source, st.seq, end, start_line=st.line, limit=20_000):
        if ev.type != "assistant/chunk":
            continue
        chunk = (ev.obj.get("data") or {}).get("chunk") if isinstance(ev.obj.get("data"), dict) else None
        reason = chunk.get("reason") if isinstance(chunk, dict) and chunk.get("type") == "finish" else None
        failure = reason.get("failure") if isinstance(reason, dict) else None
        if isinstance(failure, dict) and failure.get("code") == "CONTEXT_WINDOW_EXCEEDED":
            return True
    return False


def _answered(model: Any, st: Any) -> bool:
    """Whether the provider streamed an answer to the step (usage, or chunks that are not an overflow refusal)."""
    return isinstance(st.usage, dict) or (st.chunks > 0 and not _overflow_refused(model, st))


def pressure_findings(model: Any, steps: list[StepTokens], settings: TokenSettings) -> list[Finding]:
    out: list[Finding] = []
    counter = counter_for(model)
    run_start: Any = None  # the step that opened the current run over the threshold, and its finding
    for s in steps:
        st = model.steps[s.index]
        window = window_for(model, st, settings) if not s.scrubbed else None
        if window is None:
            run_start = None
            continue
        threshold = math.floor(window.tokens * settings.threshold_ratio)
        first = s.tokens
        if s.dispatch is not None:  # the step recovered by compaction: judge its first attempt too
            exp = model.rebuild_request(st)
            first = rebuilt_tokens(counter, exp) if exp is not None else s.tokens
        if first.total < threshold:
            run_start = None
            continue
        where = _where(model, st)
        detail = {
            "tokens": first.total,
            "context_window": window.tokens,
            "window_source": window.source,
            "threshold": threshold,
        }
        what = f"step {_label(st)}: the request is about {_n(first.total)} tokens by the DeepSeek V4 tokenizer"
        over = f"{what}, over the {_n(window.tokens)}-token context window of {window.target} ({window.source})"
        gate = None if st.compaction_before else _under_gate(model, st, first.total, counter)
        if gate is not None and gate < threshold <= first.total:
            grown = first.total - gate
            beyond = f", beyond the {_n(window.tokens)}-token window itself" if first.total > window.tokens else ""
            out.append(
                make_finding(
                    "CTX004",
                    f"{what}, over the compaction threshold of {_n(threshold)} ({settings.threshold_ratio:g} of the "
                    f"{_n(window.tokens)}-token window of {window.target}, {window.source}){beyond}, on the first "
                    f"request of a new loop instance whose prefix grew by {_n(grown)} tokens: a pressure gate "
                    f"reading the previous instance's folded prefix counts about {_n(gate)}, under the threshold, "
                    "so no compaction ran (under-gate)",
                    **where,
                    detail={**detail, "gate_tokens": gate, "prefix_growth": grown},
                )
            )
            run_start = None
            continue
        if first.total > window.tokens:
            run_start = None
            if s.dispatch is not None and _overflow_refused(model, st):
                out.append(
                    make_finding(
                        "CTX002",
                        f"{over}; the provider refused it (CONTEXT_WINDOW_EXCEEDED), then a compaction at seq "
                        f"{s.dispatch - 1} recovered the step with a request of about {_n(s.tokens.total)} tokens",
                        **where,
                        detail={**detail, "recovered_tokens": s.tokens.total, "compaction_seq": s.dispatch - 1},
                    )
                )
            elif _answered(model, st):
                out.append(
                    make_finding(
                        "CTX002",
                        f"{over}; the provider answered it, so its own count stayed within the window "
                        "(another tokenizer or a test adapter)",
                        **where,
                        detail=detail,
                    )
                )
            else:
                out.append(
                    make_finding(
                        "CTX001",
                        f"{over}, and the log shows no answer to it: a provider with this window refuses it",
                        **where,
                        detail=detail,
                    )
                )
            continue
        if first.total < threshold or st.compaction_before:
            run_start = None
            continue
        if run_start is not None:
            run_start.detail["steps"] += 1
            continue
        finding = make_finding(
            "CTX003",
            f"{what}, at or over the compaction threshold of {_n(threshold)} ({settings.threshold_ratio:g} of the "
            f"{_n(window.tokens)}-token window), and no compaction ran before it",
            **where,
            detail={**detail, "steps": 1},
        )
        out.append(finding)
        run_start = finding
    for f in out:
        if f.rule == "CTX003" and f.detail["steps"] > 1:
            f.message += f"; the {f.detail['steps'] - 1} step(s) after it stay over the threshold with no compaction"
    return out


def _under_gate(model: Any, st: Any, total: int, counter: Any) -> int | None:
    """The total a gate reading the previous instance's prefix sees, on an instance's first step whose prefix grew."""
    if st.instance is None or st.instance <= 0 or st.instance >= len(model.instances):
        return None
    inst = model.instances[st.instance]
    if inst.first_step != st.index:
        return None
    before = model.fold.version_before(inst.seq)
    if before is None:
        return None
    old, new = prefix_of(before.header), prefix_of(inst.header)  # lists: prefix_of normalises
    grown = round(sum(map(counter.message_tokens, new)) - sum(map(counter.message_tokens, old)))
    return total - grown if grown > 0 else None


def token_findings(model: Any, settings: TokenSettings | None = None) -> list[Finding]:
    """Every token finding of one replayed session (TOK001 hints, CTX001..CTX004 pressure)."""
    settings = settings or TokenSettings()
    steps = step_tokens(model)
    return hint_findings(model, steps) + pressure_findings(model, steps, settings)
