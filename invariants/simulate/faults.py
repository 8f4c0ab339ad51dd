"""Faults put into a recorded log or capture afterwards: an edited request, a corrupt delta, a torn last line."""

from __future__ import annotations

from typing import Any, Callable

import orjson

from invariants.simulate.world import _dump


def _edit_line(lines: list[bytes], index: int, edit: Callable[[dict], Any]) -> Any:
    obj = orjson.loads(lines[index])
    result = edit(obj)
    lines[index] = _dump(obj)
    return result


def diverge_message_text(capture_lines: list[bytes], index: int, message: int, suffix: str = " (edited)") -> str:
    """Change the first text block of ``messages[message]`` in one capture line; return its path."""

    def edit(obj: dict) -> str:
        content = obj["request"]["messages"][message]["content"]
        block = next(i for i, b in enumerate(content) if b.get("type") == "text")
        content[block]["text"] += suffix
        return f"messages[{message}].content[{block}].text"

    return _edit_line(capture_lines, index, edit)


def diverge_request_field(capture_lines: list[bytes], index: int, key: str, value: Any) -> str:
    """Set a header-derived request field (model, temperature, ...) in one capture line."""

    def edit(obj: dict) -> None:
        obj["request"][key] = value

    _edit_line(capture_lines, index, edit)
    return f"request.{key}"


def reorder_message_keys(capture_lines: list[bytes], index: int, message: int) -> str:
    """Reverse the key order of one message object: same JSON value, different bytes."""

    def edit(obj: dict) -> None:
        messages = obj["request"]["messages"]
        messages[message] = dict(reversed(list(messages[message].items())))

    _edit_line(capture_lines, index, edit)
    return f"messages[{message}]"


def corrupt_delta_remove_unknown_tool(log_lines: list[bytes], seq: int, tool: str) -> None:
    """Make the tools arm of the delta at ``seq`` remove a tool that is not in force."""

    def edit(obj: dict) -> None:
        assert obj["type"] == "request/header-delta", obj["type"]
        arm = obj["data"].setdefault("tools", {"added": [], "removed": [], "changed": []})
        arm["removed"].append(tool)

    _edit_line(log_lines, seq + 1, edit)


def tear_last_line(data: bytes) -> bytes:
    """Cut the file in the middle of its last line, as a crash during that write would."""
    body = data[:-1] if data.endswith(b"\n") else data
    start = body.rfind(b"\n") + 1
    return body[: start + (len(body) - start) // 2]
