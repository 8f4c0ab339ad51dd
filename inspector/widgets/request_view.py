"""The Request tab: the request the log says the loop sent, message by message.

Each message is marked with its region (session prefix, history derived from
the log, suffix) by a coloured bar, and says which event it came from: the
surface event for derived history, the header event that last set the prefix
or suffix otherwise.  ``e`` on a message jumps to that event.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from inspector.screens.state import SessionState, describe_version
from inspector.widgets.difftext import message_body
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import literal, safe, styled, value_text

REGIONS = {
    "prefix": ("▌", "#bb9af7", "prefix"),
    "derived": ("▌", "#7aa2f7", "derived history"),
    "suffix": ("▌", "#e0af68", "suffix"),
    "beyond": ("▌", "red", "beyond the log"),
}


class RequestView(DocumentView):
    """Blocks keyed ``("message", i)``; the screen asks :meth:`origin_of` for ``e``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.origins: dict[int, int | None] = {}

    def show(self, state: SessionState, index: int, cursor_key: Any = None) -> None:
        st = state.steps[index]
        exp = state.rebuilt(index)
        blocks: list[Block] = []
        title = styled("Rebuilt request", "bold")
        title.append(f" · turn {safe(st.turn)} step {safe(st.step)} · step/start at seq {st.seq}", "")
        blocks.append(Block(title, selectable=False))
        self.origins = {}
        if exp is None:
            blocks.append(
                Block(
                    Text(
                        "No request header was in force when this step dispatched: "
                        "the log cannot explain its model, system or tools (REQ001).",
                        style="bold red",
                    ),
                    selectable=False,
                )
            )
            self.set_blocks(blocks)
            return
        v = exp.header_version
        vi = state.version_index(v)
        if v is not None:
            blocks.append(
                Block(
                    Text(
                        f"header version {vi} · {describe_version(v)} at seq {v.seq} · loop instance {v.instance}",
                        style="dim",
                    ),
                    selectable=False,
                )
            )
        msgs = exp.request.get("messages", [])
        counts = styled(f"{len(msgs)} messages: ", "dim")
        for region, n in (("prefix", exp.prefix_len), ("derived", exp.derived_len), ("suffix", exp.suffix_len)):
            bar, color, label = REGIONS[region]
            counts.append(bar, color)
            counts.append(f"{n} {label}  ", "dim")
        blocks.append(Block(counts, selectable=False))
        fields = Text()
        for key, value in exp.request.items():
            if key == "messages":
                continue
            if fields:
                fields.append("\n")
            fields.append(f"{key}: ", "bold")
            if key == "system" and isinstance(value, str):
                first = value.split("\n", 1)[0]
                fields.append(f"{len(value)} chars · ", "dim")
                fields.append(safe(first[:80]) + ("…" if len(first) > 80 or "\n" in value else ""), "#9ece6a")
            elif key == "tools" and isinstance(value, list):
                names = [safe(t.get("name")) if isinstance(t, dict) else literal(t, 40) for t in value]
                fields.append(", ".join(names) + f"  ({len(value)})")
            else:
                fields.append_text(value_text(value, 200))
        if fields:
            blocks.append(Block(fields, key=("fields", None), selectable=False))
        for i, msg in enumerate(msgs):
            region = exp.region(i)
            bar, color, label = REGIONS.get(region, REGIONS["beyond"])
            origin = state.origin_of_message(exp, i)
            self.origins[i] = origin
            head = styled(f"[{i}] ", "bold")
            head.append(label, color)
            role = msg.get("role") if isinstance(msg, dict) else None
            head.append(f" · {safe(role) if role is not None else '?'}", "bold")
            if origin is not None:
                head.append(f" · from event seq {origin}", "dim")
            body = message_body(msg)
            text = Text.assemble(head, "\n", body)
            blocks.append(Block(text, key=("message", i), gutter=Text(bar + " ", style=color)))
        self.set_blocks(blocks, cursor_key)

    def origin_of(self, key: Any) -> int | None:
        if isinstance(key, tuple) and key and key[0] == "message":
            return self.origins.get(key[1])
        return None
