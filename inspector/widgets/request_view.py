"""The Request tab: the request the log says the loop sent, as a blame view.

Every part of it (model, system, each tool, each message, each call setting)
is one line tagged with the event that produced it (``invariants.analysis.blame``):
the header snapshot or delta that last set a header part, the surface event
of a derived message.  Messages carry their region (session prefix, history
derived from the log, suffix) as a coloured bar.  On a step whose recorded
request differs, the parts a difference falls in are marked ``≠``.  Enter or
``e`` on a line jumps to its event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from inspector.screens.edits import edit_of
from inspector.screens.state import SessionState, describe_version
from inspector.widgets.difftext import message_body
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import count, literal, safe, styled, value_text
from invariants.analysis.blame import BlameLine, marked
from invariants.model.registry import RULES

REGIONS = {
    "prefix": ("▌", "#bb9af7", "prefix"),
    "derived": ("▌", "#7aa2f7", "derived history"),
    "suffix": ("▌", "#e0af68", "suffix"),
    "beyond": ("▌", "red", "beyond the log"),
}
DIFFERS_BG = "on #3b1d24"  # a part that differs from the recorded request


class RequestView(DocumentView):
    """Blocks keyed ``("part", path)`` and ``("message", i)``; the screen asks :meth:`origin_of` for ``e``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.origins: dict[tuple, int | None] = {}  # block key -> the event that produced that part
        self.parts: dict[tuple, BlameLine] = {}  # block key -> its blame line

    def show(self, state: SessionState, index: int, cursor_key: Any = None) -> None:
        st = state.steps[index]
        exp = state.rebuilt(index)
        blocks: list[Block] = []
        title = styled("Rebuilt request", "bold")
        title.append(f" · turn {safe(st.turn)} step {safe(st.step)} · step/start at seq {st.seq}", "")
        blocks.append(Block(title, selectable=False))
        self.origins = {}
        self.parts = {}
        if exp is None:
            # cite only what the check reported at this step (REQ001 may be off, or the step did not stream)
            here = state.step_findings.get(index, [])
            rules = sorted(
                {f.rule for f in (state.findings[i] for i in here) if _category(f.rule) == "unexplained-request"}
            )
            blocks.append(
                Block(
                    Text(
                        "No request header was in force when this step dispatched: "
                        "the log cannot explain its model, system or tools"
                        + (f" ({', '.join(safe(r) for r in rules)})." if rules else "."),
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
        counts = styled(f"{count(len(msgs), 'message')}: ", "dim")
        for region, n in (("prefix", exp.prefix_len), ("derived", exp.derived_len), ("suffix", exp.suffix_len)):
            bar, color, label = REGIONS[region]
            counts.append(bar, color)
            counts.append(f"{n} {label}  ", "dim")
        blocks.append(Block(counts, selectable=False))
        diverging = state.divergence(index)
        marks: set[str] = set()
        if diverging is not None:
            k, sd = diverging
            edits = [edit_of(d) for d in sd.differences]
            # the parts of this request a difference is about: an extra recorded part marks none of them
            marks = marked(state.blame(index), [p for e in edits for p in e.expected])
            rec = sd.recorded
            n = len(marks)
            which = f"recorded request {k + 1} of {len(state.diffs(index))} ({safe(Path(rec.file).name)}:{rec.line})"
            if n:
                warn = styled(f"≠ {n} part{' differs' if n == 1 else 's differ'}", "bold #f7768e")
                warn.append(f" from {which} · marked ≠ below", "")
                blocks.append(Block(warn, selectable=False))
            for e in edits:
                if e.kind == "extra":
                    extra = styled(f"≠ {which}: {safe(e.words())}", "bold #f7768e")
                    extra.append(" · no part below made it", "")
                    blocks.append(Block(extra, selectable=False))
        blocks.append(
            Block(
                Text("each part names the event that produced it · Enter or e jumps there", style="dim"),
                selectable=False,
            )
        )
        msgs = exp.request.get("messages", [])
        for bl in state.blame(index):
            key = _key(bl.path)
            self.origins[key] = bl.seq
            self.parts[key] = bl
            differs = bl.path in marks
            if key[0] == "message":
                i = key[1]
                msg = msgs[i]
                bar, color, label = REGIONS.get(bl.region, REGIONS["beyond"])
                head = styled(f"[{i}] ", "bold")
                head.append(label, color)
                role = msg.get("role") if isinstance(msg, dict) else None
                head.append(f" · {safe(role) if role is not None else '?'}", "bold")
                head.append_text(_tag(bl))
                if differs:
                    head.append("  ≠ differs from the recorded request", "bold #f7768e")
                text = Text.assemble(head, "\n", message_body(msg))
                gutter = Text(("≠" if differs else bar) + " ", style="bold #f7768e" if differs else color)
            else:
                text = _part_text(bl.path, exp.request.get(_top(bl.path)), differs)
                text.append_text(_tag(bl))
                gutter = Text("≠ " if differs else "  ", style="bold #f7768e")
            blocks.append(Block(text, key=key, gutter=gutter, style=DIFFERS_BG if differs else ""))
        self.set_blocks(blocks, cursor_key)

    def part_of(self, key: Any) -> BlameLine | None:
        """The blame line under ``key`` (for ``w``)."""
        return self.parts.get(key) if isinstance(key, tuple) else None

    def origin_of(self, key: Any) -> int | None:
        """The event that produced the part under ``key`` (a message or a header part)."""
        return self.origins.get(key) if isinstance(key, tuple) else None


def _key(path: str) -> tuple:
    """Block key of a request part: ``("message", i)`` for a message, ``("part", path)`` otherwise."""
    if path.startswith("messages["):
        return ("message", int(path[len("messages[") : -1]))
    return ("part", path)


def _top(path: str) -> str:
    return path.split("[", 1)[0]


def _tag(bl: BlameLine) -> Text:
    """Where a part came from: ``← request/header-delta seq 4 · line 6``."""
    if bl.seq is None:
        return Text(f"  ← {safe(bl.event)}", style="italic #e0af68")
    where = f" · line {bl.line}" if bl.line is not None else ""
    return Text(f"  ← {safe(bl.event)} seq {bl.seq}{where}", style="#7dcfff")


def _part_text(path: str, value: Any, differs: bool) -> Text:
    """One header part of the request on one line: the key, then its value in short."""
    out = styled(f"{safe(path)}: ", "bold #f7768e" if differs else "bold")
    if path == "system" and isinstance(value, str):
        first = value.split("\n", 1)[0]
        out.append(f"{len(value)} chars · ", "dim")
        out.append(safe(first[:80]) + ("…" if len(first) > 80 or "\n" in value else ""), "#9ece6a")
    elif path.startswith("tools["):
        tools = value if isinstance(value, list) else []
        i = int(path[len("tools[") : -1])
        tool = tools[i] if i < len(tools) else None
        name = tool.get("name") if isinstance(tool, dict) else None
        out.append(safe(name) if isinstance(name, str) else literal(tool, 40), "#7dcfff")
        desc = tool.get("description") if isinstance(tool, dict) else None
        if isinstance(desc, str):
            out.append("  " + safe(desc.split("\n", 1)[0][:60]), "dim")
    else:
        out.append_text(value_text(value, 200))
    return out


def _category(code: str) -> str | None:
    """The registry's category of a rule code (None for a code the registry does not know)."""
    rule = RULES.get(code)
    return rule.category if rule is not None else None
