"""The Header tab: the request header in force at the step, and how it got there.

It names the version in force (a snapshot with its reason, or a delta and
its arms), lists every header event between the previous step's request and
this one, and shows each field with the event that last changed it; a field
that changed since the previous step is shown as a diff, and one the step's
recorded request contradicts is marked ``≠`` with the recorded value.  ``w``
on a field jumps to the event that last changed it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from inspector.screens.state import SessionState, describe_version
from inspector.widgets.difftext import clip, join_lines, unified, value_as_lines, value_block
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import count, json_lines, safe, styled, value_text
from invariants.analysis.blame import header_differences
from invariants.replay.header_codec import changed_fields

MAX_FIELD_LINES = 60
FIELD_ORDER = ("config", "system", "tools", "messagePrefix", "messageSuffix", "adapterDefaults")


class HeaderView(DocumentView):
    """Blocks keyed ``("field", name)`` and ``("version", j)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.version: int | None = None
        self.targets: dict[Any, int | None] = {}  # block key -> event seq
        self._stamp: tuple | None = None

    def show(self, state: SessionState, index: int, cursor_key: Any = None) -> None:
        st = state.steps[index]
        versions = state.model.versions
        vi = state.step_version(index)
        prev_vi = state.step_version(index - 1) if index > 0 else None
        diverging = state.divergence(index)
        stamp = (state.serial, vi, prev_vi, st.header_event, st.turn, st.step, index if diverging else None)
        if stamp == self._stamp:
            if cursor_key is not None:
                self.select_key(cursor_key, top=True)
            return
        self._stamp = stamp
        self.version = vi
        self.targets = {}
        blocks: list[Block] = []
        if vi is None:
            blocks.append(
                Block(
                    Text(
                        f"No request header was in force at turn {safe(st.turn)} step {safe(st.step)}.",
                        style="bold red",
                    ),
                    selectable=False,
                )
            )
            self.set_blocks(blocks)
            return
        v = versions[vi]
        title = styled("Header in force", "bold")
        title.append(f" at turn {safe(st.turn)} step {safe(st.step)}: version {vi} of {len(versions)} · ")
        title.append(describe_version(v), "bold #bb9af7")
        title.append(f" at seq {v.seq} · loop instance {v.instance}")
        blocks.append(Block(title, selectable=False))

        prev_header = versions[prev_vi].header if prev_vi is not None else None
        start = (prev_vi + 1) if prev_vi is not None else 0
        if prev_vi is not None and start > vi:
            start = vi + 1
        if start <= vi:
            what = "since the previous step" if index > 0 else "before this first step"
            blocks.append(Block(Text(f"\nheader events {what}:", style="bold"), selectable=False))
            for j in range(start, vi + 1):
                hv = versions[j]
                t = styled(f"  seq {hv.seq}  ", "")
                t.append(describe_version(hv), "bold #bb9af7")
                t.append(
                    "  changed: " + (", ".join(safe(c) for c in hv.changed) or "nothing"),
                    "#e0af68" if hv.changed else "dim",
                )
                blocks.append(Block(t, key=("version", j)))
                self.targets[("version", j)] = hv.seq
        else:
            blocks.append(
                Block(Text(f"\nunchanged since the previous step (version {prev_vi})", style="dim"), selectable=False)
            )
        if st.header_event is not None and st.header_event != vi:
            hv = versions[st.header_event]
            t = Text(
                f"this step also logged version {st.header_event} ({describe_version(hv)} at seq {hv.seq}), "
                "after its request was dispatched: it governs the next request",
                style="italic #e0af68",
            )
            blocks.append(Block(t, key=("version", st.header_event)))
            self.targets[("version", st.header_event)] = hv.seq

        header = v.header
        now_changed = set(changed_fields(prev_header, header)) if prev_header is not None else set()
        names = [n for n in FIELD_ORDER if n in header] + [n for n in header if n not in FIELD_ORDER]
        if prev_header is not None:
            names += [n for n in prev_header if n not in header]
        contradicted: dict[str, list[tuple[str, Any]]] = {}
        if diverging is not None and diverging[1].expected is not None:
            k, sd = diverging
            rec = sd.recorded
            contradicted = header_differences(diverging[1].expected, rec.request)
            if contradicted:
                warn = styled(
                    f"\n≠ {count(len(contradicted), 'field')} differ{'s' if len(contradicted) == 1 else ''} "
                    f"from recorded request {k + 1}",
                    "bold #f7768e",
                )
                warn.append(f" ({safe(Path(rec.file).name)}:{rec.line})", "")
                blocks.append(Block(warn, selectable=False))
        blocks.append(Block(Text("\nfields:", style="bold"), selectable=False))
        for name in names:
            value = header.get(name)
            last = state.last_change(name, vi)
            head = styled("● ", "#e0af68" if name in now_changed else "dim")
            head.append(safe(name), "bold")
            if name not in header:
                head.append("  removed since the previous step", "bold #f7768e")
            elif name in now_changed:
                head.append("  changed since the previous step", "bold #e0af68")
            if last is not None:
                lv = versions[last]
                head.append(f"  · last changed at seq {lv.seq} by {describe_version(lv)}", "dim")
                self.targets[("field", name)] = lv.seq
            recorded = contradicted.get(name)
            if recorded:
                head.append_text(_recorded_text(name, recorded))
            body = self._body(
                name, prev_header.get(name) if prev_header else None, value, name in now_changed or name not in header
            )
            blocks.append(
                Block(
                    Text.assemble(head, "\n", body),
                    key=("field", name),
                    gutter=Text("≠ ", style="bold #f7768e") if recorded else None,
                )
            )
        self.set_blocks(blocks, cursor_key)

    def _body(self, name: str, old: Any, new: Any, changed: bool) -> Text:
        if changed and old is not None:
            lines = unified(value_as_lines(old), value_as_lines(new) if new is not None else [])
            return join_lines(lines, "  ")
        if name == "system" and isinstance(new, str):
            prompt = [clip(x) for x in new.split("\n")]
            kept = prompt[:MAX_FIELD_LINES]
            out = join_lines([Text(x, style="#9ece6a") for x in kept], "  ")
            if len(prompt) > len(kept):
                out.append(f"\n  … {len(prompt) - len(kept)} more lines", "italic dim")
            return out
        if name == "tools" and isinstance(new, list):
            out = Text()
            for i, tool in enumerate(new):
                if i:
                    out.append("\n")
                if isinstance(tool, dict):
                    out.append("  " + safe(tool.get("name")), "bold #7dcfff")
                    desc = tool.get("description")
                    if isinstance(desc, str):
                        out.append("  " + safe(desc.split("\n", 1)[0][:100]), "dim")
                    params = tool.get("parameters")
                    if isinstance(params, dict) and isinstance(params.get("properties"), dict):
                        out.append("  (" + ", ".join(safe(k) for k in params["properties"]) + ")", "")
                else:
                    out.append("  ")
                    out.append_text(value_text(tool, 200))
            return out
        if name in ("messagePrefix", "messageSuffix"):
            return value_block(new, "  ", MAX_FIELD_LINES)
        rows = json_lines(new)
        shown = rows[:MAX_FIELD_LINES]
        out = join_lines([t for _, t in shown], "  ")
        if len(rows) > len(shown):
            out.append(f"\n  … {len(rows) - len(shown)} more lines", "italic dim")
        return out

    def field_of(self, key: Any) -> str | None:
        """The header field under ``key`` (for ``w``)."""
        if isinstance(key, tuple) and key and key[0] == "field":
            return key[1]
        return None

    def target_of(self, key: Any) -> int | None:
        return self.targets.get(key)


def _recorded_text(name: str, recorded: list[tuple[str, Any]]) -> Text:
    """What the recorded request carries instead, under a field that differs: ``≠ recorded temperature: 0.7``."""
    out = Text()
    for key, value in recorded:
        out.append("\n  ≠ recorded ", "bold #f7768e")
        if name != key:
            out.append(f"{safe(key)}: ", "bold")
        if name in ("messagePrefix", "messageSuffix") and isinstance(value, list):
            out.append(f"{count(len(value), 'message')} at its place: ", "")
            out.append_text(value_text(value, 160))
        else:
            out.append_text(value_text(value, 200))
    return out
