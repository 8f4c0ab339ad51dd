"""A rebuilt request as the harness's DeepSeek adapter puts it on the wire.

The provider counts the tokens of what it receives, not of the JSON the
harness logs, so a token count has to start from the adapter's mapping
(``serializeRequest`` in ``packages/llm/llm-deepseek/src/serialize.ts``):

- the system prompt is the first message, ``{role: system, content}``;
- an assistant message sends its text blocks joined as ``content`` (``""``
  when it has none), its reasoning blocks joined as ``reasoning_content`` and
  its tool-call blocks as ``tool_calls`` (``{id, type: function, function:
  {name, arguments}}``, the arguments as the raw string the model produced);
- a user message sends its text blocks joined (when there is text or no
  tool result), then one ``{role: tool, tool_call_id, content}`` message per
  tool-result block, ``"(no output)"`` when the result has no text;
- a tool schema becomes ``{type: function, function: {name, description,
  parameters}}``.

Message ids, ``source`` metadata and ``isError`` flags are not sent.  Values
the log wrote in another shape (a string for a block list, a number for a
text) are read as leniently as the adapter's filters would: only text that
would reach the wire is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class WireCall:
    name: str
    arguments: str
    id: str = ""


@dataclass(slots=True)
class WireMessage:
    role: str  # system | user | assistant | tool
    content: str
    reasoning: str = ""
    calls: list[WireCall] = field(default_factory=list)
    tool_call_id: str = ""


@dataclass(slots=True)
class WireTool:
    name: str
    description: str
    parameters: Any  # a JSON value (a schema object on a well-formed header)


def _blocks(content: Any) -> list:
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def _joined(blocks: list, kind: str) -> str:
    return "".join(
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == kind and isinstance(b.get("text"), str)
    )


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def wire_messages(message: Any) -> list[WireMessage]:
    """The wire messages one harness message becomes (a user message with tool results becomes several)."""
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    blocks = _blocks(message.get("content"))
    if role == "system":
        return [WireMessage("system", _joined(blocks, "text"))]
    if role == "assistant":
        calls = [
            WireCall(_string(b.get("name")), _string(b.get("arguments")), _string(b.get("id")))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool-call"
        ]
        return [WireMessage("assistant", _joined(blocks, "text"), _joined(blocks, "reasoning"), calls)]
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool-result"]
    text = _joined(blocks, "text")
    out = [WireMessage("user", text)] if text or not results else []
    for r in results:
        content = _joined(_blocks(r.get("content")), "text") or "(no output)"
        out.append(WireMessage("tool", content, tool_call_id=_string(r.get("toolCallId"))))
    return out


def wire_tools(tools: Any) -> list[WireTool]:
    """The tool schemas as sent; a header whose tools are not a list of objects sends none."""
    if not isinstance(tools, list):
        return []
    return [
        WireTool(_string(t.get("name")), _string(t.get("description")), t.get("parameters"))
        for t in tools
        if isinstance(t, dict)
    ]


def wire_system(request: dict) -> WireMessage | None:
    system = request.get("system")
    return WireMessage("system", system) if isinstance(system, str) else None
