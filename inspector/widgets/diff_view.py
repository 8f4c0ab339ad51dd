"""The Diff tab: expected (rebuilt from the log) against recorded (from the capture).

At the top, in words: the first differing JSON path, the expected and the
recorded value there, the region and the event the message came from; then
every difference the comparison found.  Below, both requests side by side as
pretty JSON aligned line by line, identical runs folded, the first
difference's line marked.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rich.text import Text

from inspector.screens.edits import Edit, edit_of
from inspector.screens.state import STATUS_LABEL, SessionState
from inspector.widgets.difftext import ADDED_BG, EXPECTED_MARK, RECORDED_MARK, REMOVED_BG, pieces_text
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.jsontext import NUMBER, STRING, best_line, count, json_lines, safe, styled
from invariants.analysis.verdicts import Verdicts, verdicts
from invariants.model.jsonvalue import MISSING, get_path
from invariants.model.textdiff import CUT, TextDiff, diff_text, diff_values

MARK_BG = "on #6b2a12"
ONE_SHOT_LINES = 30  # lines of a one-shot request shown
VERDICT_CHARS = 100  # of the harness's verdict message
CONTEXT = 3
REGION_WORDS = {
    "prefix": "the session prefix",
    "derived": "the derived history",
    "suffix": "the message suffix",
    "beyond": "messages the log does not have",
}


def align_keys(value: Any, like: Any) -> Any:
    """``value`` with its keys in the order ``like`` has them (extra keys last): a line diff shows content only."""
    if isinstance(value, dict) and isinstance(like, dict):
        keys = [k for k in like if k in value] + [k for k in value if k not in like]
        return {k: align_keys(value[k], like.get(k)) for k in keys}
    if isinstance(value, list) and isinstance(like, list):
        return [align_keys(v, like[i] if i < len(like) else None) for i, v in enumerate(value)]
    return value


def _scalar(value: Any) -> bool:
    return value is not MISSING and not isinstance(value, (dict, list))


def _inline(path: str, expected: Any, recorded: Any, both: TextDiff) -> tuple[dict[str, Text], dict[str, Text]]:
    """The first differing scalar drawn as a windowed character diff on both sides of the side-by-side."""
    if not path or not (_scalar(expected) and _scalar(recorded)):
        return {}, {}

    def style(value: Any) -> str:
        return STRING if isinstance(value, str) else NUMBER

    return (
        {path: pieces_text(both.expected, EXPECTED_MARK, style(expected))},
        {path: pieces_text(both.recorded, RECORDED_MARK, style(recorded))},
    )


def _values_diff(detail: dict, expected: Any, recorded: Any) -> TextDiff:
    """Both values at the difference's path, windowed on it (the finding's previews when neither side has the path)."""
    if expected is MISSING and recorded is MISSING:
        return diff_text(str(detail.get("expected", "")), str(detail.get("recorded", "")))
    return diff_values(expected, recorded)


def _sides(edit: Edit, expected: dict, recorded: dict) -> tuple[Any, Any]:
    """The two values the summary compares: the parts the edit is about (absent on the side that lacks them),
    not whatever stands at the same position (an extra message pushes the rest aside)."""
    e_path = edit.expected[0] if edit.expected else None
    r_path = edit.recorded[0] if edit.recorded else None
    if edit.kind == "changed":
        e_path = r_path = edit.path
    return (
        get_path(expected, e_path) if e_path else MISSING,
        get_path(recorded, r_path) if r_path else MISSING,
    )


def verdict_line(v: Verdicts) -> Text | None:
    """Our verdict beside the harness's own (``verdict``, ``shadowVerdict``), marked when they disagree."""
    if v.harness is None and v.shadow is None:
        return None
    out = styled("  verdicts  ", "bold")
    ours = "not ours to judge (one-shot)" if v.ours == "one-shot" else v.ours
    out.append(f"ours: {ours}", "green" if v.ours == "ok" else "dim" if v.ours == "one-shot" else "bold red")
    for name, value in (("harness", v.harness), ("shadow", v.shadow)):
        if value is not None:
            out.append("  │  ", "dim")
            out.append(f"{name}: ", "")
            shown = safe(value if len(value) <= VERDICT_CHARS else value[: VERDICT_CHARS - 1] + "…")
            out.append(shown, "green" if value == "ok" else "dim" if value == "unchecked" else "red")
    if v.disagree:
        out.append("  ≠ we and the harness disagree", "bold #f7768e")
    return out


def one_shot_blocks(rec: Any) -> list[Block]:
    """A one-shot request (``loopBuilt: false``) as recorded: the log does not promise to explain it."""
    note = Text("  a one-shot request (loopBuilt: false): shown, not checked", style="italic")
    lines = json_lines(rec.request)
    shown = lines[:ONE_SHOT_LINES]
    body = Text("\n").join(Text.assemble("  ", t) for _, t in shown)
    if len(lines) > len(shown):
        body.append(f"\n  … {len(lines) - len(shown)} more lines (x exports the step's rebuilt request)", "dim")
    return [Block(note, selectable=False), Block(body, selectable=False)]


class DiffView(DocumentView):
    """Blocks keyed ``("diff", request, n)`` (a difference) and ``("line", request, row)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sources: dict[Any, int | None] = {}  # block key -> event seq it points at
        self.edits: dict[Any, Edit] = {}  # block key of a difference -> its classification
        self.first_path: str | None = None

    def show(self, state: SessionState, index: int, cursor_key: Any = None) -> None:
        st = state.steps[index]
        blocks: list[Block] = []
        self.sources = {}
        self.edits = {}
        self.first_path = None
        title = styled("Expected vs recorded", "bold")
        title.append(f" · turn {safe(st.turn)} step {safe(st.step)} · {STATUS_LABEL.get(st.status, st.status)}", "")
        blocks.append(Block(title, selectable=False))
        diffs = state.diffs(index)
        if not diffs:
            blocks.append(
                Block(
                    Text(
                        "No recorded request is anchored at this step, so there is nothing to compare. "
                        "Give the capture with --captures FILE, or see the rebuilt request in the Request tab.",
                        style="italic",
                    ),
                    selectable=False,
                )
            )
            self.set_blocks(blocks, cursor_key)
            return
        first_key = None
        for r, sd in enumerate(diffs):
            rec = sd.recorded
            blocks.append(Block(Text(""), selectable=False))
            head = styled(f"recorded request {r + 1} of {len(diffs)}", "bold")
            head.append(f" · capture {safe(Path(rec.file).name)}:{rec.line}", "dim")
            if rec.log_length is not None:
                head.append(f" · logLength {rec.log_length}", "dim")
            status = "one-shot: shown, not checked" if sd.check.status == "one-shot" else sd.check.status
            head.append(
                f" · {status}",
                "bold red" if sd.check.status in ("diverges", "header", "unexplained") else "green",
            )
            blocks.append(Block(head, key=("request", r), selectable=False))
            line = verdict_line(verdicts(sd.check))
            verdict = Block(line, key=("verdict", r), selectable=False) if line is not None else None
            # the difference comes before the harness's verdict, which a narrow screen may push out of view
            later = sd.expected is not None and bool(sd.differences)  # differences: a loop-built request
            if verdict is not None and not later:
                blocks.append(verdict)
            if not rec.loop_built:
                blocks.extend(one_shot_blocks(rec))
                continue
            if sd.expected is None:
                blocks.append(
                    Block(
                        Text("no request header was in force: nothing to compare it with", style="bold red"),
                        selectable=False,
                    )
                )
                continue
            if not sd.differences:
                blocks.append(
                    Block(
                        Text(
                            "✓ identical to the rebuilt request "
                            f"({count(len(sd.expected.request.get('messages', [])), 'message')})",
                            style="green",
                        ),
                        selectable=False,
                    )
                )
                continue
            d0 = sd.differences[0]
            if r == 0 or self.first_path is None:
                self.first_path = d0.path
            summary = styled("first difference at ", "bold")
            summary.append(safe(d0.path), "bold reverse #ff9e64")
            summary.append(f"  ({d0.code})", "dim")
            edit = edit_of(d0)
            if edit.kind != "changed":
                summary.append("\n  " + safe(edit.words()), "bold")
            e_val, r_val = _sides(edit, sd.expected.request, rec.request)
            both = _values_diff(d0.detail, e_val, r_val)
            summary.append("\n  expected  ", "bold")
            summary.append_text(pieces_text(both.expected, EXPECTED_MARK))
            summary.append("\n  recorded  ", "bold")
            summary.append_text(pieces_text(both.recorded, RECORDED_MARK))
            if both.expected and both.expected[0].kind == CUT:  # windowed: say where the window is
                summary.append(f"\n  first difference at character {both.offset + 1} of the value", "dim")
            where = self._where(d0.detail, edit)  # last: on a narrow screen it is what gives way
            if where:
                summary.append("\n" + where, "")
            summary_key = ("diff", r, 0)
            blocks.append(Block(summary, key=summary_key))
            if verdict is not None:
                blocks.append(verdict)
            self.sources[summary_key] = edit.source
            self.edits[summary_key] = edit
            first_key = first_key or summary_key
            if len(sd.differences) > 1:
                blocks.append(Block(Text(f"all differences ({len(sd.differences)}):", style="bold"), selectable=False))
                for n, d in enumerate(sd.differences[1:], start=1):
                    t = styled(f"  {d.code} ", "bold #ff9e64")
                    t.append(safe(d.path), "bold")
                    t.append("  " + safe(d.message), "")
                    k = ("diff", r, n)
                    blocks.append(Block(t, key=k))
                    self.edits[k] = edit_of(d)
                    self.sources[k] = self.edits[k].source
            dd = d0.detail.get("deepdiff")
            if isinstance(dd, dict) and dd:
                t = styled("deepdiff: ", "dim")
                t.append(
                    safe(
                        "; ".join(
                            f"{k} ×{v.get('count')} ({', '.join(map(str, v.get('paths', [])[:3]))})"
                            if isinstance(v, dict)
                            else f"{k}"
                            for k, v in dd.items()
                        )
                    ),
                    "dim",
                )
                blocks.append(Block(t, selectable=False))
            recorded = rec.request
            if not any(d.code == "DIV002" for d in sd.differences):
                recorded = align_keys(recorded, sd.expected.request)  # key order is not the difference: align it
            else:
                blocks.append(
                    Block(
                        Text(
                            "keys are shown in their recorded order (the key order is one of the differences)",
                            style="dim",
                        ),
                        selectable=False,
                    )
                )
            inline = _inline(d0.path, e_val, r_val, both)
            blocks.extend(
                self._side_by_side(r, sd.expected.request, recorded, (edit.expected[:1], edit.recorded[:1]), inline)
            )
        key = cursor_key if cursor_key is not None else first_key
        anchor = ("request", key[1]) if isinstance(key, tuple) and len(key) > 1 and key[0] in ("diff", "line") else None
        self.set_blocks(blocks, key, anchor_key=anchor)

    @staticmethod
    def _where(detail: dict, edit: Edit) -> str:
        region = detail.get("region")
        if edit.kind == "extra":  # the region and event named are those of the message it pushed aside
            out = "  no event of the log produced it (e says so)"
        elif not region:
            return ""
        else:
            out = f"  in {REGION_WORDS.get(region, region)}"
            if detail.get("message_index") is not None:
                out += f", message {detail['message_index']}"
            if edit.source is not None:
                out += f", produced by event seq {edit.source} (e jumps there)"
        if detail.get("expected_count") is not None:
            out += f" · {count(detail['expected_count'], 'message')} expected, {detail.get('recorded_count')} recorded"
        return out

    def _side_by_side(
        self,
        r: int,
        expected: dict,
        recorded: dict,
        paths: tuple[list[str], list[str]],
        inline: tuple[dict, dict] = ({}, {}),
    ) -> list[Block]:
        """Both requests line by line; ``paths`` are the parts of each side the first difference is about."""
        left = json_lines(expected, expand=tuple(paths[0] or paths[1]), shown=inline[0])
        right = json_lines(recorded, expand=tuple(paths[1] or paths[0]), shown=inline[1])
        marks_l = {best_line(left, p) for p in paths[0]}
        marks_r = {best_line(right, p) for p in paths[1]}
        header = styled("expected (rebuilt from the log)", "bold underline")
        blocks = [
            Block(Text(""), selectable=False),
            Block(header, right=Text("recorded (capture)", style="bold underline"), selectable=False),
        ]
        a = [t.plain for _, t in left]
        b = [t.plain for _, t in right]
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        opcodes = matcher.get_opcodes()
        for n, (tag, i1, i2, j1, j2) in enumerate(opcodes):
            if tag == "equal":
                length = i2 - i1
                head = CONTEXT if n > 0 else 0
                tail = CONTEXT if n < len(opcodes) - 1 else 0
                if length > head + tail + 1:
                    for k in range(head):
                        blocks.append(self._row(r, left, right, i1 + k, j1 + k, "", marks_l, marks_r))
                    blocks.append(
                        Block(Text(f"  ⋯ {length - head - tail} identical lines", style="dim italic"), selectable=False)
                    )
                    for k in range(length - tail, length):
                        blocks.append(self._row(r, left, right, i1 + k, j1 + k, "", marks_l, marks_r))
                else:
                    for k in range(length):
                        blocks.append(self._row(r, left, right, i1 + k, j1 + k, "", marks_l, marks_r))
                continue
            for k in range(max(i2 - i1, j2 - j1)):
                li = i1 + k if i1 + k < i2 else None
                rj = j1 + k if j1 + k < j2 else None
                blocks.append(self._row(r, left, right, li, rj, "changed", marks_l, marks_r))
        return blocks

    def _row(
        self, r: int, left: list, right: list, li: int | None, rj: int | None, kind: str, marks_l: set, marks_r: set
    ) -> Block:
        lt = left[li][1].copy() if li is not None else Text("")
        rt = right[rj][1].copy() if rj is not None else Text("")
        marked = (li is not None and li in marks_l) or (rj is not None and rj in marks_r)
        # backgrounds go under the text's own styles, so a changed run inside the line keeps its mark
        if marked:
            lt = Text.assemble(("▶ ", "bold #ff9e64"), lt)
            lt.stylize_before(MARK_BG)
            rt.stylize_before(MARK_BG)
        elif kind == "changed":
            if li is not None:
                lt.stylize_before(REMOVED_BG)
            if rj is not None:
                rt.stylize_before(ADDED_BG)
        path = left[li][0] if li is not None else right[rj][0] if rj is not None else ""
        return Block(lt, key=("line", r, path, li, rj), right=rt, selectable=kind == "changed" or marked)

    def source_of(self, key: Any) -> int | None:
        return self.sources.get(key)

    def edit_of(self, key: Any) -> Edit | None:
        """The classification of the difference under ``key`` (None for a line of the side-by-side)."""
        return self.edits.get(key)
