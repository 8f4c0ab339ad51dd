"""Blame of a rebuilt request: every part of it tagged with the log event that produced it.

A harness developer looking at a wrong byte asks which event put it there.
The rebuilt request already knows where each derived message came from (the
surface event, :attr:`RebuiltRequest.origins`); header parts (model, system,
each tool, each call setting, each prefix and suffix message) come from the
header version that *last changed* that part: walking the header versions
back from the one in force while the part's value stays the same.  That is a
snapshot or a delta, never the ``step/start`` the request belongs to.

The lines are in the request's own order: model, system, tools, the messages
(prefix, derived history, suffix), then the call settings.  Pure: plain data
in, plain data out; the TUI draws them and jumps to ``seq``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from invariants.model.jsonvalue import MISSING, js_equal
from invariants.replay.header_fold import HeaderVersion, prefix_of
from invariants.replay.model import RebuiltRequest, SessionModel

HEADER_EVENT = {"delta": "request/header-delta"}  # any other kind is a request/header snapshot


@dataclass(frozen=True)
class BlameLine:
    """One part of a rebuilt request and the event that produced it."""

    path: str  # where the part sits in the request: "model", "tools[1]", "messages[3]", "temperature"
    region: str  # config | system | tools | prefix | derived | suffix
    label: str  # what the part is, in a few words (log text is the caller's to make inert)
    seq: int | None  # the producing event (None: nothing in the log explains it)
    line: int | None  # that event's physical line, when known
    event: str  # the producing event's type, with a word on how: "request/header (initial snapshot)"


def version_event(v: HeaderVersion) -> str:
    """The type of the event that made a header version, with its kind."""
    if v.kind == "delta":
        return "request/header-delta"
    return f"request/header ({v.kind} snapshot)"


def _version_index(model: SessionModel, v: HeaderVersion) -> int:
    for j in range(len(model.versions) - 1, -1, -1):
        if model.versions[j] is v:
            return j
    raise ValueError(f"header version at seq {v.seq} is not one of the session's")


def last_set(versions: list[HeaderVersion], k: int, part: Callable[[dict], Any]) -> HeaderVersion:
    """The earliest version of the unbroken run ending at ``versions[k]`` in which ``part`` has its value."""
    value = part(versions[k].header)
    while k > 0 and js_equal(part(versions[k - 1].header), value):
        k -= 1
    return versions[k]


def _config(key: str) -> Callable[[dict], Any]:
    def get(header: dict) -> Any:
        config = header.get("config")
        return config.get(key, MISSING) if isinstance(config, dict) else MISSING

    return get


def _field(key: str) -> Callable[[dict], Any]:
    return lambda header: header.get(key, MISSING)


def _tool(tool: Any) -> Callable[[dict], Any]:
    """Whether the header's tools hold this very tool (a tool added, removed or edited is a change to it)."""

    def get(header: dict) -> Any:
        tools = header.get("tools")
        return isinstance(tools, list) and any(js_equal(t, tool) for t in tools)

    return get


def _listed(key: str, index: int) -> Callable[[dict], Any]:
    """Message ``index`` of the header's prefix (or suffix): the same message at the same place."""

    def get(header: dict) -> Any:
        value = prefix_of(header) if key == "messagePrefix" else header.get(key, [])
        value = value if isinstance(value, list) else [value]
        return value[index] if index < len(value) else MISSING

    return get


def message_event(model: SessionModel, seq: int, message: Any) -> str:
    """The type of the surface event a derived message came from, as its projection shows it
    (and, for a compaction, that it replaced earlier history)."""
    kind = _projected_kind(message)
    return f"{kind} (compaction replace)" if seq in model.compactions else kind


def _projected_kind(message: Any) -> str:
    if not isinstance(message, dict):
        return "surface event"
    if message.get("role") == "assistant":
        return "assistant/message"
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    if any(isinstance(b, dict) and b.get("type") == "tool-result" for b in blocks):
        return "tool/result"
    first = blocks[0].get("text") if blocks and isinstance(blocks[0], dict) else None
    if isinstance(first, str):
        for tag in ("context", "steering"):
            if first.startswith(f"<{tag} source="):
                return f"{tag}/message"
    return "user/message"


def _message_label(message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    return f"{role if isinstance(role, str) else '?'} message"


def blame_request(model: SessionModel, exp: RebuiltRequest) -> list[BlameLine]:
    """Every part of ``exp``, in the request's order, with the event that produced it."""
    v = exp.header_version
    k = _version_index(model, v) if v is not None else None
    lines: list[BlameLine] = []

    def header_part(path: str, region: str, label: str, part: Callable[[dict], Any]) -> None:
        if k is None:
            lines.append(BlameLine(path, region, label, None, None, "no request header in force"))
            return
        src = last_set(model.versions, k, part)
        lines.append(BlameLine(path, region, label, src.seq, src.line, version_event(src)))

    request = exp.request
    for key, value in request.items():
        if key == "messages":
            _messages(model, exp, value, header_part, lines)
        elif key == "system":
            header_part(
                "system",
                "system",
                f"system prompt, {len(value) if isinstance(value, str) else '?'} chars",
                _field("system"),
            )
        elif key == "tools":
            for i, tool in enumerate(value if isinstance(value, list) else []):
                name = tool.get("name") if isinstance(tool, dict) else None
                header_part(f"tools[{i}]", "tools", f"tool {name if isinstance(name, str) else i}", _tool(tool))
        else:
            header_part(key, "config", f"config {key}", _config(key))
    return lines


def _messages(
    model: SessionModel,
    exp: RebuiltRequest,
    messages: Iterable[Any],
    header_part: Callable[[str, str, str, Callable[[dict], Any]], None],
    lines: list[BlameLine],
) -> None:
    for i, msg in enumerate(messages):
        region = exp.region(i)
        path = f"messages[{i}]"
        label = f"{region} {_message_label(msg)}"
        if region == "prefix":
            header_part(path, region, label, _listed("messagePrefix", i))
        elif region == "suffix":
            header_part(path, region, label, _listed("messageSuffix", i - exp.prefix_len - exp.derived_len))
        else:
            j = i - exp.prefix_len
            seq = exp.origins[j] if 0 <= j < len(exp.origins) else None
            if seq is None:
                lines.append(BlameLine(path, region, label, None, None, "no surface event"))
            else:
                line = model.surface.lines.get(seq)
                lines.append(BlameLine(path, region, label, seq, line, message_event(model, seq, msg)))


def inside(path: str, whole: str) -> bool:
    """Whether request path ``path`` lies in ``whole`` (``messages[2].content`` lies in ``messages[2]``)."""
    return path == whole or (path.startswith(whole) and path[len(whole)] in ".[")


def marked(lines: list[BlameLine], paths: Iterable[str]) -> set[str]:
    """The paths of the lines a difference at any of ``paths`` touches: the part it lies in, or every
    part of a whole it names (a difference at ``messages`` marks each message)."""
    paths = list(paths)
    return {bl.path for bl in lines if any(inside(p, bl.path) or inside(bl.path, p) for p in paths)}


def header_differences(exp: RebuiltRequest, recorded: dict) -> dict[str, list[tuple[str, Any]]]:
    """Which header fields the recorded request contradicts, with what it carries instead.

    Keyed by header field (``config``, ``system``, ``tools``, ``messagePrefix``,
    ``messageSuffix``); each entry lists ``(request key, recorded value)``
    (``MISSING`` when the recorded request lacks it).  A prefix or suffix is
    compared with the recorded messages at the same places.
    """
    out: dict[str, list[tuple[str, Any]]] = {}
    request = exp.request
    for key in dict.fromkeys([*request, *recorded]):
        if key == "messages":
            continue
        mine, theirs = request.get(key, MISSING), recorded.get(key, MISSING)
        if not js_equal(mine, theirs):
            out.setdefault(key if key in ("system", "tools") else "config", []).append((key, theirs))
    mine_msgs = request.get("messages")
    theirs_msgs = recorded.get("messages")
    if isinstance(mine_msgs, list) and isinstance(theirs_msgs, list):
        spans = {
            "messagePrefix": (0, exp.prefix_len),
            "messageSuffix": (exp.prefix_len + exp.derived_len, exp.prefix_len + exp.derived_len + exp.suffix_len),
        }
        for name, (a, b) in spans.items():
            if a == b:
                continue
            if name == "messageSuffix":  # a suffix sits at the end of the recorded request too
                n = b - a
                shown = theirs_msgs[-n:] if len(theirs_msgs) >= n else theirs_msgs
            else:
                shown = theirs_msgs[a:b]
            if not js_equal(mine_msgs[a:b], shown):
                out[name] = [(f"messages[{a}:{b}]", shown)]
    return out
