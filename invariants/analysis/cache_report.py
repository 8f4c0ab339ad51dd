"""Cache economics: why did the provider's prompt cache miss?

Provider prompt caches (DeepSeek context caching and its peers) reuse the
longest byte-identical prefix of the previous request.  For every step of a
session this module rebuilds the request from the log
(:meth:`SessionModel.rebuild_request`), renders it in the provider's order and
measures how much of it is a byte-identical prefix of the previous step's
request, then says what broke the prefix.

Render order: a *key* segment (``provider``, ``model``, ``reasoningEffort``:
a cache is per model), then ``system``, then ``tools``, then each message.
Each part is compact JSON with the key order of the log (the bytes a JSON
provider adapter would send, modulo its own template).  ``temperature``,
``maxTokens`` and ``stop`` are not part of the prompt: a change to them is
listed but does not break the prefix.

Token figures are estimates: **bytes / 4** (the usual rule of thumb for
English text and JSON under BPE tokenizers), marked ``~`` or ``*_est``.
Beside them stand the provider's own ``usage.inputTokens`` and
``usage.cacheReadTokens`` when the log recorded them.  The harness keeps
usage counts *disjoint* (its DeepSeek adapter subtracts the cache hits out of
the wire's ``prompt_tokens``): ``inputTokens`` excludes cache reads, so the
prompt the provider saw is ``inputTokens + cacheReadTokens (+ cacheWriteTokens)``
and the provider's hit rate is ``cacheReadTokens`` over that prompt, the same
definition as the byte ``reused`` share of the estimated request.

Breaker classes (``breaker.kind``), decided at the first differing part:

``config``            the model (or provider, reasoning effort) changed
``system``            the system prompt changed
``tools-changed``     a tool was added, removed or its schema changed
``tools-reordered``   the same tools in another order
``prefix-drift``      the session prefix (``messagePrefix``) changed, e.g. at a resume
``compaction``        a compaction replaced history since the previous step
``key-order``         same JSON value, different object key order
``volatile``          a volatile value changed in place: a timestamp, a date, a UUID, a number
``history``           earlier history changed otherwise (e.g. a rewritten tool result)
``suffix``            the per-step ``messageSuffix`` changed (17bd71e530 shape)

``re-paid`` bytes of a step are what the previous request had cached but
this one could not reuse: ``min(previous, current) - reused``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import orjson

BYTES_PER_TOKEN = 4
RENDER_ORDER = ("model", "system", "tools", "messages")  # "model": the key fields
KEY_FIELDS = ("provider", "model", "reasoningEffort")
SOFT_CONFIG = ("temperature", "maxTokens", "stop")
BREAKERS = (
    "config",
    "system",
    "tools-changed",
    "tools-reordered",
    "prefix-drift",
    "compaction",
    "key-order",
    "volatile",
    "history",
    "suffix",
)
_KIND_RANK = {"key": 0, "system": 1, "tools": 2, "message": 3}


def est_tokens(nbytes: int) -> int:
    return (nbytes + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def _count(usage: dict, key: str) -> int | None:
    v = usage.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def provider_prompt(usage: dict | None) -> tuple[int, int] | None:
    """``(cacheRead, prompt)`` from a step's usage, or None without an integer ``inputTokens``.

    The harness's counts are disjoint, so the prompt is the sum of the prompt-side buckets
    (uncached input, cache reads and, where a provider reports them, cache writes).
    """
    inp = _count(usage or {}, "inputTokens")
    if inp is None:
        return None
    read = _count(usage, "cacheReadTokens") or 0  # type: ignore[arg-type]
    write = _count(usage, "cacheWriteTokens") or 0  # type: ignore[arg-type]
    return read, inp + read + write


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


@dataclass(slots=True)
class Part:
    kind: str  # key | system | tools | message
    index: int | None
    data: bytes


def render(request: dict) -> list[Part]:
    """The request as provider-ordered parts."""
    parts = [Part("key", None, _dumps({k: request[k] for k in KEY_FIELDS if k in request}))]
    if "system" in request:
        parts.append(Part("system", None, _dumps(request["system"])))
    if "tools" in request:
        parts.append(Part("tools", None, _dumps(request["tools"])))
    for i, m in enumerate(request.get("messages") or []):
        parts.append(Part("message", i, _dumps(m)))
    return parts


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two byte strings (binary search over memcmp)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# --------------------------------------------------------------------------- volatile values

_TOKEN_CHARS = re.compile(r"[0-9A-Za-z:._+\-/]")
_VOLATILE = [
    ("timestamp", re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")),
    ("time", re.compile(r"^\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?$")),
    ("date", re.compile(r"^\d{1,4}[/.]\d{1,2}[/.]\d{1,4}$")),
    ("uuid", re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")),
    ("hex id", re.compile(r"^(?=.*\d)[0-9a-f]{8,64}$")),
    ("number", re.compile(r"^[+-]?\d+(\.\d+)?$")),
]


def _token_at(text: str, start: int, end: int) -> str:
    """The whole token around ``text[start:end]`` (a timestamp, an id, a number)."""
    while start > 0 and _TOKEN_CHARS.match(text[start - 1]):
        start -= 1
    while end < len(text) and _TOKEN_CHARS.match(text[end]):
        end += 1
    return text[start:end].strip(".:-/+")


def _volatile_kind(token: str) -> str | None:
    for name, rx in _VOLATILE:
        if rx.match(token):
            return name
    return None


def volatile_change(a: str, b: str) -> dict | None:
    """If the first difference of ``a`` and ``b`` is one volatile value replaced by another, say which."""
    n = min(len(a), len(b))
    p = 0
    while p < n and a[p] == b[p]:
        p += 1
    if p == len(a) and p == len(b):
        return None
    s = 0
    while s < n - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    old = _token_at(a, p, len(a) - s)
    new = _token_at(b, p, len(b) - s)
    if not old or not new:
        return None
    ko, kn = _volatile_kind(old), _volatile_kind(new)
    if ko and kn and (ko == kn or {ko, kn} <= {"timestamp", "date", "time", "number"}):
        return {"value": ko, "old": old[:80], "new": new[:80]}
    return None


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else _dumps(value).decode("utf-8", "replace")


# --------------------------------------------------------------------------- per step


@dataclass
class StepCache:
    index: int
    turn: Any
    step: Any
    seq: int
    line: int
    instance: int | None
    bytes: int
    reused_bytes: int
    repaid_bytes: int
    breaker: dict | None  # {kind, part, message_index, offset, detail}
    config_changes: list[str] = field(default_factory=list)
    usage: dict | None = None
    tokens: int | None = None  # the DeepSeek V4 count of the request (token_steps), when asked for

    def to_json(self) -> dict[str, Any]:
        u = self.usage or {}
        return {
            "index": self.index,
            "turn": self.turn,
            "step": self.step,
            "seq": self.seq,
            "line": self.line,
            "instance": self.instance,
            "bytes": self.bytes,
            "tokens_est": est_tokens(self.bytes),
            "tokens": self.tokens,
            "reused_bytes": self.reused_bytes,
            "reused_tokens_est": est_tokens(self.reused_bytes),
            "new_bytes": self.bytes - self.reused_bytes,
            "repaid_bytes": self.repaid_bytes,
            "repaid_tokens_est": est_tokens(self.repaid_bytes),
            "breaker": self.breaker,
            "config_changes": self.config_changes,
            "input_tokens": u.get("inputTokens"),
            "cache_read_tokens": u.get("cacheReadTokens"),
            "prompt_tokens": (provider_prompt(self.usage) or (None, None))[1],
        }


@dataclass
class SessionCache:
    session: str
    file: str
    profile: str
    steps: list[StepCache]
    skipped: int = 0  # steps with no header in force (no request can be rebuilt)

    def summary(self) -> dict[str, Any]:
        total = sum(s.bytes for s in self.steps)
        reused = sum(s.reused_bytes for s in self.steps)
        repaid = sum(s.repaid_bytes for s in self.steps)
        breakers: dict[str, int] = {}
        for s in self.steps:
            if s.breaker:
                breakers[s.breaker["kind"]] = breakers.get(s.breaker["kind"], 0) + 1
        prompts = [p for p in (provider_prompt(s.usage) for s in self.steps) if p is not None]
        cache_read = sum(r for r, _ in prompts)
        prompt = sum(t for _, t in prompts)
        inp = sum(s.usage["inputTokens"] for s in self.steps if provider_prompt(s.usage))  # type: ignore[index]
        counted = [s.tokens for s in self.steps if s.tokens is not None]
        return {
            "steps": len(self.steps),
            "skipped": self.skipped,
            "bytes": total,
            "tokens_est": est_tokens(total),
            "tokens": sum(counted) if counted and len(counted) == len(self.steps) else None,
            "reused_bytes": reused,
            "reused_tokens_est": est_tokens(reused),
            "reuse_ratio": round(reused / total, 4) if total else None,
            "repaid_bytes": repaid,
            "repaid_tokens_est": est_tokens(repaid),
            "breakers": dict(sorted(breakers.items(), key=lambda kv: (-kv[1], kv[0]))),
            "usage_steps": len(prompts),
            "input_tokens": inp if prompts else None,
            "cache_read_tokens": cache_read if prompts else None,
            "prompt_tokens": prompt if prompts else None,
            "cache_read_ratio": round(cache_read / prompt, 4) if prompt else None,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "file": self.file,
            "profile": self.profile,
            "summary": self.summary(),
            "steps": [s.to_json() for s in self.steps],
        }


def _compaction_between(model: Any, lo_seq: int, hi_seq: int, step: Any) -> bool:
    if step.compaction_before:
        return True
    return any(lo_seq < c < hi_seq for c in model.compactions)


def classify(
    prev_req: dict,
    cur_req: dict,
    prev_parts: list[Part],
    cur_parts: list[Part],
    i: int,
    prev_exp: Any,
    cur_exp: Any,
    compaction: bool,
) -> dict:
    """Why the prefix broke at part ``i`` (the first part that differs)."""
    a = prev_parts[i] if i < len(prev_parts) else None
    b = cur_parts[i] if i < len(cur_parts) else None
    kind = min((p.kind for p in (a, b) if p is not None), key=lambda k: _KIND_RANK[k])
    out: dict[str, Any] = {"part": kind}
    if kind == "key":
        changed = [k for k in KEY_FIELDS if prev_req.get(k) != cur_req.get(k)]
        out.update(
            kind="config",
            detail=", ".join(f"{k} {prev_req.get(k)!r} -> {cur_req.get(k)!r}" for k in changed) or "call key changed",
        )
        return out
    if kind == "system":
        v = volatile_change(_text_of(prev_req.get("system", "")), _text_of(cur_req.get("system", "")))
        if v:
            out.update(
                kind="volatile", detail=f"{v['value']} in the system prompt: {v['old']} -> {v['new']}", volatile=v
            )
        else:
            out.update(
                kind="system",
                detail="system prompt "
                + ("added" if "system" not in prev_req else "removed" if "system" not in cur_req else "changed"),
            )
        return out
    if kind == "tools":
        pt, ct = prev_req.get("tools") or [], cur_req.get("tools") or []
        names = lambda ts: [t.get("name") if isinstance(t, dict) else None for t in ts]  # noqa: E731
        if _canonical(pt) == _canonical(ct):
            out.update(kind="key-order", detail="tools: same schemas, different key order")
        elif sorted(map(_canonical, pt)) == sorted(map(_canonical, ct)):
            out.update(kind="tools-reordered", detail=f"tools reordered: {names(pt)} -> {names(ct)}")
        else:
            pn, cn = names(pt), names(ct)
            added = [n for n in cn if n not in pn]
            removed = [n for n in pn if n not in cn]
            altered = [n for n in cn if n in pn and _canonical(pt[pn.index(n)]) != _canonical(ct[cn.index(n)])]
            bits = (
                ([f"added {added}"] if added else [])
                + ([f"removed {removed}"] if removed else [])
                + ([f"changed {altered}"] if altered else [])
            )
            out.update(kind="tools-changed", detail="tools " + ("; ".join(bits) or "changed"))
        return out
    # messages
    j = (a or b).index  # type: ignore[union-attr]
    out["message_index"] = j
    pm, cm = prev_req.get("messages") or [], cur_req.get("messages") or []
    pa = pm[j] if j is not None and j < len(pm) else None
    cb = cm[j] if j is not None and j < len(cm) else None
    if pa is not None and cb is not None and _canonical(pa) == _canonical(cb):
        out.update(kind="key-order", detail=f"messages[{j}]: same value, different key order")
        return out
    in_prefix = j is not None and (j < cur_exp.prefix_len or j < prev_exp.prefix_len)
    cur_suffix_start = cur_exp.prefix_len + cur_exp.derived_len
    in_suffix = j is not None and cur_exp.suffix_len > 0 and j >= cur_suffix_start
    v = volatile_change(_text_of(pa), _text_of(cb)) if pa is not None and cb is not None else None
    if in_prefix:
        if v:
            out.update(
                kind="volatile",
                detail=f"{v['value']} in the session prefix messages[{j}]: {v['old']} -> {v['new']}",
                volatile=v,
            )
        else:
            out.update(kind="prefix-drift", detail=f"session prefix changed at messages[{j}]")
        return out
    if compaction:
        out.update(kind="compaction", detail=f"history compacted before this step; first change at messages[{j}]")
        return out
    if v:
        out.update(kind="volatile", detail=f"{v['value']} in messages[{j}]: {v['old']} -> {v['new']}", volatile=v)
        return out
    if in_suffix:
        out.update(kind="suffix", detail=f"message suffix changed at messages[{j}]")
        return out
    out.update(
        kind="history", detail=f"earlier history changed at messages[{j}]" + ("" if cb is not None else " (removed)")
    )
    return out


def session_cache(model: Any, count_tokens: bool = False) -> SessionCache:
    """The cache account of one replayed session (a ``SessionModel``).

    ``count_tokens`` adds each request's DeepSeek V4 token count
    (:mod:`invariants.analysis.token_steps`; needs the ``tokens`` extra)."""
    counts: dict[int, int] = {}
    if count_tokens:
        from invariants.analysis.token_steps import step_tokens

        counts = {s.index: s.tokens.total for s in step_tokens(model)}
    steps: list[StepCache] = []
    skipped = 0
    prev: tuple[dict, list[Part], Any, Any] | None = None
    for st in model.steps:
        exp = model.rebuild_request(st)
        if exp is None:
            skipped += 1
            continue
        req = exp.request
        parts = render(req)
        size = sum(len(p.data) for p in parts)
        reused = 0
        breaker = None
        repaid = 0
        config_changes: list[str] = []
        if prev is not None:
            p_req, p_parts, p_exp, p_st = prev
            i = 0
            while (
                i < len(p_parts)
                and i < len(parts)
                and p_parts[i].kind == parts[i].kind
                and p_parts[i].index == parts[i].index
                and p_parts[i].data == parts[i].data
            ):
                reused += len(parts[i].data)
                i += 1
            if i < len(p_parts):  # the previous request is not a prefix of this one
                if i < len(parts):
                    reused += _common_prefix(p_parts[i].data, parts[i].data)
                compaction = _compaction_between(model, p_st.seq, st.seq, st)
                breaker = classify(p_req, req, p_parts, parts, i, p_exp, exp, compaction)
                if breaker["kind"] == "config":
                    reused = 0  # a provider cache is per model: nothing carries over
                breaker["offset"] = reused
                prev_size = sum(len(p.data) for p in p_parts)
                repaid = max(0, min(prev_size, size) - reused)
            config_changes = [k for k in SOFT_CONFIG if p_req.get(k) != req.get(k)]
        steps.append(
            StepCache(
                st.index,
                st.turn,
                st.step,
                st.seq,
                st.line,
                st.instance,
                size,
                reused,
                repaid,
                breaker,
                config_changes,
                st.usage if isinstance(st.usage, dict) else None,
                counts.get(st.index),
            )
        )
        prev = (req, parts, exp, st)
    return SessionCache(model.id, model.file, model.profile.name, steps, skipped)


def report_document(sessions: Iterable[SessionCache], token_count: str | None = None) -> dict[str, Any]:
    """The JSON document of ``inspector cache-report --format json`` (version 1).

    ``token_count`` names the tokenizer behind each step's ``tokens`` (None: not counted, ``tokens`` is null)."""
    return {
        "version": 1,
        "token_estimate": f"bytes/{BYTES_PER_TOKEN}",
        "token_count": token_count,
        "render_order": list(RENDER_ORDER),
        "sessions": [sc.to_json() for sc in sessions],
    }


def cache_report(models: Iterable[Any]) -> dict[str, Any]:
    """:func:`report_document` over replayed sessions."""
    return report_document(session_cache(m) for m in models)


def step_rows(sc: SessionCache) -> list[dict[str, Any]]:
    """Flat rows (one per step) for a table, e.g. a view in the postmortem index."""
    rows = []
    for s in sc.steps:
        j = s.to_json()
        b = s.breaker or {}
        rows.append(
            {
                "session": sc.session,
                "step_index": s.index,
                "turn": s.turn,
                "step": s.step,
                "seq": s.seq,
                "bytes": s.bytes,
                "reused_bytes": s.reused_bytes,
                "repaid_bytes": s.repaid_bytes,
                "tokens_est": j["tokens_est"],
                "reused_tokens_est": j["reused_tokens_est"],
                "repaid_tokens_est": j["repaid_tokens_est"],
                "breaker": b.get("kind"),
                "breaker_detail": b.get("detail"),
                "input_tokens": j["input_tokens"],
                "cache_read_tokens": j["cache_read_tokens"],
            }
        )
    return rows
