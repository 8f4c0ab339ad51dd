"""The Prefix tab: the session prefix of every loop instance and its drift.

The prefix (``messagePrefix``) is composed once per loop instance, at its
initial/resume snapshot.  This view lists the instances in order; for each
resume it shows how the prefix moved against the instance before (a diff),
and any change *inside* an instance (a PFX001 instability) with its event.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from inspector.screens.state import SessionState, describe_version
from inspector.widgets.difftext import join_lines, unified, value_as_lines, value_block
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import safe, styled
from invariants.replay.header_fold import ANCHORS, prefix_of

CURRENT_BG = "on #1e2433"
MAX_LINES = 40


def _size(prefix: list) -> str:
    import orjson

    try:
        chars = len(orjson.dumps(prefix))
    except (TypeError, orjson.JSONEncodeError):
        chars = 0
    return f"{len(prefix)} message{'s' if len(prefix) != 1 else ''}, {chars} bytes"


class PrefixView(DocumentView):
    """Blocks keyed ``("instance", i)`` and ``("version", j)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.targets: dict[Any, int | None] = {}
        self._stamp: tuple | None = None

    def show(self, state: SessionState, index: int, cursor_key: Any = None) -> None:
        model = state.model
        instances = model.instances
        st = state.steps[index] if state.steps else None
        current = st.instance if st is not None else None
        stamp = (state.serial, current)
        if stamp == self._stamp:  # the same instance: the view is already right
            if cursor_key is not None:
                self.select_key(cursor_key, top=True)
            return
        self._stamp = stamp
        self.targets = {}
        blocks: list[Block] = []
        title = styled("Session prefix per loop instance", "bold")
        title.append(f" · {len(instances)} instance{'s' if len(instances) != 1 else ''}")
        if current is not None:
            title.append(f" · this step runs in instance {current}", "#bb9af7")
        blocks.append(Block(title, selectable=False))
        if not instances:
            blocks.append(
                Block(
                    Text("No initial/resume request/header snapshot: no loop instance was anchored.", style="italic"),
                    selectable=False,
                )
            )
            self.set_blocks(blocks)
            return
        unstable = {f.seq for f in state.findings if f.rule == "PFX001"}
        first_steps = {s.instance: s for s in reversed(state.steps) if s.instance is not None}
        for inst in instances:
            prefix = prefix_of(inst.header)
            head = styled(f"\ninstance {inst.index}", "bold")
            head.append(f" · {safe(inst.reason)} snapshot at seq {inst.seq}", "#bb9af7")
            fs = first_steps.get(inst.index)
            if fs is not None:
                head.append(f" · first step {safe(fs.turn)}.{safe(fs.step)}", "dim")
            head.append(f" · prefix {_size(prefix)}", "dim")
            if inst.index == current:
                head.append("  ◀ this step", "bold #7aa2f7")
            body = Text()
            if inst.index == 0:
                body = value_block(prefix, "  ", MAX_LINES)
            else:
                prev = instances[inst.index - 1]
                drift = unified(value_as_lines(prefix_of(prev.header)), value_as_lines(prefix))
                if "messagePrefix" in inst.drift and drift:
                    head.append("\n  prefix drifted at this resume (PFX002):", "bold #e0af68")
                    body = join_lines(drift, "  ")
                else:
                    head.append("\n  prefix unchanged across this resume", "green")
                others = [d for d in inst.drift if d != "messagePrefix"]
                if others:
                    head.append(
                        "\n  other fields changed at this resume: " + ", ".join(safe(o) for o in others), "#e0af68"
                    )
            text = Text.assemble(head, "\n", body) if body else head
            key = ("instance", inst.index)
            blocks.append(Block(text, key=key, style=CURRENT_BG if inst.index == current else ""))
            self.targets[key] = inst.seq
            for j, v in enumerate(model.versions):
                if v.instance == inst.index and v.kind not in ANCHORS and "messagePrefix" in v.changed:
                    if v.seq in unstable:
                        t = Text(
                            f"  ⚠ prefix changed inside instance {inst.index} at seq {v.seq} by {describe_version(v)}, "
                            "after the instance sent a request (PFX001)",
                            style="bold #f7768e",
                        )
                    else:
                        t = Text(
                            f"  prefix set inside instance {inst.index} at seq {v.seq} by {describe_version(v)}, "
                            "before the instance's first request",
                            style="dim",
                        )
                    blocks.append(Block(t, key=("version", j)))
                    self.targets[("version", j)] = v.seq
        self.set_blocks(
            blocks, cursor_key if cursor_key is not None else (("instance", current) if current is not None else None)
        )

    def target_of(self, key: Any) -> int | None:
        return self.targets.get(key)
