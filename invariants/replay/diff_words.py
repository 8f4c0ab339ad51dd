"""A request difference in words: which part, what became of it, and the event that made it.

:mod:`invariants.replay.compare` finds the first difference of the message
list and of each header field; this module says it the way a person reading
the two requests would ("prefix message 1 of 1 (messages[0]) missing from the
recorded request (set by request/header-delta seq 4, line 6)", "prefix placed
after the derived history"), with the edit from
:func:`~invariants.replay.diff_classify.classify_list` and the producing event
from :mod:`invariants.replay.provenance`.  It falls back to the path diff
(with both strings windowed around their first difference) for a change in
place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from invariants.model.jsonvalue import get_path, shorten
from invariants.replay.model import RebuiltRequest
from invariants.replay.provenance import Source, field_source, message_source

if TYPE_CHECKING:
    from invariants.replay.diff_classify import ListEdit

REGION_NAMES = {"prefix": "prefix", "derived": "derived history", "suffix": "suffix"}
SUMMARY_WIDTH = 80  # characters of each side in a message
DETAIL_WIDTH = 400  # ...and in the finding's detail


@dataclass(slots=True)
class Described:
    """A difference in words: the message, the path it is about, the producing event and the detail."""

    message: str
    path: str
    source: Source | None
    detail: dict[str, Any] = field(default_factory=dict)


def _span(root: str, i: int, n: int) -> str:
    return f"{root}[{i}]" if n == 1 else f"{root}[{i}..{i + n - 1}]"


def with_source(source: Source | None) -> str:
    """`` (set by ...)`` naming the producing event, or nothing."""
    return f" ({source.text()})" if source is not None else ""


def message_label(exp: RebuiltRequest, i: int) -> str:
    """``prefix message 1 of 2``, ``derived message 3 of 9``, ``suffix message 1 of 1``, ``message 12``."""
    region = exp.region(i)
    if region == "prefix":
        return f"prefix message {i + 1} of {exp.prefix_len}"
    if region == "derived":
        return f"derived message {i - exp.prefix_len + 1} of {exp.derived_len}"
    if region == "suffix":
        return f"suffix message {i - exp.prefix_len - exp.derived_len + 1} of {exp.suffix_len}"
    return f"message {i + 1}"


def _run_label(exp: RebuiltRequest, i: int, n: int, article: str = "") -> str:
    """A run of rebuilt messages: a whole region by name, else its first and last message."""
    region = exp.region(i)
    bounds = {
        "prefix": (0, exp.prefix_len),
        "derived": (exp.prefix_len, exp.derived_len),
        "suffix": (exp.prefix_len + exp.derived_len, exp.suffix_len),
    }
    if region in bounds and bounds[region] == (i, n):
        return article + REGION_NAMES[region]
    if n == 1:
        return message_label(exp, i)
    return f"{message_label(exp, i)} to {message_label(exp, i + n - 1)}"


def describe_messages(exp: RebuiltRequest, expected: list, recorded: list, index: int, path: str) -> Described:
    """The first difference of two message lists (equal before ``index``; ``path`` is its path diff)."""
    from invariants.replay.diff_classify import classify_list  # deferred: a clean check has no difference

    edit = classify_list(expected, recorded, index)
    detail: dict[str, Any] = {"edit": _edit_json(edit)}
    if edit.kind == "missing":
        src = message_source(exp, edit.exp_index)
        what = _run_label(exp, edit.exp_index, edit.count) if edit.count > 1 else message_label(exp, edit.exp_index)
        msg = f"{what} ({_span('messages', edit.exp_index, edit.count)}) missing from the recorded request"
        msg += with_source(src)
        return Described(msg, f"messages[{edit.exp_index}]", src, detail)
    if edit.kind == "extra":
        # Nothing in the log made an extra message; the event named is that of the message it pushed aside.
        n = edit.count
        src = message_source(exp, index) if index < len(expected) else None
        where = (
            f"before {message_label(exp, index)}{with_source(src)}"
            if index < len(expected)
            else "after the end of the reconstruction"
        )
        msg = (
            f"the recorded request has {n} message{'s' if n != 1 else ''} the log does not account for at "
            f"{_span('messages', index, n)}, {where}: {shorten(recorded[index], SUMMARY_WIDTH)}"
        )
        return Described(msg, f"messages[{index}]", src, detail)
    if edit.kind == "moved":
        src = message_source(exp, edit.exp_index)
        block = _run_label(exp, edit.exp_index, edit.count)
        if edit.past > 0:
            rel = "after " + _run_label(exp, edit.exp_index + edit.count, edit.past, "the ")
        else:
            rel = "before " + _run_label(exp, edit.rec_index, -edit.past, "the ")
        msg = (
            f"{block} placed {rel} in the recorded request (expected at "
            f"{_span('messages', edit.exp_index, edit.count)}, recorded at "
            f"{_span('messages', edit.rec_index, edit.count)}{'; ' + src.text() if src is not None else ''})"
        )
        return Described(msg, f"messages[{edit.exp_index}]", src, detail)
    src = message_source(exp, index)
    e, r = _previews(expected, recorded, path, "messages", SUMMARY_WIDTH)
    what = message_label(exp, index) if index < len(expected) else f"message {index + 1}"
    msg = f"{what} changed at {path}{with_source(src)}: expected {e}, recorded {r}"
    return Described(msg, path, src, detail)


def describe_field(exp: RebuiltRequest, name: str, expected: Any, recorded: Any, path: str) -> Described:
    """The first difference of header field ``name`` (absent sides already made empty where upstream does)."""
    src = field_source(exp, name)
    index = _list_index(path, name)
    if name == "tools" and isinstance(expected, list) and isinstance(recorded, list) and index is not None:
        return _describe_tools(src, expected, recorded, index, path)
    e, r = _previews(expected, recorded, path, name, SUMMARY_WIDTH)
    at = f" at {path}" if path != name else ""
    return Described(
        f"{name} diverges from the folded header{at}{with_source(src)}: header {e}, recorded {r}", path, src
    )


def _describe_tools(src: Source | None, expected: list, recorded: list, index: int, path: str) -> Described:
    from invariants.replay.diff_classify import classify_list  # deferred: a clean check has no difference

    edit = classify_list(expected, recorded, index)
    detail: dict[str, Any] = {"edit": _edit_json(edit)}
    if edit.kind == "missing":
        msg = f"{_tools(expected, edit.exp_index, edit.count)} missing from the recorded request{with_source(src)}"
    elif edit.kind == "extra":
        extra = _tools(recorded, edit.rec_index, edit.count)
        msg = f"the recorded request has {extra}, which the header does not have{with_source(src)}"
    elif edit.kind == "moved":
        msg = (
            f"tools in another order: {_tools(expected, edit.exp_index, edit.count)} recorded at "
            f"{_span('tools', edit.rec_index, edit.count)}{with_source(src)}"
        )
    else:
        e, r = _previews(expected, recorded, path, "tools", SUMMARY_WIDTH)
        msg = f"{_tool_name(expected[index])} changed at {path}{with_source(src)}: header {e}, recorded {r}"
        return Described(msg, path, src, detail)
    at = edit.exp_index if edit.kind != "extra" else edit.rec_index
    return Described(msg, f"tools[{at}]", src, detail)


def _tools(tools: list, i: int, n: int) -> str:
    names = ", ".join(_tool_name(t) for t in tools[i : i + min(n, 3)]) + (f" and {n - 3} more" if n > 3 else "")
    return f"{names} ({_span('tools', i, n)})"


def _tool_name(tool: Any) -> str:
    name = tool.get("name") if isinstance(tool, dict) else None
    return f"tool {shorten(name, 40)}" if isinstance(name, str) else f"tool {shorten(tool, 40)}"


def detail_previews(expected: Any, recorded: Any, path: str, root: str) -> tuple[str, str]:
    """The two sides at ``path`` as the finding's detail shows them (windowed like the message)."""
    return _previews(expected, recorded, path, root, DETAIL_WIDTH)


def _previews(expected: Any, recorded: Any, path: str, root: str, width: int) -> tuple[str, str]:
    from invariants.replay.diff_classify import window_pair  # deferred: a clean check has no difference

    return window_pair(get_path({root: expected}, path), get_path({root: recorded}, path), width)


def _list_index(path: str, root: str) -> int | None:
    head = f"{root}["
    if not path.startswith(head):
        return None
    digits = path[len(head) : path.find("]")]
    return int(digits) if digits.isdigit() else None


def _edit_json(edit: ListEdit) -> dict[str, Any]:
    return {"kind": edit.kind, "expected_index": edit.exp_index, "recorded_index": edit.rec_index, "count": edit.count}
