"""A replayed session as an OpenTelemetry trace, in the GenAI semantic conventions.

The span tree is plain data built from what the pipeline already knows: the
replay (:class:`~invariants.replay.session.SessionModel`: steps, the header in
force at each dispatch, usage), the findings of the check, and the log's
events read back once (:func:`~invariants.analysis.events_view.iter_events`)
for what the model does not keep: times, turn bounds, finish reasons, tool
calls and their results.  Nothing here encodes or sends; see
:mod:`invariants.analysis.otlp` for the OTLP/JSON form.

The tree (attribute names from the GenAI conventions, v1.41 of the
OpenTelemetry semantic conventions, the last before they moved to their own
repository; ``dsh.*`` and ``inspector.*`` are this tool's own):

- the session: ``invoke_agent`` (INTERNAL: the agent ran in the harness's process);
- each turn: ``turn`` (the conventions have no span for one; INTERNAL);
- each step: ``chat {model}`` (CLIENT), a child of its turn, from ``step/start`` to the
  response (its ``assistant/message``, else its last chunk);
- each ``tool/call``: ``execute_tool {name}`` (INTERNAL), a child of its turn, a sibling
  after the chat span that asked for it, to its ``tool/result``;
- each finding: an ``inspector.finding`` event on the most specific span it names;
  an error finding sets that span's status (and the session's) to ERROR.

Ids are derived (SHA-256) from the session id, its ``createdAt`` and the seq
of the event that opens each span, so exporting a log twice gives the same
trace.  Message content (``gen_ai.input.messages`` and the like, a finding's
own message, the log's error texts) is opt-in, as the conventions ask: logs
hold private text.  docs/OTEL.md has the whole mapping.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Union

import orjson

from invariants.analysis.cache_report import provider_prompt
from invariants.analysis.events_view import RawEvent, iter_events
from invariants.analysis.wire import WireMessage, wire_messages
from invariants.model.findings import Finding
from invariants.model.registry import RULES
from invariants.replay.model import SessionModel, StepState

AttrValue = Union[str, bool, int, float, list[str], list[int], list[float]]

KIND_INTERNAL = 1  # the OTLP SpanKind numbers
KIND_CLIENT = 3
STATUS_UNSET = 0
STATUS_ERROR = 2

SCOPE = "dsh-inspector"
SERVICE = "deepseek-harness"
FINDING_EVENT = "inspector.finding"
_NS = 1_000_000  # log times are epoch milliseconds

# Call settings of an LlmCallConfig (and keys other adapters use) -> (attribute, type)
_SETTINGS: tuple[tuple[str, str, type], ...] = (
    ("maxTokens", "gen_ai.request.max_tokens", int),
    ("temperature", "gen_ai.request.temperature", float),
    ("topP", "gen_ai.request.top_p", float),
    ("topK", "gen_ai.request.top_k", int),
    ("frequencyPenalty", "gen_ai.request.frequency_penalty", float),
    ("presencePenalty", "gen_ai.request.presence_penalty", float),
    ("seed", "gen_ai.request.seed", int),
)
# The harness's finish reasons (FinishReason.kind) as the conventions' FinishReason values
_FINISH = {"stop": "stop", "tool-calls": "tool_call", "max-tokens": "length", "error": "error"}


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    span_id: str  # 16 hex digits
    parent_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    status: int = STATUS_UNSET
    status_message: str = ""

    def fail(self, message: str) -> None:
        """Status ERROR; the first reason given is the one kept."""
        if self.status != STATUS_ERROR:
            self.status, self.status_message = STATUS_ERROR, message


@dataclass(slots=True)
class SessionTrace:
    """One session's spans, the root first."""

    trace_id: str  # 32 hex digits
    session: str
    file: str
    spans: list[Span]


_MAX_NS = (1 << 64) - 1  # OTLP times are fixed64 nanoseconds
_I64 = 1 << 63


def _ns(ms: int) -> int:
    """Epoch milliseconds as OTLP nanoseconds, inside what fixed64 can hold (a log's times are untrusted)."""
    return min(max(ms, 0) * _NS, _MAX_NS)


def _text(value: str) -> str:
    """A string any encoder takes: a lone surrogate (valid in a JSON string, not in UTF-8) becomes U+FFFD."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _clean(value: AttrValue) -> AttrValue:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bool) or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if -_I64 <= value < _I64 else str(value)  # OTLP intValue is int64
    return [_clean(v) for v in value]  # type: ignore[return-value]


def _sanitize(sp: Span) -> None:
    sp.name, sp.status_message = _text(sp.name), _text(sp.status_message)
    sp.attributes = {k: _clean(v) for k, v in sp.attributes.items()}
    for ev in sp.events:
        ev.attributes = {k: _clean(v) for k, v in ev.attributes.items()}


def trace_id_of(session: str, created_at: Any) -> str:
    key = json.dumps(["dsh-trace", session, created_at], default=repr)  # ASCII: a lone surrogate is escaped
    h = hashlib.sha256(key.encode()).digest()[:16]
    return (h if any(h) else b"\x01" * 16).hex()


def span_id_of(trace_id: str, kind: str, seq: int) -> str:
    """The id of the span of kind ``kind`` opened by event ``seq`` (-1: the session)."""
    h = hashlib.sha256(f"{trace_id}/{kind}/{seq}".encode()).digest()[:8]
    return (h if any(h) else b"\x01" * 8).hex()


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return orjson.dumps(repr(value)).decode()


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _provider(route: Any, model: Any) -> str:
    """``gen_ai.provider.name``: a harness route of DeepSeek's is the well-known ``deepseek``; another route
    is kept as named; a log that names none (seed era) is ``deepseek`` for a DeepSeek model, else unknown."""
    if isinstance(route, str) and route:
        return "deepseek" if route.lower().startswith("deepseek") else route
    if isinstance(model, str) and model.lower().startswith("deepseek"):
        return "deepseek"
    return "unknown"


def _finish(reason: Any) -> str | None:
    kind = reason.get("kind") if isinstance(reason, dict) else reason
    if not isinstance(kind, str):
        return None
    if kind == "error":
        failure = reason.get("failure") if isinstance(reason, dict) else None
        if isinstance(failure, dict) and failure.get("code") == "CONTENT_FILTER":
            return "content_filter"
    return _FINISH.get(kind, kind)


def _error_type(error: Any) -> str:
    """``error.type`` of a failure, error or turn-end reason: its code, else its name, else ``_OTHER``."""
    if isinstance(error, dict):
        for key in ("code", "name"):
            if isinstance(error.get(key), str) and error[key]:
                return error[key]
        for key in ("failure", "error"):
            if isinstance(error.get(key), dict):
                return _error_type(error[key])
    return "_OTHER"


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        if isinstance(error.get("message"), str):
            return error["message"]
        for key in ("failure", "error"):
            if isinstance(error.get(key), dict):
                return _error_message(error[key])
    return ""


def _parts(m: WireMessage) -> dict[str, Any]:
    """One wire message in the conventions' message schema (``{role, parts}``)."""
    if m.role == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": m.tool_call_id, "response": m.content}]}
    parts: list[dict[str, Any]] = []
    if m.reasoning:
        parts.append({"type": "reasoning", "content": m.reasoning})
    if m.content:
        parts.append({"type": "text", "content": m.content})
    for c in m.calls:
        parts.append({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})
    return {"role": m.role, "parts": parts}


def _messages(messages: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        out.extend(_parts(w) for w in wire_messages(message))
    return out


@dataclass(slots=True)
class _Tool:
    seq: int
    time: int
    call_id: Any
    name: str
    arguments: Any
    step: int | None  # index into model.steps
    turn_seq: int | None
    result_seq: int | None = None
    result_time: int | None = None
    result: dict | None = None


@dataclass(slots=True)
class _Turn:
    seq: int
    time: int
    number: Any
    end_seq: int | None = None
    end_time: int | None = None
    last_time: int = 0
    reason: Any = None


@dataclass(slots=True)
class _Step:
    start_time: int | None = None
    last_time: int | None = None
    end_time: int | None = None
    dispatch_time: int | None = None  # the event before the first chunk
    first_chunk_time: int | None = None
    last_chunk_time: int | None = None
    message_time: int | None = None
    message: Any = None  # the assistant/message data
    finish: Any = None  # the last finish chunk's reason
    turn_seq: int | None = None


class _Walk:
    """What one pass over the log's events collects for the spans."""

    def __init__(self, model: SessionModel, wanted_seqs: set[int]) -> None:
        self.step_of_seq = {st.seq: st.index for st in model.steps}
        self.steps = [_Step() for _ in model.steps]
        self.turns: list[_Turn] = []
        self.tools: list[_Tool] = []
        self.pending: dict[Any, _Tool] = {}
        self.times: dict[int, int] = {}
        self.wanted = wanted_seqs
        self.first: int | None = None
        self.last: int | None = None
        self.turn: _Turn | None = None
        self.step: int | None = None
        self.prev_time: int | None = None

    def feed(self, ev: RawEvent) -> None:
        t = _int(ev.obj.get("time"))
        data = ev.obj.get("data")
        data = data if isinstance(data, dict) else {}
        if t is not None:
            self.first = t if self.first is None else min(self.first, t)
            self.last = t if self.last is None else max(self.last, t)
            if ev.seq in self.wanted:
                self.times[ev.seq] = t
            if self.turn is not None:
                self.turn.last_time = max(self.turn.last_time, t)
        kind = ev.type
        if kind == "turn/start":
            self.turn = _Turn(ev.seq, t if t is not None else self.last or 0, data.get("turn"))
            self.turns.append(self.turn)
            self.turn.last_time = self.turn.time
        elif kind == "step/start":
            self.step = self.step_of_seq.get(ev.seq)
            if self.step is not None:
                s = self.steps[self.step]
                s.start_time = s.last_time = t
                s.turn_seq = self.turn.seq if self.turn is not None else None
        if self.step is not None and t is not None:
            s = self.steps[self.step]
            s.last_time = t if s.last_time is None else max(s.last_time, t)
            if kind == "assistant/chunk":
                if s.first_chunk_time is None:
                    s.first_chunk_time, s.dispatch_time = t, self.prev_time
                s.last_chunk_time = t
            elif kind == "assistant/message":
                s.message_time = t
        if self.step is not None:
            s = self.steps[self.step]
            if kind == "assistant/chunk":
                chunk = data.get("chunk")
                if isinstance(chunk, dict) and chunk.get("type") == "finish":
                    s.finish = chunk.get("reason")
            elif kind == "assistant/message":
                s.message = data
            elif kind == "step/end":
                s.end_time = t
                self.step = None
        if kind == "tool/call":
            tool = _Tool(
                ev.seq,
                t if t is not None else self.last or 0,
                data.get("callId"),
                data["name"] if isinstance(data.get("name"), str) else "",
                data.get("arguments"),
                self.step,
                self.turn.seq if self.turn is not None else None,
            )
            self.tools.append(tool)
            if isinstance(tool.call_id, (str, int)):
                self.pending[tool.call_id] = tool
        elif kind == "tool/result":
            call_id = _call_id(data)
            answered = self.pending.pop(call_id, None) if isinstance(call_id, (str, int)) else None
            if answered is not None:
                answered.result_seq, answered.result_time, answered.result = ev.seq, t, data
        elif kind == "turn/end":
            if self.turn is not None:
                self.turn.end_seq, self.turn.end_time, self.turn.reason = ev.seq, t, data.get("reason")
            self.turn = None
            self.pending.clear()
        if t is not None:
            self.prev_time = t


def _call_id(data: dict) -> Any:
    """The call a ``tool/result`` answers: ``callId`` (seed era) or the HEAD message's ``source.callId``."""
    if "callId" in data:
        return data["callId"]
    message = data.get("message")
    if isinstance(message, dict):
        source = message.get("source")
        if isinstance(source, dict) and "callId" in source:
            return source["callId"]
        content = message.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            return content[0].get("toolCallId")
    return None


def _result_block(data: dict) -> tuple[bool, Any, Any]:
    """(isError, error, the result's content) of a ``tool/result``, in either era's shape."""
    message = data.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        block = content[0] if isinstance(content, list) and content and isinstance(content[0], dict) else {}
        return block.get("isError") is True, data.get("error"), block.get("content")
    return data.get("isError") is True, data.get("error"), data.get("content")


def _result_text(content: Any) -> str:
    msgs = wire_messages({"role": "user", "content": [{"type": "tool-result", "toolCallId": "", "content": content}]})
    return msgs[0].content if msgs else ""


def _assistant_message(data: Any) -> dict | None:
    """The assistant message of an ``assistant/message`` (HEAD: ``data.message``; before: ``data.content``)."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("message"), dict):
        return data["message"]
    return {"role": "assistant", "content": data.get("content")}


def _response_model(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    message = data.get("message")
    for holder in (message.get("source") if isinstance(message, dict) else None, data.get("provenance")):
        if isinstance(holder, dict) and isinstance(holder.get("model"), str):
            return holder["model"]
    return None


def _config_of(model: SessionModel, st: StepState) -> dict:
    if st.header_version is None or st.header_version >= len(model.versions):
        return {}
    header = model.versions[st.header_version].header
    config = header.get("config") if isinstance(header, dict) else None
    return config if isinstance(config, dict) else {}


def _route_at(model: SessionModel, seq: int) -> tuple[Any, Any]:
    """(provider, model) of the last ``request/context`` at or before ``seq`` (HEAD logs it when the route changes)."""
    route: tuple[Any, Any] = (None, None)
    for at, data in model.contexts:
        if at > seq:
            break
        if isinstance(data, dict):
            route = (data.get("provider"), data.get("model"))
    return route


def _usage_attributes(usage: Any) -> dict[str, AttrValue]:
    """The harness's disjoint counts in the conventions' terms: input includes cache reads and writes."""
    out: dict[str, AttrValue] = {}
    if not isinstance(usage, dict):
        return out
    prompt = provider_prompt(usage)
    if prompt is not None:
        out["gen_ai.usage.input_tokens"] = prompt[1]
    for key, attr in (
        ("outputTokens", "gen_ai.usage.output_tokens"),
        ("cacheReadTokens", "gen_ai.usage.cache_read.input_tokens"),
        ("cacheWriteTokens", "gen_ai.usage.cache_creation.input_tokens"),
        ("reasoningTokens", "gen_ai.usage.reasoning.output_tokens"),
    ):
        if _int(usage.get(key)) is not None:
            out[attr] = usage[key]
    return out


def _settings(config: dict) -> dict[str, AttrValue]:
    out: dict[str, AttrValue] = {}
    for key, attr, typ in _SETTINGS:
        v = config.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[attr] = int(v) if typ is int and float(v).is_integer() else float(v) if typ is float else v
    stop = config.get("stop")
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        out["gen_ai.request.stop_sequences"] = list(stop)
    if isinstance(config.get("reasoningEffort"), str):
        out["dsh.request.reasoning_effort"] = config["reasoningEffort"]
    return out


class _Builder:
    def __init__(self, model: SessionModel, findings: list[Finding], content: bool) -> None:
        self.model = model
        self.findings = findings
        self.content = content
        header = model.header
        created = header.created_at if header is not None else None
        self.session = model.id
        self.trace_id = trace_id_of(self.session, created)
        self.created = _int(created)
        self.seed_length = header.seed_length if header is not None and type(header.seed_length) is int else 0

    def build(self, events: Iterable[RawEvent]) -> SessionTrace:
        model = self.model
        walk = _Walk(model, {f.seq for f in self.findings if f.seq is not None})
        for ev in events:
            walk.feed(ev)
        times = [x for x in (self.created, walk.first) if x is not None]
        start = min(times) if times else 0
        end = max([start] + ([walk.last] if walk.last is not None else []))
        root = Span(span_id_of(self.trace_id, "session", -1), None, "invoke_agent", KIND_INTERNAL, _ns(start), _ns(end))
        spans = [root]
        turn_spans: dict[int, Span] = {}
        for turn in walk.turns:
            sp = self._turn(turn, root)
            turn_spans[turn.seq] = sp
            spans.append(sp)
        chats: list[Span] = []
        for st, s in zip(model.steps, walk.steps):
            parent = turn_spans.get(s.turn_seq) if s.turn_seq is not None else None
            sp = self._chat(st, s, parent or root)
            chats.append(sp)
            spans.append(sp)
        tool_spans: list[tuple[_Tool, Span]] = []
        for tool in walk.tools:
            parent = turn_spans.get(tool.turn_seq) if tool.turn_seq is not None else None
            end_time = tool.result_time
            if end_time is None and tool.step is not None:
                s = walk.steps[tool.step]
                end_time = s.end_time if s.end_time is not None else s.last_time
            sp = self._tool(tool, parent or root, end_time)
            tool_spans.append((tool, sp))
            spans.append(sp)
        self._root(root, chats)
        self._place_findings(root, walk, turn_spans, chats, tool_spans)
        for sp in spans:
            _sanitize(sp)
        return SessionTrace(self.trace_id, _text(self.session), _text(model.file), spans)

    def _said(self, text: str, generic: str) -> str:
        """A status description: the log's own words only with content (a tool's error can quote a file)."""
        return text if self.content and text else generic

    def _root(self, root: Span, chats: list[Span]) -> None:
        model, header = self.model, self.model.header
        a = root.attributes
        a["gen_ai.operation.name"] = "invoke_agent"
        first = next((c for c in chats if "gen_ai.request.model" in c.attributes), None)
        a["gen_ai.provider.name"] = first.attributes["gen_ai.provider.name"] if first else _provider(None, None)
        raw = header.raw if header is not None else {}
        preset = raw.get("agentPreset") if isinstance(raw, dict) else None
        if isinstance(preset, str) and preset:
            a["gen_ai.agent.name"] = preset
            root.name = f"invoke_agent {preset}"
        a["gen_ai.conversation.id"] = self.session
        if first is not None:
            a["gen_ai.request.model"] = first.attributes["gen_ai.request.model"]
        totals: dict[str, int] = {}
        for c in chats:
            for k, v in c.attributes.items():
                if k.startswith("gen_ai.usage.") and isinstance(v, int):
                    totals[k] = totals.get(k, 0) + v
        a.update(totals)
        a["dsh.session.id"] = self.session
        a["dsh.session.file"] = model.file
        if header is not None and isinstance(header.parent_session, str):
            a["dsh.session.parent"] = header.parent_session
        if self.seed_length:
            a["dsh.session.seed_length"] = self.seed_length
        a["dsh.session.era"] = model.profile.era
        a["dsh.session.profile"] = model.profile.name
        a["dsh.session.turns"] = model.turns
        a["dsh.session.steps"] = len(model.steps)
        a["dsh.session.events"] = model.events
        counts = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        for sev, n in counts.items():
            a[f"inspector.findings.{sev}"] = n

    def _turn(self, turn: _Turn, root: Span) -> Span:
        end = turn.end_time if turn.end_time is not None else turn.last_time
        sp = Span(
            span_id_of(self.trace_id, "turn", turn.seq),
            root.span_id,
            "turn",
            KIND_INTERNAL,
            _ns(turn.time),
            _ns(max(turn.time, end)),
        )
        a = sp.attributes
        a["gen_ai.conversation.id"] = self.session
        if _int(turn.number) is not None:
            a["dsh.turn"] = turn.number
        a["dsh.turn.seq"] = turn.seq
        if turn.seq < self.seed_length:
            a["dsh.inherited"] = True
        reason = turn.reason
        kind = reason.get("kind") if isinstance(reason, dict) else None
        if isinstance(kind, str):
            a["dsh.turn.end_reason"] = kind
            if kind == "error":
                a["error.type"] = _error_type(reason)
                sp.fail(self._said(_error_message(reason), "the turn ended in an error"))
        elif turn.end_seq is None:
            a["dsh.turn.end_reason"] = "open"  # the log ends inside this turn
        return sp

    def _chat(self, st: StepState, s: _Step, parent: Span) -> Span:
        model = self.model
        config = _config_of(model, st)
        route, routed_model = _route_at(model, st.last_seq)
        name = config.get("model") if isinstance(config.get("model"), str) else routed_model
        provider = _provider(config.get("provider", route), name)
        start = s.start_time if s.start_time is not None else parent.start_ns // _NS
        done = next((x for x in (s.message_time, s.last_chunk_time, s.end_time, s.last_time) if x is not None), start)
        sp = Span(
            span_id_of(self.trace_id, "step", st.seq),
            parent.span_id,
            f"chat {name}" if isinstance(name, str) and name else "chat",
            KIND_CLIENT,
            _ns(start),
            _ns(max(start, done)),
        )
        a = sp.attributes
        a["gen_ai.operation.name"] = "chat"
        a["gen_ai.provider.name"] = provider
        if isinstance(name, str):
            a["gen_ai.request.model"] = name
        a["gen_ai.conversation.id"] = self.session
        a.update(_settings(config))
        if st.chunks:
            a["gen_ai.request.stream"] = True
        if s.first_chunk_time is not None and s.dispatch_time is not None:
            a["gen_ai.response.time_to_first_chunk"] = max(0, s.first_chunk_time - s.dispatch_time) / 1000
        response_model = _response_model(s.message)
        if response_model is not None:
            a["gen_ai.response.model"] = response_model
        finish = _finish(s.finish)
        if finish is not None:
            a["gen_ai.response.finish_reasons"] = [finish]
        a.update(_usage_attributes(st.usage))
        if _int(st.turn) is not None:
            a["dsh.turn"] = st.turn
        if _int(st.step) is not None:
            a["dsh.step"] = st.step
        a["dsh.step.seq"] = st.seq
        a["dsh.step.status"] = st.status
        a["dsh.step.chunks"] = st.chunks
        if st.seq < self.seed_length:
            a["dsh.inherited"] = True
        if finish == "error":
            a["error.type"] = _error_type(s.finish)
            sp.fail(self._said(_error_message(s.finish), "the model call failed"))
        if self.content:
            self._chat_content(st, s, a)
        return sp

    def _chat_content(self, st: StepState, s: _Step, a: dict[str, AttrValue]) -> None:
        rebuilt = self.model.rebuild_request(st)
        if rebuilt is not None:
            request = rebuilt.request
            system = request.get("system")
            if isinstance(system, str) and system:
                a["gen_ai.system_instructions"] = _json([{"type": "text", "content": system}])
            a["gen_ai.input.messages"] = _json(_messages(request.get("messages")))
        message = _assistant_message(s.message)
        if message is not None:
            out = _messages([message])
            finish = _finish(s.finish)
            for m in out:
                m["finish_reason"] = finish or "stop"
            a["gen_ai.output.messages"] = _json(out)

    def _tool(self, tool: _Tool, parent: Span, end_time: int | None) -> Span:
        end = max(tool.time, end_time if end_time is not None else tool.time)
        sp = Span(
            span_id_of(self.trace_id, "tool", tool.seq),
            parent.span_id,
            f"execute_tool {tool.name}" if tool.name else "execute_tool",
            KIND_INTERNAL,
            _ns(tool.time),
            _ns(end),
        )
        a = sp.attributes
        a["gen_ai.operation.name"] = "execute_tool"
        a["gen_ai.tool.name"] = tool.name
        if isinstance(tool.call_id, str):
            a["gen_ai.tool.call.id"] = tool.call_id
        a["gen_ai.tool.type"] = "function"
        description = self._tool_description(tool)
        if description:
            a["gen_ai.tool.description"] = description
        a["gen_ai.conversation.id"] = self.session
        a["dsh.tool.call_seq"] = tool.seq
        if tool.step is not None:
            st = self.model.steps[tool.step]
            if _int(st.turn) is not None:
                a["dsh.turn"] = st.turn
            if _int(st.step) is not None:
                a["dsh.step"] = st.step
        if tool.seq < self.seed_length:
            a["dsh.inherited"] = True
        if tool.result is None:
            a["dsh.tool.result"] = "missing"
        else:
            a["dsh.tool.result_seq"] = tool.result_seq or 0
            is_error, error, content = _result_block(tool.result)
            if is_error:
                a["error.type"] = _error_type(error)
                sp.fail(self._said(_error_message(error), "the tool call failed"))
            if self.content:
                a["gen_ai.tool.call.result"] = _result_text(content)
        if self.content:
            args = tool.arguments
            a["gen_ai.tool.call.arguments"] = args if isinstance(args, str) else _json(args)
        return sp

    def _tool_description(self, tool: _Tool) -> str | None:
        if tool.step is None:
            return None
        st = self.model.steps[tool.step]
        if st.header_version is None or st.header_version >= len(self.model.versions):
            return None
        live = self.model.versions[st.header_version].header
        tools = live.get("tools") if isinstance(live, dict) else None
        for t in tools if isinstance(tools, list) else []:
            if isinstance(t, dict) and t.get("name") == tool.name and isinstance(t.get("description"), str):
                return t["description"]
        return None

    def _place_findings(
        self,
        root: Span,
        walk: _Walk,
        turn_spans: dict[int, Span],
        chats: list[Span],
        tool_spans: list[tuple[_Tool, Span]],
    ) -> None:
        steps = self.model.steps
        step_seqs = [st.seq for st in steps]
        turn_seqs = [t.seq for t in walk.turns]
        by_tool_seq: dict[int, tuple[_Tool, Span]] = {}
        for tool, sp in tool_spans:
            by_tool_seq[tool.seq] = (tool, sp)
            if tool.result_seq is not None:
                by_tool_seq[tool.result_seq] = (tool, sp)

        def step_at(seq: int) -> int | None:
            k = bisect.bisect_right(step_seqs, seq) - 1
            if k < 0:
                return None
            st = steps[k]
            last = st.end_seq if st.end_seq is not None else st.last_seq
            return k if seq <= max(last, st.seq) else None

        def turn_at(seq: int) -> Span | None:
            k = bisect.bisect_right(turn_seqs, seq) - 1
            if k < 0:
                return None
            t = walk.turns[k]
            return turn_spans[t.seq] if t.end_seq is None or seq <= t.end_seq else None

        for f in self.findings:
            target: Span | None = None
            named = self.model.step_for(f.turn, f.step) if f.turn is not None and f.step is not None else None
            if f.seq is not None and f.seq in by_tool_seq:
                tool, sp = by_tool_seq[f.seq]
                if named is None or tool.step == named.index:
                    target = sp
            if target is None and named is not None:
                target = chats[named.index]
            if target is None and f.seq is not None:
                k = step_at(f.seq)
                target = chats[k] if k is not None else turn_at(f.seq)
            if target is None and f.turn is not None:
                target = next((turn_spans[t.seq] for t in walk.turns if t.number == f.turn), None)
            target = target or root
            time = walk.times.get(f.seq) if f.seq is not None else None
            ev = SpanEvent(FINDING_EVENT, _ns(time) if time is not None else target.start_ns)
            ea = ev.attributes
            rule = RULES.get(f.rule)
            # A finding's message may quote the log (a diverging message's text): only with content.
            message = f.message if self.content or rule is None else rule.summary
            ea["inspector.finding.rule"] = f.rule
            if rule is not None:
                ea["inspector.finding.name"] = rule.name
            ea["inspector.finding.severity"] = f.severity
            ea["inspector.finding.category"] = f.category
            ea["inspector.finding.message"] = message
            if f.path:
                ea["inspector.finding.path"] = f.path
            if f.seq is not None:
                ea["inspector.finding.seq"] = f.seq
            if f.line is not None:
                ea["inspector.finding.line"] = f.line
            target.events.append(ev)
            if f.severity == "error":
                target.fail(f"{f.rule}: {message}")
                root.fail(f"{f.rule}: {message}")


def session_trace(
    model: SessionModel,
    findings: Iterable[Finding],
    *,
    content: bool = False,
    events: Iterable[RawEvent] | None = None,
) -> SessionTrace:
    """The trace of one replayed session with its findings (those of the check, as the configuration reports
    them).  ``events`` are the log's events in order; by default they are read back from ``model.source``.
    ``content`` adds the message and tool-call content attributes (opt-in)."""
    b = _Builder(model, list(findings), content)
    return b.build(iter_events(model.source) if events is None else events)
