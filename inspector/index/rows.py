"""Rows for the index, computed from a :class:`SessionModel` (worker side).

Nothing here touches the database: rows are plain tuples without the
session key, which the writer adds.  Column order follows ``*_COLUMNS``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from typing import Any

import orjson

from invariants.model.findings import Finding
from invariants.replay.model import SessionModel, StepState

MAX_MESSAGE_TEXT = 1 << 20  # characters of one message kept for full-text search
_I64 = 1 << 63

STEP_COLUMNS = (
    "idx",
    "turn",
    "step",
    "seq",
    "line",
    "end_seq",
    "last_seq",
    "first_chunk_seq",
    "chunks",
    "instance",
    "version",
    "model",
    "header_hash",
    "prefix_hash",
    "system_hash",
    "tools_hash",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "reasoning_tokens",
    "usage",
    "compaction_before",
    "status",
    "requests",
)
VERSION_COLUMNS = ("idx", "seq", "line", "kind", "instance", "header_hash", "changed", "arms")
INSTANCE_COLUMNS = (
    "idx",
    "seq",
    "line",
    "reason",
    "header_hash",
    "prefix_hash",
    "prev_prefix_hash",
    "prefix_drift",
    "drift",
    "first_step",
)
MESSAGE_COLUMNS = ("seq", "line", "step_idx", "role", "source", "text", "truncated")
TOOL_CALL_COLUMNS = ("seq", "step_idx", "call_id", "name")
STREAM_COLUMNS = ("step_idx", "attempt", "seq", "line", "text", "truncated")
FINDING_COLUMNS = ("rule", "category", "severity", "seq", "line", "turn", "step", "path", "file", "message", "detail")
CACHE_COLUMNS = (
    "idx",
    "turn",
    "step",
    "seq",
    "bytes",
    "reused_bytes",
    "new_bytes",
    "repaid_bytes",
    "tokens_est",
    "reused_tokens_est",
    "repaid_tokens_est",
    "breaker",
    "breaker_detail",
    "config_changes",
    "input_tokens",
    "cache_read_tokens",
    "tokens",
)
HEADER_COLUMNS = (
    "hash",
    "json",
    "model",
    "provider",
    "system_hash",
    "tools_hash",
    "prefix_hash",
    "suffix_hash",
    "config",
    "tools",
    "bytes",
)

_USAGE_KEYS = {
    "input": ("inputTokens", "input_tokens", "promptTokens", "prompt_tokens"),
    "output": ("outputTokens", "output_tokens", "completionTokens", "completion_tokens"),
    "cache": (
        "cacheReadTokens",
        "cache_read_tokens",
        "cachedInputTokens",
        "promptCacheHitTokens",
        "prompt_cache_hit_tokens",
        "cache_read_input_tokens",
    ),
    "reasoning": ("reasoningTokens", "reasoning_tokens"),
}


def dumps(value: Any) -> str:
    """JSON text of a parsed value (key order kept)."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, default=repr)


def digest(value: Any) -> str:
    """A short content hash of a JSON value (128 bits, hex)."""
    try:
        data = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        data = json.dumps(value, ensure_ascii=False, default=repr).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def scalar(value: Any) -> Any:
    """A value SQLite can store as is: JSON text for containers, text for huge ints."""
    if value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -_I64 <= value < _I64 else str(value)
    return dumps(value)


def header_parts(header: dict) -> tuple[str, tuple, list[str]]:
    """(hash, headers row, tool names) for one folded header."""
    text = dumps(header)
    h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    config = header.get("config")
    if not isinstance(config, dict):
        config = {}
    tools = header.get("tools")
    names: list[str] = []
    if isinstance(tools, list):
        for t in tools:
            if isinstance(t, dict):
                name = t.get("name")
                if name is None and isinstance(t.get("function"), dict):
                    name = t["function"].get("name")
                names.append(name if isinstance(name, str) else dumps(name))
    row = (
        h,
        text,
        scalar(config.get("model")),
        scalar(config.get("provider")),
        digest(header.get("system")),
        digest(tools),
        digest(_prefix(header)),
        digest(header.get("messageSuffix")),
        dumps(config),
        len(tools) if isinstance(tools, list) else None,
        len(text),
    )
    return h, row, names


def _prefix(header: dict) -> list:
    value = header.get("messagePrefix", [])
    return value if isinstance(value, list) else [value]


def usage_numbers(usage: Any) -> tuple:
    if not isinstance(usage, dict):
        return (None, None, None, None)
    out = []
    for kind in ("input", "output", "cache", "reasoning"):
        v = None
        for k in _USAGE_KEYS[kind]:
            if k in usage:
                v = usage[k]
                break
        out.append(scalar(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
    return tuple(out)


class HeaderTable:
    """Header hashes of a model's versions, computed once per version."""

    def __init__(self, model: SessionModel) -> None:
        self.model = model
        self.hashes: dict[int, str] = {}
        self.rows: dict[str, tuple] = {}
        self.tools: dict[str, list[str]] = {}

    def of(self, version: int | None) -> tuple | None:
        """(hash, headers row) of version ``version``."""
        if version is None or version >= len(self.model.versions):
            return None
        h = self.hashes.get(version)
        if h is None:
            h, row, names = header_parts(self.model.versions[version].header)
            self.hashes[version] = h
            self.rows[h] = row
            self.tools[h] = names
        return h, self.rows[h]


def step_row(st: StepState, headers: HeaderTable) -> tuple:
    hv = headers.of(st.header_version)
    row = hv[1] if hv else None
    inp, out, cache, reasoning = usage_numbers(st.usage)
    return (
        st.index,
        scalar(st.turn),
        scalar(st.step),
        st.seq,
        st.line,
        st.end_seq,
        st.last_seq,
        st.first_chunk_seq,
        st.chunks,
        st.instance,
        st.header_version,
        row[2] if row else None,
        row[0] if row else None,
        row[6] if row else None,
        row[4] if row else None,
        row[5] if row else None,
        inp,
        out,
        cache,
        reasoning,
        dumps(st.usage) if st.usage is not None else None,
        int(st.compaction_before),
        st.status,
        len(st.requests),
    )


def version_rows(model: SessionModel, headers: HeaderTable, start: int = 0) -> list[tuple]:
    out = []
    for i in range(start, len(model.versions)):
        v = model.versions[i]
        hv = headers.of(i)
        out.append(
            (i, v.seq, v.line, scalar(v.kind), v.instance, hv[0] if hv else None, dumps(v.changed), dumps(v.arms))
        )
    return out


def instance_rows(model: SessionModel, headers: HeaderTable) -> list[tuple]:
    out = []
    prev_prefix = None
    version_of_seq = {v.seq: i for i, v in enumerate(model.versions)}
    for inst in model.instances:
        vi = version_of_seq.get(inst.seq)
        hv = headers.of(vi) if vi is not None else None
        if hv is None:
            h, row, names = header_parts(inst.header)
            headers.rows.setdefault(h, row)
            headers.tools.setdefault(h, names)
            hv = (h, row)
        prefix_hash = hv[1][6]
        drift = (
            1
            if (prev_prefix is not None and prefix_hash != prev_prefix) or "messagePrefix" in (inst.drift or [])
            else 0
        )
        out.append(
            (
                inst.index,
                inst.seq,
                inst.line,
                scalar(inst.reason),
                hv[0],
                prefix_hash,
                prev_prefix,
                drift,
                dumps(inst.drift),
                inst.first_step,
            )
        )
        prev_prefix = prefix_hash
    return out


def finding_row(f: Finding) -> tuple:
    return (
        f.rule,
        f.category,
        f.severity,
        f.seq,
        f.line,
        scalar(f.turn),
        scalar(f.step),
        scalar(f.path),
        f.file,
        f.message,
        dumps(f.detail) if f.detail else None,
    )


def _text_of(content: Any, parts: list[str], calls: list[tuple], depth: int = 0) -> None:
    if depth > 8:
        return
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for item in content:
            _text_of(item, parts, calls, depth + 1)
    elif isinstance(content, dict):
        kind = content.get("type")
        if kind in ("tool-call", "tool_call", "function") or (
            "name" in content and ("arguments" in content or "input" in content)
        ):
            name = content.get("name")
            if name is None and isinstance(content.get("function"), dict):
                name = content["function"].get("name")
            calls.append(
                (
                    scalar(content.get("id") or content.get("toolCallId")),
                    name if isinstance(name, str) else scalar(name),
                )
            )
            args = content.get("arguments", content.get("input"))
            parts.append(f"{name}({args if isinstance(args, str) else dumps(args)})")
            return
        if isinstance(content.get("text"), str):
            parts.append(content["text"])
        for key in ("content", "output", "result"):
            if key in content and not isinstance(content[key], (int, float, bool)):
                _text_of(content[key], parts, calls, depth + 1)


def message_rows(model: SessionModel, since_seq: int = -1) -> tuple[list[tuple], list[tuple]]:
    """Surface messages with seq > ``since_seq``, and the tool calls they make."""
    step_seqs = [s.seq for s in model.steps]
    rows: list[tuple] = []
    calls_out: list[tuple] = []
    lines = model.surface.lines
    for seq in sorted(s for s in model.surface.messages if s > since_seq):
        msg = model.surface.messages[seq]
        if msg is None:
            continue
        k = bisect.bisect_right(step_seqs, seq) - 1
        step_idx = None
        if k >= 0:
            st = model.steps[k]
            if st.end_seq is None or seq <= st.end_seq:
                step_idx = k
        parts: list[str] = []
        calls: list[tuple] = []
        role = source = None
        if isinstance(msg, dict):
            role = msg.get("role")
            src = msg.get("source")
            source = src.get("kind") if isinstance(src, dict) else src
            _text_of(msg.get("content"), parts, calls)
            for key in ("toolCalls", "tool_calls"):
                if isinstance(msg.get(key), list):
                    _text_of(msg[key], parts, calls)
        else:
            _text_of(msg, parts, calls)
        text = "\n".join(parts)
        truncated = 0
        if len(text) > MAX_MESSAGE_TEXT:
            text, truncated = text[:MAX_MESSAGE_TEXT], 1
        rows.append((seq, lines.get(seq), step_idx, scalar(role), scalar(source), text, truncated))
        for call_id, name in calls:
            calls_out.append((seq, step_idx, call_id, name))
    return rows, calls_out


def unheld_streams(model: SessionModel, start: int = 0) -> list[StepState]:
    """Steps ``start..`` that streamed but whose output no assistant message holds (a failed or cut-off
    stream, a crash mid-step): their text exists only split across chunks."""
    held = sorted(
        seq for seq, msg in model.surface.messages.items() if isinstance(msg, dict) and msg.get("role") == "assistant"
    )
    out = []
    steps = model.steps
    for i in range(start, len(steps)):
        st = steps[i]
        if st.first_chunk_seq is None:
            continue
        end = steps[i + 1].seq if i + 1 < len(steps) else float("inf")
        k = bisect.bisect_right(held, st.first_chunk_seq)
        if k == len(held) or held[k] >= end:
            out.append(st)
    return out


def stream_rows(model: SessionModel, start: int = 0) -> list[tuple]:
    """The text streamed by each attempt of the steps :func:`unheld_streams` names, assembled from
    its text and reasoning deltas, so full-text search finds what the model said though no message
    recorded it.  Only those steps' lines are read back (the model keeps no chunk payloads)."""
    steps = unheld_streams(model, start)
    if not steps:
        return []
    from invariants.analysis.events_view import LineIndex, read_events

    index = LineIndex(model.source)
    rows = []
    for st in steps:
        first, last = st.first_chunk_seq, st.end_seq if st.end_seq is not None else st.last_seq
        if first is None:  # unheld_streams names streamed steps only
            continue
        events = read_events(model.source, first, last, start_line=st.line, index=index)
        for attempt, (seq, line, text) in enumerate(_streamed_attempts(events), 1):
            truncated = int(len(text) > MAX_MESSAGE_TEXT)
            rows.append((st.index, attempt, seq, line, text[:MAX_MESSAGE_TEXT], truncated))
    return rows


def _streamed_attempts(events: list) -> list[tuple[int, int, str]]:
    """(first chunk seq, its line, assembled text) per attempt with any text: an attempt ends at a
    failed ``finish`` or a retry event; pieces join per content block, blocks by a newline."""
    out: list[tuple[int, int, str]] = []
    blocks: dict[Any, list[str]] = {}
    first: tuple[int, int] | None = None

    def close() -> None:
        nonlocal first
        text = "\n".join("".join(p) for p in blocks.values())
        if first is not None and text:
            out.append((*first, text))
        blocks.clear()
        first = None

    for ev in events:
        if ev.type in ("llm/retry", "llm/retry-started"):
            close()
            continue
        data = ev.obj.get("data")
        chunk = data.get("chunk") if ev.type == "assistant/chunk" and isinstance(data, dict) else None
        if not isinstance(chunk, dict):
            continue
        if first is None:
            first = (ev.seq, ev.line)
        kind, piece = chunk.get("type"), chunk.get("text")
        if kind in ("text-delta", "reasoning-delta") and isinstance(piece, str):
            key = (kind, chunk.get("index") if isinstance(chunk.get("index"), (int, str)) else None)
            blocks.setdefault(key, []).append(piece)
        elif kind == "finish" and isinstance(chunk.get("reason"), dict) and chunk["reason"].get("kind") == "error":
            close()
    close()
    return out


def session_facts(model: SessionModel) -> dict:
    """The sessions-row columns a model knows (counts, header fields)."""
    hdr = model.header
    created = hdr.created_at if hdr else None
    return {
        "uid": model.id,
        "cwd": scalar(hdr.cwd) if hdr else None,
        "created_at": scalar(created) if isinstance(created, (int, float)) and not isinstance(created, bool) else None,
        "created": _iso(created),
        "parent_session": hdr.parent_session if hdr and isinstance(hdr.parent_session, str) else None,
        "seed_length": (hdr.seed_length or 0) if hdr else 0,
        "owner": hdr.raw.get("owner") if hdr and isinstance(hdr.raw.get("owner"), str) else None,
        "era": model.profile.era,
        "profile": model.profile.name,
        "version": scalar(hdr.version) if hdr else None,
        "compressed": int(model.source.compressed),
        "events": model.events,
        "turns": model.turns,
        "steps": len(model.steps),
        "chunks": model.chunks,
        "chunk_rows": model.chunk_rows,
        "lines": model.lines,
        "bytes": model.bytes,
        "instances": len(model.instances),
        "versions": len(model.versions),
        "compactions": len(model.compactions),
        "torn": int(model.torn),
        "open_turn_at_end": int(model.open_turn_at_end),
    }


def _iso(ms: Any) -> str | None:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    except (OverflowError, OSError, ValueError):
        return None


class _StepsView:
    """A model seen through a slice of its steps (for the cache account of appended steps)."""

    def __init__(self, model: SessionModel, steps: list) -> None:
        self._model = model
        self.steps = steps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def cache_rows(model: SessionModel, start: int = 0) -> list[tuple]:
    """``invariants.analysis.cache_report`` rows for steps ``start..``.

    The account of a step compares it with the previous step that has a
    request header, so a slice starts there and its first row is dropped.
    """
    from invariants.analysis.cache_report import session_cache, step_rows
    from invariants.analysis.tokenizer import available

    steps = model.steps
    begin = 0
    for i in range(min(start, len(steps)) - 1, -1, -1):
        if steps[i].header_version is not None:
            begin = i
            break
    view = model if begin == 0 else _StepsView(model, steps[begin:])
    sc = session_cache(view, count_tokens=available())
    out = []
    for row, sc_step in zip(step_rows(sc), sc.steps):
        if sc_step.index < start:
            continue
        out.append(
            (
                sc_step.index,
                scalar(sc_step.turn),
                scalar(sc_step.step),
                sc_step.seq,
                row["bytes"],
                row["reused_bytes"],
                row["bytes"] - row["reused_bytes"],
                row["repaid_bytes"],
                row["tokens_est"],
                row["reused_tokens_est"],
                row["repaid_tokens_est"],
                scalar(row["breaker"]),
                dumps(sc_step.breaker) if sc_step.breaker else None,
                dumps(sc_step.config_changes) if sc_step.config_changes else None,
                scalar(row["input_tokens"]) if isinstance(row["input_tokens"], (int, float)) else None,
                scalar(row["cache_read_tokens"]) if isinstance(row["cache_read_tokens"], (int, float)) else None,
                sc_step.tokens,
            )
        )
    return out
