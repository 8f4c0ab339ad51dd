"""The session screen's workers that check the log: the first check, a huge log's preview
(its head replayed on the first frame, its findings filled in as the whole check reads on),
``--follow`` re-checks as the log grows (woken by the file's events through ``watchfiles``, not
by polling; resuming the replay over the appended bytes when it can, :mod:`invariants.gate.follow`),
and the token counts of the token bar.

The check runs in a worker thread, started after the first frame is drawn, so the first
screen appears before a large log is read; workers post messages, the screen sets its state.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any, Iterator

from rich.text import Text
from textual import work
from textual.worker import get_current_worker

from inspector.messages import (
    FindingsArrived,
    SessionLoaded,
    SessionLoadFailed,
    SessionPreviewed,
    TokensCounted,
)
from inspector.screens.session.navigation import SessionNavigation, _finding_id
from inspector.screens.state import SessionState
from inspector.widgets.findings_view import finding_where
from inspector.widgets.jsontext import count, safe
from inspector.widgets.token_bar import TokenBar
from invariants.analysis.events_view import LineIndex
from invariants.gate.pipeline import check
from invariants.gate.result import CheckResult
from invariants.read.source import LogSource
from invariants.replay.session import replay

FOLLOW_POLL = 0.3  # seconds between looks at a followed log that file events cannot watch (a URL)
FOLLOW_DEBOUNCE_MS = 50  # file events this close together are one look (a writer appends in bursts)
FOLLOW_IDLE_MS = 2000  # with no event for this long, look anyway (a file system that drops events)
GC_EVERY = 30.0  # seconds between full collections while following
PREVIEW_FROM = 8 << 20  # a log this big gets a first screen from its head while the whole log is checked
PREVIEW_BYTES = 1 << 20  # the head replayed for it: more steps than a screen shows


class SessionLoading(SessionNavigation):
    """Checking the log (once, from its head first, or again as it grows) and counting its tokens."""

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
            self.call_after_refresh(self.timeline.scroll_end, animate=False, immediate=True, force=True)
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
        t = Text(
            f"following: +{count(grown, 'event')}, {steps:+d} step{'s' if abs(steps) != 1 else ''} "
            f"({how} in {elapsed * 1000:.0f} ms)",
            style="#7dcfff",
        )
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

    # -- follow ---------------------------------------------------------------------------
    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.source.path.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def _changes(self, worker: Any) -> Iterator[object]:
        """One item each time the followed log may have changed: its folder's file events (``watchfiles``:
        inotify, FSEvents, ...; the folder, because a log may be replaced by a rename), or, where there are
        none to watch (a URL), a look every ``FOLLOW_POLL`` seconds.  Ends when the worker is cancelled."""
        path = self.source.path
        if isinstance(path, Path):
            import watchfiles

            name = path.name

            def ours(_change: object, changed: str) -> bool:  # the log, or its database's write-ahead log
                return os.path.basename(changed) in (name, name + "-wal")

            class Stop:  # watchfiles stops once is_set() is true
                def is_set(self) -> bool:
                    return worker.is_cancelled

            yield from watchfiles.watch(
                path.parent,
                watch_filter=ours,
                debounce=FOLLOW_DEBOUNCE_MS,
                stop_event=Stop(),
                rust_timeout=FOLLOW_IDLE_MS,
                yield_on_timeout=True,
                recursive=False,
                raise_interrupt=False,
            )
            return
        while not worker.is_cancelled:
            time.sleep(FOLLOW_POLL)
            yield None

    @work(thread=True, exclusive=True, group="follow")
    def follow_log(self) -> None:
        worker = get_current_worker()
        last = self._stamp()
        for _ in self._changes(worker):
            if worker.is_cancelled:
                return
            stamp = self._stamp()
            if stamp is None or stamp == last:
                continue
            if not self.source.compressed and not self._ends_with_newline():
                continue  # a line is being written: the rest of it is another event
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
            if self.status.plain == "counting tokens…":  # done: the status says where the selection is again
                self._settle_status(force=True)
