"""The session screen: the timeline of steps and, for the selected step, the tabs.

The screen owns the state: the checked session (:class:`SessionState`), the
selected step (``step_index``) and the timeline filter (``category``), both
reactives.  Widgets only post messages; the screen handles them, sets the
reactives, and the watchers redraw the timeline and the *active* tab (other
tabs redraw when they are shown).  The check runs in a worker thread, started
after the first frame is drawn, so the first screen appears before a large log
is read (a huge log's first frame shows its first steps, replayed from its
head on mount; the whole check replaces them); events are read back from
the file in another worker; ``--follow`` re-checks in a third as the log grows,
resuming the replay over the appended bytes when it can (:mod:`invariants.gate.follow`).
"""

from __future__ import annotations

import gc
import os
import re
import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input, TabbedContent, TabPane, Tabs
from textual.worker import get_current_worker

from inspector.deeplink import At
from inspector.messages import (
    BlockActivated,
    BlockSelected,
    EventsRead,
    FindingsArrived,
    SearchFinished,
    SessionLoaded,
    SessionLoadFailed,
    SessionPreviewed,
    StepSelected,
    TokensCounted,
)
from inspector.screens.state import STATUS_LABEL, TABS, SessionState, describe_version, finding_tab
from inspector.widgets.diff_view import DiffView, one_shot_blocks, verdict_line
from inspector.widgets.document import Block, DocumentView
from inspector.widgets.events_view import MATCH_STYLE, EventsView
from inspector.widgets.findings_view import FindingsView, finding_where
from inspector.widgets.header_view import HeaderView
from inspector.widgets.jsontext import safe, styled
from inspector.widgets.prefix_view import PrefixView
from inspector.widgets.request_view import RequestView
from inspector.widgets.status import SessionBar, StatusLine
from inspector.widgets.timeline import Timeline
from inspector.widgets.token_bar import TokenBar, token_bar_text
from invariants.analysis.events_view import LineIndex, Match, read_events, search
from invariants.analysis.verdicts import NOT_OURS, request_counts, verdicts
from invariants.gate.config import Config
from invariants.gate.pipeline import check
from invariants.gate.result import CheckOptions, CheckResult
from invariants.read.source import LogSource, strip_log_suffix
from invariants.replay.session import replay

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
FOLLOW_POLL = 0.3  # seconds between looks at a followed log
GC_EVERY = 30.0  # seconds between full collections while following
PREVIEW_FROM = 8 << 20  # a log this big gets a first screen from its head while the whole log is checked
PREVIEW_BYTES = 1 << 20  # the head replayed for it: more steps than a screen shows


def _log_suffix_free(path: Path) -> str:
    return strip_log_suffix(path.name)


def _file_name(name: str) -> str:
    """A file name from log values (turn and step are the log's): no separators, no controls."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _recorded(requests: list) -> str:
    """The session bar's request count: split (compared, one-shot, ...) only when not all were compared."""
    if all(r.status not in NOT_OURS for r in requests):
        return f"{len(requests)} recorded"
    return request_counts(requests)


def _part_name(key: Any) -> str:
    """A Request tab line in words: ``message 2``, ``temperature``."""
    if isinstance(key, tuple) and len(key) == 2:
        return f"message {key[1]}" if key[0] == "message" else safe(str(key[1]))
    return ""


def _finding_id(f: Any) -> tuple:
    """What makes a finding the same one across re-checks of a growing log."""
    return (f.rule, f.seq, f.turn, f.step, f.path, f.message)


class SessionScreen(Screen):
    BINDINGS = [
        Binding("j", "step(1)", "Step", key_display="j/k"),
        Binding("k", "step(-1)", "Step", show=False),
        Binding("down", "step(1)", "Next step", show=False),
        Binding("up", "step(-1)", "Previous step", show=False),
        Binding("pagedown", "step(10)", "10 steps down", show=False),
        Binding("pageup", "step(-10)", "10 steps up", show=False),
        Binding("g,home", "edge(0)", "First step", show=False),
        Binding("G,end", "edge(1)", "Last step", show=False),
        Binding("n", "next_finding", "Finding", key_display="n/N"),
        Binding("N", "previous_finding", "Previous finding", show=False),
        Binding("right_square_bracket", "resume(1)", "Resume", key_display="[/]"),
        Binding("left_square_bracket", "resume(-1)", "Previous resume", show=False),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("greater_than_sign", "match(1)", "Next match", show=False),
        Binding("less_than_sign", "match(-1)", "Previous match", show=False),
        Binding("f", "filter", "Filter", show=False),
        Binding("e", "goto_origin", "Event"),
        Binding("w", "when_changed", "When?"),
        Binding("x", "export", "Export"),
        Binding("R", "repro", "Repro", show=False),
        Binding("t", "tokens", "Tokens", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("escape", "back", "Back", show=False),
        Binding("q", "quit", "Quit"),
        *[Binding(str(i + 1), f"tab('{t}')", TAB_TITLES[t], show=False) for i, t in enumerate(TABS)],
    ]

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
        self._checker = None  # a Follow while following: re-checks resume the replay
        self.check_mode = "none"  # how the last check ran: check, or (following) full | resume | kept | none
        self._rang = False  # following: the bell rang for a new error the user has not looked at yet
        self._announced: tuple | None = None  # ... and that error (_finding_id), where n goes next

    # -- layout --------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield SessionBar(Text(f" {safe(self.source.display)} · reading…"), id="session-bar")
        yield TokenBar(id="token-bar")
        with Horizontal(id="main"):
            yield Timeline(id="timeline")
            with TabbedContent(id="tabs", initial="request"):
                with TabPane("Request", id="request"):
                    yield RequestView(id="request-view")
                with TabPane("Diff", id="diff"):
                    yield DiffView(id="diff-view")
                with TabPane("Header", id="header"):
                    yield HeaderView(id="header-view")
                with TabPane("Prefix", id="prefix"):
                    yield PrefixView(id="prefix-view")
                with TabPane("Events", id="events"):
                    yield EventsView(id="events-view")
                with TabPane("Findings", id="findings"):
                    yield FindingsView(id="findings-view")
        yield StatusLine(Text(""), id="status")
        yield Input(
            placeholder="search message and event text; Enter searches (again: next match), Escape closes", id="search"
        )
        yield Footer(compact=True, show_command_palette=False)  # ctrl+p still opens it: the help says so

    def on_mount(self) -> None:
        # Tab moves between the timeline and the tab's content; tabs switch with 1-6 or a click.
        self.tabs.query_one(Tabs).can_focus = False
        self.query_one(Timeline).focus()
        if isinstance(self.source.path, Path):  # a local log's head is read at once: on the first frame
            self._preview_now()
        # the whole check after that frame is drawn: it holds the GIL for long stretches
        self.call_after_refresh(self.load_session)

    def on_resize(self, event: Any) -> None:
        # a third of the screen for the timeline, within reason
        width = max(30, min(44, self.size.width // 3))
        self.timeline.styles.width = width
        self._update_tab_labels(self.size.width - width)

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

    def say(self, text: Text | str) -> None:
        self.status.show(text)

    @property
    def active_tab(self) -> str:
        return self.tabs.active or "request"

    # -- loading -----------------------------------------------------------------------
    def _paths(self) -> list[Path]:
        # One log (or its database); the library finds a forked child's parent by itself.
        return [self.source.path]

    def _check(self) -> Any:
        """Check the log: once, or, while following, through a Follow that resumes."""
        if not self.follow:
            self.check_mode = "check"
            return check(self._paths(), self.options, config=self.config, keep_models=True, progress=self._progress)
        if self._checker is None:
            from invariants.gate.follow import Follow

            self._checker = Follow(self._paths(), self.options, config=self.config)
        result = self._checker.check()
        self.check_mode = self._checker.last_mode
        return result

    @work(thread=True, exclusive=True, group="load")
    def load_session(self) -> None:
        started = time.perf_counter()
        try:
            if self.state is None and (head := self._head()) is not None:  # a remote log: its head, read here
                self.post_message(SessionPreviewed(*head))
            result = self._check()
            model = self._pick(result)
            if model is None:
                self.post_message(SessionLoadFailed("; ".join(result.problems) or "no session log found"))
                return
            if self.line_index is None:
                self.line_index = LineIndex(self.source)
            else:
                self.line_index.extend()
        except Exception as exc:  # the UI must survive any log
            self.post_message(SessionLoadFailed(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(SessionLoaded(result, model, time.perf_counter() - started))

    def _head(self) -> tuple[Any, int, int] | None:
        """For a huge log, the model of its first ``PREVIEW_BYTES`` (its first steps), that many bytes and its
        size; None for a log small enough to check at once (or one followed, or in a database)."""
        if self.follow or self.source.member is not None:
            return None
        try:
            size = self.source.path.stat().st_size
        except OSError:  # the whole check says why
            return None
        if size < PREVIEW_FROM:
            return None
        return replay(self.source, self.options.profile, head_bytes=PREVIEW_BYTES), PREVIEW_BYTES, size

    def _preview_now(self) -> None:
        """A local huge log's first steps, shown before the first frame (a bounded read, ~50 ms for 1 MB);
        a log that cannot be read is the whole check's to report."""
        try:
            head = self._head()
        except Exception:  # the UI must survive any log
            return
        if head is not None:
            self._show_preview(*head)

    def on_session_previewed(self, message: SessionPreviewed) -> None:
        if self.state is None:  # else the whole check was quicker
            self._show_preview(message.model, message.head_bytes, message.size)

    def _show_preview(self, model: Any, head_bytes: int, size: int) -> None:
        """The replay of the log's head on screen, marked as such, until the whole check replaces it."""
        self.previewing = True
        self._preview = (head_bytes, size, 0)
        state = SessionState(CheckResult([], [], [], [], [model]), model)
        self.state = state
        self._generation += 1
        self._update_bar()
        self.timeline.set_rows(state, state.rows(None), 0 if state.steps else None)
        self.step_index = 0 if state.steps else -1
        self.say(self._preview_status(state))

    def _progress(self, source: LogSource, findings: list, read_bytes: int) -> None:
        """In the check's worker: the findings so far of this screen's log, for a preview to fill in."""
        if self._is_mine(source):
            self.post_message(FindingsArrived(findings, read_bytes))

    def on_findings_arrived(self, message: FindingsArrived) -> None:
        """A huge log's head on screen, and the whole check under way: its findings so far filled in.

        Findings within the steps shown mark them as the whole check will; those past them are
        counted and listed (no step yet).  The whole check's result replaces all of it."""
        state = self.state
        if not self.previewing or state is None:
            return
        model = state.model
        said = self.status.plain == self._preview_status(state).plain  # the user has not moved on
        upto = model.steps[-1].last_seq if model.steps else -1
        fresh = SessionState(CheckResult([], message.findings, [], [], [model]), model, upto=upto)
        self.state = fresh
        self._generation += 1
        self._preview = (*self._preview[:2], message.read_bytes)
        self._update_bar()
        self._update_tab_labels()
        step = self.step_index
        self.timeline.set_rows(fresh, fresh.rows(self.category), step if step >= 0 else None)
        self._draw_active()
        if said:
            self.say(self._preview_status(fresh))

    def _preview_status(self, state: SessionState) -> Text:
        """What the status line says while a preview is shown: what is shown, and how far the check is."""
        head, size, done = self._preview
        mb = 1 << 20
        packed = self._compressed()  # offsets count the decompressed text, the size the file
        of = f"a {size / mb:,.0f} MB zstd file" if packed else f"{size / mb:,.0f} MB"
        t = Text(f"showing the first {len(state.steps)} steps (the first {head // mb} MB of {of})")
        if not done:
            t.append(" · checking the whole log… findings follow")
        else:
            n = len(state.findings)
            later = sum(1 for s in state.finding_step if s is None)
            read = f"{done / mb:,.0f} MB{' (decompressed)' if packed else ''} read"
            t.append(f" · checking the whole log: {read}, {n} finding{'s' if n != 1 else ''} so far")
            if later:
                t.append(f" ({later} past the steps shown)")
            t.append("…")
        t.stylize("#7dcfff")
        return t

    def _compressed(self) -> bool:
        return self.source.path.name.endswith((".zst", ".zstd"))

    def _pick(self, result: Any) -> Any:
        """This screen's session among the checked ones (a database holds several)."""
        for m in result.models:
            if self._is_mine(m.source):
                return m
        return result.models[0] if result.models and self.source.member is None else None

    def _is_mine(self, source: LogSource) -> bool:
        """Whether ``source`` is this screen's log (or database session), however its path was spelled."""
        return (source.path.resolve(), source.member) == (self.source.path.resolve(), self.source.member)

    def on_session_load_failed(self, message: SessionLoadFailed) -> None:
        self.timeline.placeholder = "could not read this log"
        self.timeline.refresh()
        self.say(Text("cannot check this log: " + safe(message.error), style="bold red"))

    def on_session_loaded(self, message: SessionLoaded) -> None:
        # The model lives as long as the screen: freeze it so the cyclic GC
        # does not walk it on every keypress (see InspectorApp).  While
        # following, what earlier freezes kept is collected twice a minute.
        now = time.perf_counter()
        if message.refresh and now - self._collected_at > GC_EVERY:
            gc.unfreeze()
            gc.collect()
            self._collected_at = now
        gc.freeze()
        state = SessionState(message.result, message.model)
        old = self.state
        self.state = state
        self._generation += 1
        previewed, self.previewing = self.previewing, False
        self.load_elapsed = message.elapsed
        if self.loaded_at is None:
            self.loaded_at = time.perf_counter()
        self._update_bar()
        self._update_tab_labels()
        self._tokens: dict[int, Any] = {}
        if self.query_one(TokenBar).wanted:
            self.count_tokens(state)
        rows = state.rows(self.category)
        newest = len(state.steps) - 1
        if message.refresh and old is not None and self.step_index >= 0:
            # following: the selection stays where the user put it, unless it was on the newest step
            tailing = self.step_index >= len(old.steps) - 1
            step = newest if tailing else min(self.step_index, newest)
        elif previewed and self.step_index >= 0:  # the first screen was a preview: stay where the user is
            tailing = False
            step = min(self.step_index, newest)
        else:
            tailing = self.follow
            step = newest if self.follow else (0 if state.steps else -1)
        self.timeline.placeholder = "no steps in this log" if not state.steps else ""
        self.timeline.set_rows(state, rows, step if step >= 0 else None)
        if tailing and step >= 0:
            self.call_after_refresh(self.timeline.scroll_end, animate=False, immediate=True)
        self.step_index = step  # the watcher says where the selection is; what follows may say more
        if step < 0:
            self._draw_active()  # no step to select: the tab says so (and shows any one-shot request)
        if message.refresh and old is not None:
            self._followed(old, state, message.elapsed, tailing)
        else:
            self._initial_status(state)
            if self.at is not None:
                self.open_at(self.at)
        if self.follow and not message.refresh:
            self.follow_log()

    def _followed(self, old: SessionState, state: SessionState, elapsed: float, tailing: bool) -> None:
        """After a re-check while following: what grew, and a bell (once) on the first new error."""
        grown = state.model.events - old.model.events
        how = "resumed" if self.check_mode == "resume" else "checked"
        steps = len(state.steps) - len(old.steps)
        t = Text(f"following: +{grown} events, {steps:+d} steps ({how} in {elapsed * 1000:.0f} ms)", style="#7dcfff")
        seen = {_finding_id(f) for f in old.findings if f.severity == "error"}
        fresh = [i for i, f in enumerate(state.findings) if f.severity == "error" and _finding_id(f) not in seen]
        if fresh and not self._rang:
            self._rang = True  # one bell until the user looks at the findings (n, N)
            self.app.bell()
            f = state.findings[fresh[0]]
            t.append(" · ", "dim")
            t.append(f"✗ new error {f.rule}", "bold red")
            where = finding_where(f)
            if where:
                t.append(" · " + where, "dim")
            t.append(" · n jumps to it", "dim")
            t.append("\n" + safe(f.message))
            self._announced = _finding_id(f)  # n goes to it, however later re-checks reorder the findings
        elif not grown:
            return
        elif not tailing:
            t.append(" · G: the newest step", "dim")
        self.say(t)

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
            t = styled(f"{len(state.findings)} finding(s): ", "bold")
            t.append(f"{c['error']} error(s) ", "bold red" if c["error"] else "dim")
            t.append(f"{c['warning']} warning(s) ", "#e0af68" if c["warning"] else "dim")
            t.append(f"{c['info']} info(s)", "#7dcfff" if c["info"] else "dim")
            t.append(" · press n to jump to the first", "dim")
        disagree = sum(state.disagreeing.values())
        if disagree:
            t.append(f" · ≠ {disagree} verdict(s) differ from the harness's (f filters the steps)", "bold #f7768e")
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
            f"{m.events} events · {len(m.steps)} steps · {m.turns} turns · "
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

    def _update_tab_labels(self, width: int | None = None) -> None:
        """Tab titles, short ones when the full ones do not fit the tab bar (80 columns)."""
        if width is None:
            width = self.tabs.size.width or (self.size.width - self.timeline.styles.width.value)
        n = len(self.state.findings) if self.state is not None else 0
        for titles in (TAB_TITLES, SHORT_TAB_TITLES):
            labels = {t: titles[t] + (f" {n}" if t == "findings" and n else "") for t in TABS}
            if sum(len(label) + 2 for label in labels.values()) <= width:
                break
        for t, label in labels.items():
            tab = self.tabs.get_tab(t)
            if str(tab.label) != label:
                tab.label = Text(label)

    # -- follow ---------------------------------------------------------------------------
    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.source.path.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    @work(thread=True, exclusive=True, group="follow")
    def follow_log(self) -> None:
        worker = get_current_worker()
        last = self._stamp()
        while not worker.is_cancelled:
            time.sleep(FOLLOW_POLL)
            stamp = self._stamp()
            if stamp is None or stamp == last:
                continue
            if not self.source.compressed and not self._ends_with_newline():
                continue  # a line is being written; look again shortly
            last = stamp
            started = time.perf_counter()
            try:
                result = self._check()
                model = self._pick(result)
                if self.line_index is not None:
                    self.line_index.extend()
            except Exception as exc:
                self.post_message(SessionLoadFailed(f"{type(exc).__name__}: {exc}"))
                continue
            if model is not None and not worker.is_cancelled:
                self.post_message(SessionLoaded(result, model, time.perf_counter() - started, True))

    def _ends_with_newline(self) -> bool:
        try:
            with self.source.path.open("rb") as fh:
                fh.seek(-1, os.SEEK_END)
                return fh.read(1) == b"\n"
        except OSError:
            return False

    # -- selection ----------------------------------------------------------------------------
    def watch_step_index(self, old: int, new: int) -> None:
        if self.state is None or new < 0:
            return
        self.timeline.select_step(new)
        self._step_status(new)  # a jump that set the step says more right after
        self._draw_active()
        self._show_tokens()

    # -- token bar ----------------------------------------------------------------------------
    def action_tokens(self) -> None:
        """Show or hide the token bar (counting the session's requests the first time)."""
        bar = self.query_one(TokenBar)
        bar.wanted = not bar.wanted
        if not bar.wanted:
            bar.show(None)
            return
        from invariants.analysis.tokenizer import available

        if not available():
            bar.wanted = False
            self.say(Text("token counts need the optional packages: pip install 'dsh-inspector[tokens]'"))
            return
        if self.state is not None and not getattr(self, "_tokens", None):
            self.say(Text("counting tokens…", style="#7dcfff"))
            self.count_tokens(self.state)
        self._show_tokens()

    @work(thread=True, exclusive=True, group="tokens")
    def count_tokens(self, state: SessionState) -> None:
        """Count every step's request once per checked state (the tokens extra, checked by the caller)."""
        from invariants.analysis.token_steps import step_tokens

        steps = {s.index: s for s in step_tokens(state.model)}
        if not get_current_worker().is_cancelled:
            self.post_message(TokensCounted(state.serial, steps))

    def on_tokens_counted(self, message: TokensCounted) -> None:
        if self.state is not None and message.serial == self.state.serial:
            self._tokens = message.steps
            self._show_tokens()

    def _show_tokens(self) -> None:
        state, bar = self.state, self.query_one(TokenBar)
        step = getattr(self, "_tokens", {}).get(self.step_index) if state is not None else None
        if step is None or not bar.wanted:
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
            Text(f"timeline: {len(visible)} step(s)" + (f" with {safe(new)} findings" if new else ""), style="#7dcfff")
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
                rec = rc.recorded
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

    # -- block messages -----------------------------------------------------------------------
    def on_block_activated(self, message: BlockActivated) -> None:
        view = message.view
        if isinstance(view, FindingsView):
            i = FindingsView.index_of_key(message.key)
            if i is not None:
                self.jump_to_finding(i)
        elif isinstance(view, EventsView):
            view.toggle(message.key)
        elif isinstance(view, DiffView) and isinstance(message.key, tuple) and message.key[0] == "diff":
            self.action_goto_origin()
        elif isinstance(view, RequestView):
            self.action_goto_origin()
        elif (
            isinstance(view, (HeaderView, PrefixView))
            and isinstance(message.key, tuple)
            and message.key[0] == "version"
        ):
            self.action_goto_origin()

    def on_block_selected(self, message: BlockSelected) -> None:
        # the selection lives in the view (actions read it when asked); in Findings the status shows the one selected
        if isinstance(message.view, FindingsView):
            i = FindingsView.index_of_key(message.key)
            if i is not None and self.state is not None and i < len(self.state.findings):
                self.finding_pos = i
                self._finding_status(i)

    # -- actions: moving ------------------------------------------------------------------------
    def action_step(self, delta: int) -> None:
        if self.state is None:
            return
        nxt = self.timeline.neighbour(self.step_index, delta)
        if nxt is not None and nxt != self.step_index:
            self.step_index = nxt

    def action_edge(self, end: int) -> None:
        steps = self.timeline.visible_steps()
        if steps:
            self.step_index = steps[-1] if end else steps[0]

    def action_tab(self, tab: str) -> None:
        self.tabs.active = tab

    def action_back(self) -> None:
        search = self.query_one("#search", Input)
        if search.display:
            self._close_search()
            return
        if self.focused is not self.timeline:
            self.timeline.focus()
            return
        if self.from_list:
            self.app.pop_screen()

    async def action_quit(self) -> None:
        self.app.exit()

    def action_help(self) -> None:
        from inspector.screens.dialogs import SESSION_KEYS, HelpScreen, marks_legend

        self.app.push_screen(HelpScreen("keys of the session screen", SESSION_KEYS, marks_legend()))

    # -- findings -----------------------------------------------------------------------------------
    def action_next_finding(self) -> None:
        self._step_finding(1)

    def action_previous_finding(self) -> None:
        self._step_finding(-1)

    def _step_finding(self, direction: int) -> None:
        state = self.state
        if state is None:
            return
        self._rang = False
        announced, self._announced = self._announced, None
        n = len(state.findings)
        if not n:
            self.say(Text("✓ no findings in this session", style="green"))
            return
        pos = self.finding_pos
        here = self.step_index
        target = next((i for i, f in enumerate(state.findings) if _finding_id(f) == announced), None)
        if direction > 0 and target is not None:
            nxt = target
        elif 0 <= pos < n and state.finding_step[pos] in (here, None):
            nxt = (pos + direction) % n
        else:
            order = range(n) if direction > 0 else range(n - 1, -1, -1)
            nxt = next(
                (
                    i
                    for i in order
                    if state.finding_step[i] is not None
                    and (state.finding_step[i] >= here if direction > 0 else state.finding_step[i] <= here)
                ),
                0 if direction > 0 else n - 1,
            )
        self.jump_to_finding(nxt)

    def jump_to_finding(self, i: int) -> None:
        state = self.state
        if state is None or not (0 <= i < len(state.findings)):
            return
        self.finding_pos = i
        f = state.findings[i]
        step = state.finding_step[i]
        tab = finding_tab(f) if step is not None else "findings"
        if step is not None:
            if self.category is not None and step not in self.timeline.visible_steps():
                self.category = None
            key = self._finding_key(f, step, tab)
            if tab == "events":
                self._events_target = f.seq
            elif key is not None:
                self._pending[tab] = key
            self.step_index = step
        else:
            self._pending["findings"] = ("finding", i)
        self._show_tab(tab)
        self._finding_status(i)

    def _show_tab(self, tab: str) -> None:
        if self.active_tab != tab:
            self.tabs.active = tab  # TabActivated draws it
        else:
            self._draw_active()

    def _finding_key(self, f: Any, step: int, tab: str) -> Any:
        state = self.state
        assert state is not None
        if tab == "diff":
            capture = f.detail.get("capture") if isinstance(f.detail, dict) else None
            fallback = None
            for r, sd in enumerate(state.diffs(step)):
                here = f"{sd.check.recorded.file}:{sd.check.recorded.line}"
                for n, d in enumerate(sd.differences):
                    if d.code == f.rule and d.path == f.path:
                        if capture is None or capture == here:
                            return ("diff", r, n)
                        fallback = fallback or ("diff", r, n)
            return fallback
        if tab == "header":
            if f.path:
                root = f.path.split(".", 1)[0].split("[", 1)[0]
                if root in ("tools", "system", "config", "messagePrefix", "messageSuffix"):
                    return ("field", root)
            for j, v in enumerate(state.model.versions):
                if v.seq == f.seq:
                    return ("version", j)
            return None
        if tab == "prefix":
            for j, v in enumerate(state.model.versions):
                if v.seq == f.seq and f.rule == "PFX001":
                    return ("version", j)
            for inst in state.model.instances:
                if inst.seq == f.seq:
                    return ("instance", inst.index)
        return None

    def _finding_status(self, i: int) -> None:
        state = self.state
        assert state is not None
        f = state.findings[i]
        t = styled(f"[{i + 1}/{len(state.findings)}] ", "bold")
        t.append(f"{f.severity} {f.rule}", {"error": "bold red", "warning": "bold #e0af68"}.get(f.severity, "#7dcfff"))
        where = finding_where(f)
        if where:
            t.append(" · " + where, "dim")
        if f.path:
            t.append(" · at ", "dim")
            t.append(safe(f.path), "bold #ff9e64")
        t.append("\n" + safe(f.message))
        self.say(t)

    # -- deep links (--at) --------------------------------------------------------------------------------
    def open_at(self, at: At) -> None:
        """A seq opens its event on the Events tab; TURN.STEP opens the step, on its worst finding when it has one."""
        state = self.state
        if state is None:
            return
        if at.seq is not None:
            if not state.steps or at.seq >= state.model.events:
                self.say(Text(f"--at {at}: this log has no event seq {at.seq} in a step", style="#e0af68"))
                return
            self.goto_event(at.seq, Text(f"--at {at}: event seq {at.seq}", style="bold #7dcfff"))
            return
        st = state.model.step_for(at.turn, at.step)
        if st is None:
            self.say(Text(f"--at {at}: this log has no turn {at.turn} step {at.step}", style="#e0af68"))
            return
        here = state.step_findings.get(st.index, [])
        if here:
            rank = {"error": 0, "warning": 1}
            self.jump_to_finding(min(here, key=lambda i: (rank.get(state.findings[i].severity, 2), i)))
        else:
            self.step_index = st.index

    # -- resume boundaries ------------------------------------------------------------------------------
    def action_resume(self, direction: int) -> None:
        state = self.state
        if state is None:
            return
        firsts = state.instance_first_steps()
        here = self.step_index
        target = None
        if direction > 0:
            target = next((s for s in firsts if s > here), None)
        else:
            target = next((s for s in reversed(firsts) if s < here), None)
        if target is None:
            self.say(Text("no resume boundary " + ("after" if direction > 0 else "before") + " this step", style="dim"))
            return
        if self.category is not None and target not in self.timeline.visible_steps():
            self.category = None
        st = state.steps[target]
        inst = state.model.instances[st.instance] if st.instance is not None else None
        self.step_index = target
        if inst is not None:
            t = styled(f"loop instance {inst.index}: {safe(inst.reason)} snapshot at seq {inst.seq}", "bold #bb9af7")
            if inst.drift:
                t.append(" · drift: " + ", ".join(safe(d) for d in inst.drift), "#e0af68")
            self.say(t)

    # -- filter ------------------------------------------------------------------------------------------
    def action_filter(self) -> None:
        from inspector.screens.dialogs import FilterScreen

        if self.state is None:
            return

        def chosen(category: str | None) -> None:
            self.category = category

        self.app.push_screen(FilterScreen(self.state.categories(), self.category), chosen)

    # -- jumping to events --------------------------------------------------------------------------------
    def goto_event(self, seq: int, why: Text | None = None) -> None:
        state = self.state
        if state is None:
            return
        step = state.step_of_seq(seq)
        if step is None:
            self.say(Text(f"seq {seq} is not in any step's events", style="dim"))
            return
        if self.category is not None and step not in self.timeline.visible_steps():
            self.category = None
        self._events_target = seq
        same = step == self.step_index
        self.step_index = step
        if self.active_tab != "events":
            self.tabs.active = "events"
        elif same:
            self._draw_active(force=True)
        if why is not None:
            self.say(why)

    def action_goto_origin(self) -> None:
        state = self.state
        if state is None or self.step_index < 0:
            return
        tab = self.active_tab
        seq: int | None = None
        what = ""
        if tab in ("request", "events"):
            view = self.query_one(RequestView)
            if tab == "events":
                self.say(
                    Text("already on the events; e jumps from a message, a difference or a header field", style="dim")
                )
                return
            if self._rendered.get("request") != (self._generation, self.step_index):
                self._draw("request")
            key = view.selected_key
            seq = view.origin_of(key)
            what = _part_name(key)
        elif tab == "diff":
            view = self.query_one(DiffView)
            key = view.selected_key
            seq = view.source_of(key)
            if seq is None and isinstance(key, tuple) and key and key[0] == "line":
                seq = self._origin_from_path(key[2])
            what = "the difference"
        elif tab == "header":
            view = self.query_one(HeaderView)
            seq = view.target_of(view.selected_key)
            what = "the header field" if view.field_of(view.selected_key) else "the header event"
        elif tab == "prefix":
            view = self.query_one(PrefixView)
            seq = view.target_of(view.selected_key)
            what = "the prefix"
        elif tab == "findings":
            i = FindingsView.index_of_key(self.query_one(FindingsView).selected_key)
            if i is not None:
                seq = state.findings[i].seq
                what = f"finding {state.findings[i].rule}"
        if seq is None:
            self.say(
                Text(
                    "no producing event for the selection (select a message, a difference or a field first)",
                    style="dim",
                )
            )
            return
        self.goto_event(seq, Text(f"event seq {seq} produced {what}".rstrip(), style="bold #7dcfff"))

    def _origin_from_path(self, path: str) -> int | None:
        state = self.state
        if state is None or not path.startswith("messages["):
            return None
        try:
            i = int(path[len("messages[") : path.index("]")])
        except ValueError:
            return None
        exp = state.rebuilt(self.step_index)
        return state.origin_of_message(exp, i) if exp is not None and i < len(exp.request.get("messages", [])) else None

    def action_when_changed(self) -> None:
        state = self.state
        if state is None or self.step_index < 0:
            return
        if self.active_tab == "request":  # the blame of the part under the cursor answers it
            view = self.query_one(RequestView)
            part = view.part_of(view.selected_key)
            if part is not None and part.seq is not None:
                why = styled(f"{safe(part.path)} last changed at seq {part.seq}", "bold #7dcfff")
                why.append(f" by {safe(part.event)}", "")
                self.goto_event(part.seq, why)
                return
        field = "messagePrefix"
        if self.active_tab == "header":
            view = self.query_one(HeaderView)
            field = view.field_of(view.selected_key) or field
        vi = state.step_version(self.step_index)
        j = state.last_change(field, vi)
        if j is None:
            self.say(Text(f"{safe(field)} was never set by a header event up to this step", style="dim"))
            return
        v = state.model.versions[j]
        why = styled(f"{safe(field)} last changed at seq {v.seq}", "bold #7dcfff")
        why.append(f" by {describe_version(v)} (header version {j}, loop instance {v.instance})", "")
        self.goto_event(v.seq, why)

    # -- search -----------------------------------------------------------------------------------------
    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.value = self.search_query
        box.focus()

    def _close_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = False
        self.timeline.focus()

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        query = event.value
        self._close_search()
        if not query:
            self.search_query, self.search_matches, self.search_pos = "", [], -1
            self.query_one(EventsView).set_highlight(None)
            return
        if query == self.search_query and self.search_matches:
            self.next_match(1)
            return
        self.search_query = query
        self.search_matches = []
        self.search_pos = -1
        self.say(Text(f"searching for {safe(query)!s}…", style="dim"))
        self.run_search(query)

    @work(thread=True, exclusive=True, group="search")
    def run_search(self, query: str) -> None:
        started = time.perf_counter()
        matches = search(self.source, query)
        self.post_message(SearchFinished(query, matches, time.perf_counter() - started))

    def on_search_finished(self, message: SearchFinished) -> None:
        if message.query != self.search_query:
            return
        self.search_matches = message.matches
        self.query_one(EventsView).set_highlight(message.query if message.matches else None)
        if not message.matches:
            self.search_pos = -1
            self.say(Text(f"no event contains “{safe(message.query)}”", style="#e0af68"))
            return
        state = self.state
        start = state.window(self.step_index)[0] if state is not None and self.step_index >= 0 else 0
        self.search_pos = next((i for i, m in enumerate(message.matches) if m.seq >= start), 0) - 1
        self.next_match(1)

    def action_match(self, direction: int) -> None:
        if not self.search_matches:
            self.say(Text("no search yet: / searches message and event text", style="dim"))
            return
        self.next_match(direction)

    def next_match(self, direction: int) -> None:
        """The next (1) or previous (-1) search match, wrapping around."""
        if not self.search_matches:
            return
        self.search_pos = (self.search_pos + direction) % len(self.search_matches)
        m = self.search_matches[self.search_pos]
        why = styled(
            f"“{safe(self.search_query)}”: match {self.search_pos + 1} of {len(self.search_matches)}", "bold #7dcfff"
        )
        why.append(f" · seq {m.seq} {safe(m.type)} · > next, < previous\n", "")
        snippet = Text(safe(m.snippet), style="dim")
        snippet.highlight_words([safe(self.search_query)], MATCH_STYLE, case_sensitive=False)
        why.append_text(snippet)
        self.goto_event(m.seq, why)

    # -- export -------------------------------------------------------------------------------------------
    def action_export(self) -> None:
        state = self.state
        if state is None or self.step_index < 0:
            return
        exp = state.rebuilt(self.step_index)
        if exp is None:
            self.say(Text("no request to export: no header was in force at this step", style="#e0af68"))
            return
        st = state.steps[self.step_index]
        name = _file_name(f"{_log_suffix_free(self.source.path)}.turn{st.turn}-step{st.step}.request.json")
        from inspector.screens.dialogs import ConfirmScreen, ExportScreen

        def chosen(value: str | None) -> None:
            if not value:
                return
            path = Path(value).expanduser()
            path = path if path.is_absolute() else Path.cwd() / path
            if path.exists():
                self.app.push_screen(
                    ConfirmScreen(Text.assemble(safe(path), " exists. Overwrite it?")),
                    lambda yes: self.export_request(path) if yes else self.say(Text("export cancelled", style="dim")),
                )
            else:
                self.export_request(path)

        self.app.push_screen(ExportScreen(str(Path.cwd() / name)), chosen)

    def action_repro(self) -> None:
        """Reduce the log to a redacted repro of the selected finding, in a new folder; show its path."""
        state = self.state
        if state is None or not 0 <= self.finding_pos < len(state.findings):
            self.say(Text("select a finding first (n/N), then R writes its repro", style="#e0af68"))
            return
        self.say(Text("reducing the log to a repro of this finding…", style="#7dcfff"))
        self.write_repro(state.findings[self.finding_pos])

    @work(thread=True, exclusive=True, group="repro")
    def write_repro(self, finding: Any) -> None:
        import tempfile

        from invariants.reduce import FindingNotFound, ReduceInputError, reduce_log
        from invariants.reduce import write_repro as write

        captures = self.options.captures[0] if self.options.captures else None
        try:
            at = None if finding.seq is None else str(finding.seq)
            reduction = reduce_log(self.source.path, finding.rule, at=at, captures=captures, redact=True)
        except (FindingNotFound, ReduceInputError) as e:
            self.app.call_from_thread(self.say, Text(f"no repro: {e}", style="bold red"))
            return
        folder = Path(tempfile.mkdtemp(prefix=f"inspector-repro-{finding.rule}-")).resolve()
        write(reduction, folder)
        m = reduction.manifest
        note = "" if m["redacted"] else " (NOT redacted: redaction lost the finding)"
        sizes = f"{m['events']['before']} -> {m['events']['after']} events"
        done = f"repro of {finding.rule} ({sizes}){note} written to {folder}"
        self.app.call_from_thread(self.say, Text(done, style="green"))

    def export_request(self, path: Path) -> None:
        state = self.state
        if state is None:
            return
        exp = state.rebuilt(self.step_index)
        if exp is None:
            return
        inputs = [*self._paths(), *(Path(r.recorded.file) for r in state.model.requests)]
        if path.resolve() in {p.resolve() for p in inputs}:
            self.say(Text("refusing to overwrite an input (a session log or a capture)", style="bold red"))
            return
        from invariants.gate.report import dumps_json

        try:
            # dumps_json: inert when the file is printed (C1 controls escaped too), and any
            # JSON the log held (ints over 64 bits, lone surrogates) still exports.
            path.write_text(dumps_json(exp.request, indent=True) + "\n", encoding="utf-8")
        except (OSError, TypeError) as exc:
            self.say(Text(f"export failed: {safe(exc)}", style="bold red"))
            return
        self.say(
            Text(
                f"exported the rebuilt request ({len(exp.request.get('messages', []))} messages) to "
                f"{safe(path.resolve())}",
                style="green",
            )
        )
