"""Token counts of rebuilt requests, as the DeepSeek provider counts them.

A request is rendered the way the harness's DeepSeek adapter sends it
(:mod:`invariants.analysis.wire`), its texts are counted with the DeepSeek V4
tokenizer (:mod:`invariants.analysis.tokenizer`), and the chat template's
own tokens are added as fitted overheads (:data:`CALIBRATION`):

    tokens = system + Σ tool (name + description + parameters as JSON)
           + Σ message (content + Σ call (name + arguments + id) + tool_call_id)
           + reasoning of the assistant messages after the last user message
           + request + per_tool × tools + per_message × messages + per_call × calls

Reasoning of earlier turns is counted out: the provider's template drops it
(the fit with it counted in is worse and needs a negative per-message cost).
The constants were fitted by least squares on 268 steps of 120 of the
harness's own snapshot recordings whose request is known exactly (the
session file the recording wrote, with the provider usage beside it); they
reproduce ``inputTokens + cacheReadTokens`` there with a median error of
0.15 % (p95 1.2 %), and 0.15 % (p95 1.1 %) held out (fitted on every other
recording, measured on the rest).  The corpus's snapshot logs replay the
usage of those recordings under a header that grew since (seed era: the
``skill`` tool, +348 tokens; late era: eleven more tools and a longer
system prompt, +3,045), so against their own request the error is 12 %
while their step-to-step growth matches (4 %); against the recorded request
their usage belongs to it is 0.07 %.  ``benchmarks/tokens_calibration.py``
refits them and prints the tables (docs/TOKENS.md).
``request`` holds the template's fixed tokens *with a tool list* (the
tool-use preamble); no recording without tools exists, so a request without
tools gets none of it and its count is a lower bound.

Counts are lazy and cached per message object: the messages of a session are
shared between its requests (:meth:`Surface.messages_at`), so each is
tokenized once and a whole session costs one batch plus a sum per request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from invariants.analysis.wire import WireMessage, wire_messages, wire_system, wire_tools


@dataclass(frozen=True, slots=True)
class Calibration:
    request: float  # per request that carries tools (template + tool-use preamble)
    per_tool: float
    per_message: float  # per wire message (system excluded: it is part of ``request``)
    per_call: float  # per tool call (on top of its name, arguments and id)


CALIBRATION = Calibration(request=222.4, per_tool=12.2, per_message=4.7, per_call=11.4)


@dataclass(slots=True)
class RequestTokens:
    """One request's tokens, by part (they add up to ``total``)."""

    total: int
    system_tools: int  # template constants, system prompt and tool schemas
    prefix: int  # the session prefix (messagePrefix)
    derived: int  # history derived from the log
    suffix: int  # messageSuffix

    def to_json(self) -> dict[str, int]:
        return {
            "total": self.total,
            "system_tools": self.system_tools,
            "prefix": self.prefix,
            "derived": self.derived,
            "suffix": self.suffix,
        }


def _schema_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""


class TokenCounter:
    """Counts requests of one session; caches every message and text it has seen."""

    def __init__(self, calibration: Calibration = CALIBRATION) -> None:
        self.cal = calibration
        self._texts: dict[str, int] = {}
        # id(message) -> (message, base tokens, reasoning text, yields a wire user message); the reasoning is
        # tokenized only when a request carries the message after its last user message (prime_reasoning)
        self._messages: dict[int, tuple[Any, float, str, bool]] = {}
        self._tools: dict[int, tuple[Any, float]] = {}
        self._wired: dict[int, tuple[Any, list[WireMessage]]] = {}  # rendered by prime(), not yet costed

    # -- batching ------------------------------------------------------------
    def _encode(self, texts: Iterable[str]) -> None:
        from invariants.analysis.tokenizer import count_texts

        todo = list(dict.fromkeys(t for t in texts if t not in self._texts))
        for text, n in zip(todo, count_texts(todo)):
            self._texts[text] = n

    def prime(self, requests: Iterable[dict]) -> None:
        """Tokenize every text of these requests not seen yet, in one batch (reasoning aside)."""
        texts: list[str] = []
        wired = self._wired
        for req in requests:
            system = wire_system(req)
            if system is not None:
                texts.append(system.content)
            tools = req.get("tools")
            if id(tools) not in self._tools:
                for t in wire_tools(tools):
                    texts += (t.name, t.description, _schema_text(t.parameters))
            for msg in req.get("messages") or ():
                key = id(msg)
                if key in self._messages or key in wired:
                    continue
                wires = wired[key] = (msg, wire_messages(msg))
                for w in wires[1]:
                    texts += (w.content, w.tool_call_id)
                    for c in w.calls:
                        texts += (c.name, c.arguments, c.id)
        self._encode(texts)

    def prime_reasoning(self, requests: Iterable[dict]) -> None:
        """Tokenize, in one batch, the reasoning these requests send (their messages after the last user one)."""
        texts = [self.message(m)[1] for req in requests for m in self._tail(req.get("messages") or [])]
        self._encode(t for t in texts if t)

    def _tail(self, messages: list) -> list:
        """The messages after the last one that sends user text: their reasoning is sent."""
        for i in range(len(messages) - 1, -1, -1):
            if self.message(messages[i])[2]:
                return messages[i + 1 :]
        return messages

    def _n(self, text: str) -> int:
        if not text:
            return 0
        n = self._texts.get(text)
        if n is None:
            self._encode([text])
            n = self._texts[text]
        return n

    # -- parts -----------------------------------------------------------------
    def _wire_base(self, w: WireMessage) -> float:
        cal = self.cal
        n = cal.per_message + self._n(w.content) + self._n(w.tool_call_id)
        for c in w.calls:
            n += cal.per_call + self._n(c.name) + self._n(c.arguments) + self._n(c.id)
        return n

    def message(self, msg: Any) -> tuple[float, str, bool]:
        """(tokens without reasoning, reasoning text, carries user text) of one harness message."""
        hit = self._messages.get(id(msg))
        if hit is not None and hit[0] is msg:
            return hit[1], hit[2], hit[3]
        rendered = self._wired.pop(id(msg), None)
        wires = rendered[1] if rendered is not None and rendered[0] is msg else wire_messages(msg)
        base = sum(self._wire_base(w) for w in wires)
        reasoning = "".join(w.reasoning for w in wires)
        user = any(w.role == "user" for w in wires)
        self._messages[id(msg)] = (msg, base, reasoning, user)
        return base, reasoning, user

    def message_tokens(self, msg: Any, with_reasoning: bool = True) -> float:
        """One message's tokens, its reasoning counted or not."""
        base, reasoning, _ = self.message(msg)
        return base + (self._n(reasoning) if with_reasoning else 0)

    def tools(self, tools: Any) -> float:
        hit = self._tools.get(id(tools))
        if hit is not None and hit[0] is tools:
            return hit[1]
        schemas = wire_tools(tools)
        n = sum(
            self.cal.per_tool + self._n(t.name) + self._n(t.description) + self._n(_schema_text(t.parameters))
            for t in schemas
        )
        if schemas:
            n += self.cal.request
        self._tools[id(tools)] = (tools, n)
        return n

    def request(self, request: dict, prefix_len: int = 0, derived_len: int | None = None) -> RequestTokens:
        """The tokens of one request; ``prefix_len``/``derived_len`` split its messages into parts."""
        messages = request.get("messages") or []
        if not isinstance(messages, list):
            messages = []
        system = wire_system(request)
        head = self.tools(request.get("tools")) + (self._n(system.content) if system is not None else 0)
        costs = [self.message(m) for m in messages]
        last_user = max((i for i, c in enumerate(costs) if c[2]), default=-1)
        per = [c[0] + (self._n(c[1]) if i > last_user else 0) for i, c in enumerate(costs)]
        end = len(per) if derived_len is None else prefix_len + derived_len
        prefix, derived, suffix = sum(per[:prefix_len]), sum(per[prefix_len:end]), sum(per[end:])
        total = round(head + prefix + derived + suffix)
        parts = [round(head), round(prefix), round(derived)]
        return RequestTokens(total, parts[0], parts[1], parts[2], total - sum(parts))


def rebuilt_tokens(counter: TokenCounter, rebuilt: Any) -> RequestTokens:
    """Tokens of a :class:`~invariants.replay.model.RebuiltRequest`, split into its parts."""
    return counter.request(rebuilt.request, rebuilt.prefix_len, rebuilt.derived_len)


def counter_for(model: Any) -> TokenCounter:
    """The session's counter, kept on the model so every caller shares its cache."""
    counter = model.__dict__.get("_token_counter")
    if counter is None:
        counter = model.__dict__["_token_counter"] = TokenCounter()
    return counter
