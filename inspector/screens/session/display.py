"""What the session screen owns and how it draws it.

The screen owns the state: the checked session (:class:`SessionState`), the
selected step (``step_index``) and the timeline filter (``category``), both
reactives.  Widgets only post messages; the screen handles them, sets the
reactives, and the watchers redraw the timeline and the *active* tab (other
tabs redraw when they are shown).  This base holds that state, the session bar
and status line, and the drawing of the tabs (the Events tab reads its events
back from the file in a worker); the layers above it load, navigate and export.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import TabbedContent

from inspector.deeplink import At
from inspector.messages import EventsRead, SessionLoadFailed, StepSelected
from inspector.screens.state import STATUS_LABEL, SessionState, check_input, kept
from inspector.widgets.diff_view import DiffView, one_shot_blocks, verdict_line
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.events_view import EventsView
from inspector.widgets.findings_view import FindingsView
from inspector.widgets.header_view import HeaderView
from inspector.widgets.jsontext import count, safe, styled
from inspector.widgets.prefix_view import PrefixView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import SessionBar, StatusLine
from inspector.widgets.timeline import Timeline
from inspector.widgets.token_bar import TokenBar, token_bar_text
from invariants.analysis.events_view import LineIndex, Match, read_events
from invariants.analysis.verdicts import NOT_OURS, request_counts, verdicts
from invariants.gate.config import Config
from invariants.gate.result import CheckOptions
from invariants.model.registry import TABS
from invariants.read.source import LogSource

if TYPE_CHECKING:
    from invariants.gate.follow import Follow

TAB_TITLES = {
    "request": "Request",
    "diff": "Diff",
    "header": "Header",
    "prefix": "Prefix",
    "events": "Events",
    "findings": "Findings",
}


SHORT_TAB_TITLES = {
    "request": "Req",
    "diff": "Diff",
    "header": "Head",
    "prefix": "Prefix",
    "events": "Events",
    "findings": "Findings",
}


def _recorded(requests: list) -> str:
    """The session bar's request count: split (compared, one-shot, ...) only when not all were compared."""
    if all(r.status not in NOT_OURS for r in requests):
        return f"{len(requests)} recorded"
    return request_counts(requests)


class SessionDisplay(Screen):
    """The session screen's state, bar, status line and tabs (see the module docstring)."""

    step_index: reactive[int] = reactive(-1, init=False, always_update=True)

    category: reactive[str | None] = reactive(None, init=False)

    def __init__(
        self,
        source: LogSource,
        *,
        options: CheckOptions | None = None,
        config: Config | None = None,
        follow: bool = False,
        from_list: bool = False,
        at: At | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.at = at  # --at: where to open once the session is checked
        self.options = options or CheckOptions()
        self.config = config  # what to report, as the gate does (None: every finding)
        self.follow = follow
        self.from_list = from_list
        self.state: SessionState | None = None
        self.line_index: LineIndex | None = None
        self.loaded_at: float | None = None
        self.load_elapsed: float | None = None
        self.started = time.perf_counter()
        self._rendered: dict[str, tuple[int, int]] = {}  # tab -> (state generation, step)
        self._generation = 0
        self._pending: dict[str, Any] = {}  # tab -> cursor key to apply on its next draw
        self._events_target: int | None = None
        self.finding_pos = -1
        self.search_query = ""
        self.search_matches: list[Match] = []
        self.search_pos = -1
        self._collected_at = time.perf_counter()
        self.previewing = False  # the state is a replay of the log's head; the whole check is still running
        self._preview: tuple[int, int, int] = (0, 0, 0)  # while previewing: head bytes, log size, bytes checked
        self._checker: Follow | None = None  # while following: re-checks resume the replay
        self.check_mode = "none"  # how the last check ran: check, or (following) full | resume | kept | none
        self._rang = False  # following: the bell rang for a new error the user has not looked at yet
        self._announced: tuple | None = None  # ... and that error (_finding_id), where n goes next
        self._transient = False  # the status line holds a word about a jump (see say)

    # -- shortcuts -------------------------------------------------------------------
    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def tabs(self) -> TabbedContent:
        return self.query_one("#tabs", TabbedContent)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def say(self, text: Text | str, *, transient: bool = False) -> None:
        """Show ``text`` on the status line; a ``transient`` word (where a jump came from) goes when the user
        moves on to another tab or back to the timeline."""
        self.status.show(text)
        self._transient = transient

    @property
    def active_tab(self) -> str:
        return self.tabs.active or "request"

    # -- loading -----------------------------------------------------------------------
    def _paths(self) -> list[str | Path]:
        # One log (or its database); the library finds a forked child's parent by itself.
        return [check_input(self.source.path)]

    def _compressed(self) -> bool:
        return self.source.path.name.endswith((".zst", ".zstd"))

    def _step_status(self, i: int) -> None:
        """Where the selection is: the step, its status and its findings (no stale word about an earlier jump)."""
        state = self.state
        assert state is not None
        st = state.steps[i]
        t = styled(f"turn {safe(st.turn)} step {safe(st.step)}", "bold")
        t.append(f" · step/start at seq {st.seq} · {STATUS_LABEL.get(st.status, st.status)}", "")
        here = state.step_findings.get(i, [])
        if here:
            worst = state.worst(i) or "info"
            style = {"error": "bold red", "warning": "#e0af68"}.get(worst, "#7dcfff")
            t.append(f" · {len(here)} finding{'s' if len(here) != 1 else ''} here", style)
            t.append(" (n shows the first)", "dim")
        self.say(t)

    def _initial_status(self, state: SessionState) -> None:
        c = state.counts()
        if state.result.problems:  # e.g. a capture file that cannot be read: never an all-clear
            self.say(Text("cannot check fully: " + safe("; ".join(state.result.problems)), style="bold red"))
            return
        if not state.findings:
            t = Text(f"✓ no findings · {request_counts(state.model.requests)}", style="green")
        else:
            t = styled(f"{count(len(state.findings), 'finding')}: ", "bold")
            t.append(f"{count(c['error'], 'error')} ", "bold red" if c["error"] else "dim")
            t.append(f"{count(c['warning'], 'warning')} ", "#e0af68" if c["warning"] else "dim")
            t.append(count(c["info"], "info"), "#7dcfff" if c["info"] else "dim")
            t.append(" · press n to jump to the first", "dim")
        disagree = sum(state.disagreeing.values())
        if disagree:
            t.append(
                f" · ≠ {count(disagree, 'verdict')} differ{'s' if disagree == 1 else ''} from the harness's"
                " (f filters the steps)",
                "bold #f7768e",
            )
        self.say(t)

    def _update_bar(self) -> None:
        state = self.state
        if state is None:
            return
        m = state.model
        c = state.counts()
        t = Text(" ")
        t.append(safe(self.source.path.name + (f"#{self.source.member}" if self.source.member else "")), "bold")
        t.append(" │ ", "dim")
        t.append(safe(m.id), "#7aa2f7")
        t.append(" │ ", "dim")
        t.append(f"{m.profile.era} era" + (f" ({safe(m.profile.name)})" if m.profile.name != m.profile.era else ""))
        t.append(" │ ", "dim")
        t.append(f"✗{c['error']}", "bold red" if c["error"] else "dim")
        t.append(f" ⚠{c['warning']}", "#e0af68" if c["warning"] else "dim")
        t.append(f" ●{c['info']}", "#7dcfff" if c["info"] else "dim")
        t.append(" │ ", "dim")
        instances, compactions = len(m.instances), len(m.compactions)
        t.append(
            f"{count(m.events, 'event')} · {count(len(m.steps), 'step')} · {count(m.turns, 'turn')} · "
            f"{instances} instance{'s' if instances != 1 else ''} · "
            f"{compactions} compaction{'s' if compactions != 1 else ''} · {_recorded(m.requests)}",
            "",
        )
        if state.result.problems:
            t.append("  ✗ " + safe("; ".join(state.result.problems)), "bold red")
        if self.previewing:
            _, size, done = self._preview
            t.append("  ◌ checking the whole log…", "bold #7dcfff")
            if done and size and not self._compressed():
                t.append(f" {min(99, 100 * done // size)}%", "bold #7dcfff")
        if self.follow:
            t.append("  ◉ following", "bold #9ece6a")
        if self.category:
            t.append("  filter: " + safe(self.category), "bold #e0af68")
        self.query_one(SessionBar).show(t)

    def _update_tab_labels(self, width: float | None = None) -> None:
        """Tab titles, short ones when the full ones do not fit the tab bar (80 columns)."""
        if width is None:
            timeline = self.timeline.styles.width
            width = self.tabs.size.width or (self.size.width - (timeline.value if timeline is not None else 0))
        n = len(self.state.findings) if self.state is not None else 0
        for titles in (TAB_TITLES, SHORT_TAB_TITLES):
            labels = {t: titles[t] + (f" {n}" if t == "findings" and n else "") for t in TABS}
            if sum(len(label) + 2 for label in labels.values()) <= width:
                break
        for t, label in labels.items():
            tab = self.tabs.get_tab(t)
            if str(tab.label) != label:
                tab.label = Text(label)

    # -- selection ----------------------------------------------------------------------------
    def watch_step_index(self, old: int, new: int) -> None:
        if self.state is None or new < 0:
            return
        self.timeline.select_step(new)
        self._step_status(new)  # a jump that set the step says more right after
        self._draw_active()
        self._show_tokens()

    def _show_tokens(self) -> None:
        state, bar = self.state, self.query_one(TokenBar)
        step = getattr(self, "_tokens", {}).get(self.step_index) if state is not None else None
        if state is None or step is None or not bar.wanted:
            bar.show(None)
            return
        from invariants.analysis.token_rules import TokenSettings, window_for

        st = state.model.steps[step.index]
        window = window_for(state.model, st, TokenSettings())
        usage = st.usage if isinstance(st.usage, dict) else {}
        cache = usage.get("cacheReadTokens")
        width = max(20, self.size.width)
        bar.show(token_bar_text(step, window.tokens if window else None, cache if type(cache) is int else None, width))

    def watch_category(self, old: str | None, new: str | None) -> None:
        state = self.state
        if state is None:
            return
        rows = state.rows(new)
        self.timeline.set_rows(state, rows, self.step_index)
        self._update_bar()
        visible = self.timeline.visible_steps()
        if visible and self.step_index not in visible:
            self.step_index = visible[0]
        self.say(
            Text(
                f"timeline: {count(len(visible), 'step')}" + (f" with {safe(new)} findings" if new else ""),
                style="#7dcfff",
            )
        )

    def on_step_selected(self, message: StepSelected) -> None:
        self.step_index = message.index

    @on(TabbedContent.TabActivated)
    def _tab_shown(self, event: TabbedContent.TabActivated) -> None:
        self._draw_active()

    def _draw_active(self, force: bool = False) -> None:
        state = self.state
        if state is None or self.step_index < 0 or not state.steps:
            if state is not None and self.active_tab == "findings":
                self.query_one(FindingsView).show(state, self._pending.pop("findings", None))
            elif state is not None:
                self.query_one(f"#{self.active_tab}-view", DocumentView).set_blocks(self._no_steps(state))
            return
        tab = self.active_tab
        stamp = (self._generation, self.step_index)
        waiting = tab == "events" and self._events_target is not None
        if not force and self._rendered.get(tab) == stamp and tab not in self._pending and not waiting:
            return
        self._draw(tab)
        self._rendered[tab] = stamp

    def _no_steps(self, state: SessionState) -> list[Block]:
        """What a tab shows for a log without steps: that, and the one-shot requests recorded for it."""
        loose = state.one_shots.get(None, [])
        blocks = [
            Block(
                styled(
                    "This log has no step/start: no request was rebuilt from it. "
                    "The Findings tab (6) says what the checker found.",
                    "italic",
                ),
                selectable=False,
            )
        ]
        if loose and self.active_tab in ("request", "diff"):
            blocks.append(Block(Text(f"\n{request_counts(state.model.requests)}", style="bold"), selectable=False))
            for rc in loose:
                rec = kept(rc)
                head = styled(f"\n{safe(Path(rec.file).name)}:{rec.line}", "bold")
                head.append(" · one-shot: shown, not checked", "green")
                blocks.append(Block(head, selectable=False))
                line = verdict_line(verdicts(rc))
                if line is not None:
                    blocks.append(Block(line, selectable=False))
                blocks.extend(one_shot_blocks(rec))
        return blocks

    def _draw(self, tab: str) -> None:
        state = self.state
        assert state is not None
        i = self.step_index
        key = self._pending.pop(tab, None)
        if tab == "request":
            self.query_one(RequestView).show(state, i, key)
        elif tab == "diff":
            self.query_one(DiffView).show(state, i, key)
        elif tab == "header":
            self.query_one(HeaderView).show(state, i, key)
        elif tab == "prefix":
            self.query_one(PrefixView).show(state, i, key)
        elif tab == "findings":
            if key is None and state.step_findings.get(i):
                key = ("finding", state.step_findings[i][0])  # the first finding at this step
            self.query_one(FindingsView).show(state, key)
        elif tab == "events":
            view = self.query_one(EventsView)
            target = self._events_target
            self._events_target = None
            if view.step == i and view.items and self._rendered.get("events") == (self._generation, i):
                if target is not None:
                    view.goto(target)
                return
            first, last, line = state.window(i)
            view.show_reading(i, self._events_title(i))
            self.read_step_events(i, first, last, line, target)

    def _events_title(self, i: int) -> Text:
        state = self.state
        assert state is not None
        st = state.steps[i]
        first, last, _ = state.window(i)
        t = styled(f"Events of turn {safe(st.turn)} step {safe(st.step)}", "bold")
        t.append(
            f" · seq {first}–{last if last is not None else 'end'} (from the event after the previous step)", "dim"
        )
        return t

    @work(thread=True, exclusive=True, group="events")
    def read_step_events(self, step: int, first: int, last: int | None, line: int, target: int | None) -> None:
        started = time.perf_counter()
        try:
            events = read_events(self.source, first, last, start_line=line, index=self.line_index)
        except OSError as exc:
            self.post_message(SessionLoadFailed(f"cannot read events: {exc}"))
            return
        self.post_message(EventsRead(step, events, time.perf_counter() - started, target))

    def on_events_read(self, message: EventsRead) -> None:
        if message.step != self.step_index:
            return
        self.query_one(EventsView).show_events(
            message.step, self._events_title(message.step), message.events, message.target
        )
