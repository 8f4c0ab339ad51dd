"""Per step: the request's tokens beside the provider's own count.

The provider's usage counts input excluding cache reads (the DeepSeek
adapter's ``mapUsage`` subtracts the cache hits from ``prompt_tokens``), so
what it received is ``inputTokens + cacheReadTokens``.  The usage a step
logs is that of its last attempt; when a compaction ran inside the step (a
context-overflow recovery) the request counted is the one sent after it.

Many logs carry mock usage (test adapters report 10, 20, 30 ... or the same
number on every step).  :func:`usage_kind` tells real usage from mock usage,
so that nothing is ever compared with, or calibrated on, a mock's numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from invariants.analysis.tokens import RequestTokens, counter_for, rebuilt_tokens

# A provider sees at least the text it is sent: a count under this share of
# ours is not a count of this request (late-era snapshot recordings, made with
# a smaller header than the one logged today, stay above 0.45).
PLAUSIBLE_SHARE = 0.25
MOCK_PROVIDERS = frozenset({"mock"})
FLAT_GROWTH = 8  # a request that grew by more than this cannot be counted the same twice
_PLACEHOLDER = re.compile(r"\{\{\w+\}\}")


@dataclass(slots=True)
class StepTokens:
    index: int  # into model.steps
    turn: Any
    step: Any
    seq: int
    line: int
    tokens: RequestTokens
    history: int  # derived tokens the previous step's request already carried (same generation)
    new: int  # derived tokens added since
    provider: int | None  # usage inputTokens + cacheReadTokens, None when the step logged none
    dispatch: int | None  # log length of the attempt counted (None: the step's first dispatch)
    scrubbed: bool = False  # a snapshot normaliser replaced the system, tools or prefix by a placeholder

    def to_json(self) -> dict[str, Any]:
        return {
            **self.tokens.to_json(),
            "history": self.history,
            "new": self.new,
            "provider_input": self.provider,
        }


def provider_input(usage: Any) -> int | None:
    """``inputTokens + cacheReadTokens`` of a usage record, None unless both are counts.

    A record without ``cacheReadTokens`` is incomplete: the DeepSeek adapter
    always maps the provider's cache-hit count, and the harness's test
    adapters report only ``inputTokens``/``outputTokens``."""
    if not isinstance(usage, dict):
        return None
    inp, cache = usage.get("inputTokens"), usage.get("cacheReadTokens")
    if type(inp) is not int or type(cache) is not int or inp < 0 or cache < 0:
        return None
    return inp + cache


def scrubbed(request: dict) -> bool:
    """Whether the request holds a snapshot placeholder (``{{system}}``, ``{{tools}}``...) instead of content:
    its count says nothing about what was sent."""
    system, tools = request.get("system"), request.get("tools")
    if isinstance(system, str) and _PLACEHOLDER.search(system) or isinstance(tools, str):
        return True
    return any(isinstance(m, str) for m in request.get("messages") or ())


def _mid_step_compaction(model: Any, st: Any) -> int | None:
    """The seq of the last surface replace inside the step (an overflow recovery), if any."""
    end = st.end_seq if st.end_seq is not None else st.last_seq
    inside = [c for c in getattr(model, "compactions", ()) if st.seq < c <= end]
    return inside[-1] if inside else None


def step_tokens(model: Any) -> list[StepTokens]:
    """Every step whose request can be rebuilt, with its tokens (cached on the model)."""
    cached = model.__dict__.get("_step_tokens")
    if cached is not None and cached[0] == (len(model.steps), model.events):
        return cached[1]
    counter = counter_for(model)
    rebuilt = []
    for st in model.steps:
        dispatch = None
        if model.profile.request_rule == "dispatch":
            recovery = _mid_step_compaction(model, st)
            if recovery is not None:
                dispatch = recovery + 1
        exp = model.rebuild_request(st, dispatch)
        if exp is not None:
            rebuilt.append((st, exp, dispatch))
    counter.prime(exp.request for _, exp, _ in rebuilt)
    counter.prime_reasoning(exp.request for _, exp, _ in rebuilt)
    out: list[StepTokens] = []
    prev: tuple[Any, Any] | None = None  # (rebuilt, tokens)
    for st, exp, dispatch in rebuilt:
        tokens = rebuilt_tokens(counter, exp)
        history = 0
        if prev is not None and _same_history(prev[0], exp):
            history = min(prev[1].derived, tokens.derived)
        out.append(
            StepTokens(
                st.index,
                st.turn,
                st.step,
                st.seq,
                st.line,
                tokens,
                history,
                tokens.derived - history,
                provider_input(st.usage),
                dispatch,
                scrubbed(exp.request),
            )
        )
        prev = (exp, tokens)
    model.__dict__["_step_tokens"] = ((len(model.steps), model.events), out)
    return out


def _same_history(a: Any, b: Any) -> bool:
    """Whether ``b``'s derived messages begin with all of ``a``'s (no compaction in between)."""
    ma = a.request["messages"][a.prefix_len : a.prefix_len + a.derived_len]
    mb = b.request["messages"][b.prefix_len : b.prefix_len + b.derived_len]
    return len(mb) >= len(ma) and all(x is y or x == y for x, y in zip(ma, mb))


def _providers(model: Any) -> set:
    names = {c.get("provider") for _, c in getattr(model, "contexts", ())}
    for v in model.versions:
        config = v.header.get("config") if isinstance(v.header, dict) else None
        if isinstance(config, dict):
            names.add(config.get("provider"))
    return {n for n in names if isinstance(n, str)}


def usage_kind(model: Any, steps: list[StepTokens] | None = None) -> str:
    """``real``, ``mock``, ``scrubbed`` or ``none``: what the session's provider usage is.

    ``scrubbed``: the usage may be real but the log's requests hold snapshot
    placeholders, so there is nothing to compare it with.
    ``none``: no step logged usage.  Only complete records count (:func:`provider_input`; a test adapter's
    ``{inputTokens: 10, outputTokens: 5}`` is not one).  Mock when the
    provider is named ``mock``, when most counts are implausibly small for
    their request (under :data:`PLAUSIBLE_SHARE` of our count: a hand-written
    100 for a 3,000-token request), or when a count stays the same from one
    step to the next while the request grows.
    """
    steps = step_tokens(model) if steps is None else steps
    counted = [s for s in steps if s.provider is not None]
    if not counted:
        logged = any(isinstance(st.usage, dict) and "inputTokens" in st.usage for st in model.steps)
        return "mock" if logged else "none"
    if any(s.scrubbed for s in counted):
        return "scrubbed"
    if _providers(model) & MOCK_PROVIDERS:
        return "mock"
    plausible = [s for s in counted if s.provider is not None and s.provider >= PLAUSIBLE_SHARE * s.tokens.total]
    if 2 * len(plausible) < len(counted):
        return "mock"
    for a, b in zip(counted, counted[1:]):
        if a.provider == b.provider and b.tokens.total - a.tokens.total > FLAT_GROWTH:
            return "mock"
    return "real"
