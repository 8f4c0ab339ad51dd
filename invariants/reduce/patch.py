"""The difference between a recorded request and the request the log rebuilds, as a patch that can be re-applied
to the rebuilt request of a smaller log: the capture then differs from the log in exactly the original way.

Messages are patched by content (a run of rebuilt messages, or the message a run is inserted after), not by
index, so the patch survives the removal of unrelated turns; a candidate that loses an anchor loses the patch.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

_ABSENT = {"$absent": True}


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_patch(rebuilt: dict, recorded: dict) -> dict:
    """The patch that turns ``rebuilt`` into ``recorded``."""
    fields = {}
    for key in list(rebuilt) + [k for k in recorded if k not in rebuilt]:
        if key == "messages":
            continue
        if _canon(rebuilt.get(key, _ABSENT)) != _canon(recorded.get(key, _ABSENT)):
            fields[key] = recorded.get(key, _ABSENT)
    got, want = rebuilt.get("messages"), recorded.get("messages")
    a: list = got if isinstance(got, list) else []
    b: list | None = want if isinstance(want, list) else None
    ops = []
    if b is None:
        fields["messages"] = recorded.get("messages", _ABSENT)
    else:
        matcher = difflib.SequenceMatcher(None, [_canon(m) for m in a], [_canon(m) for m in b], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                ops.append({"after": a[i1 - 1] if i1 else None, "delete": a[i1:i2], "insert": b[j1:j2]})
    return {"fields": fields, "messages": ops, "order": list(recorded)}


def apply_patch(patch: dict, rebuilt: dict) -> dict | None:
    """``rebuilt`` with ``patch`` applied, or None when an anchor of the patch is not in it."""
    out = dict(rebuilt)
    for key, value in patch["fields"].items():
        if value == _ABSENT:
            out.pop(key, None)
        else:
            out[key] = value
    if "messages" not in patch["fields"]:
        messages = list(rebuilt.get("messages") or [])
        for op in patch["messages"]:
            canon = [_canon(m) for m in messages]
            delete = [_canon(m) for m in op["delete"]]
            at = _find(canon, delete, None if op["after"] is None else _canon(op["after"]))
            if at is None:
                return None
            messages[at : at + len(delete)] = op["insert"]
        out["messages"] = messages
    order = [k for k in patch["order"] if k in out]
    return {k: out[k] for k in order + [k for k in out if k not in order]}


def _find(canon: list[str], run: list[str], after: str | None) -> int | None:
    starts = range(len(canon) - len(run) + 1)
    if after is None:
        return 0 if canon[: len(run)] == run else None
    for p in starts:
        if p and canon[p - 1] == after and canon[p : p + len(run)] == run:
            return p
    return None
