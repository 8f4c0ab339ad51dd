"""The session screen's moves: steps, findings, resume boundaries, the filter, jumps to the
event that produced a part of the request (``e``, ``w``), deep links (``--at``) and search.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import on, work
from textual.widgets import Input

from inspector.deeplink import At
from inspector.messages import BlockActivated, BlockSelected, SearchFinished
from inspector.screens.session.display import SessionDisplay
from inspector.screens.state import describe_version, finding_tab
from inspector.widgets.diff_view import DiffView
from inspector.widgets.events_view import MATCH_STYLE, EventsView
from inspector.widgets.findings_view import FindingsView, finding_where
from inspector.widgets.header_view import HeaderView
from inspector.widgets.jsontext import safe, styled
from inspector.widgets.prefix_view import PrefixView
from inspector.widgets.request_view import RequestView
from invariants.analysis.events_view import search


def _part_name(key: Any) -> str:
    """A Request tab line in words: ``message 2``, ``temperature``."""
    if isinstance(key, tuple) and len(key) == 2:
        return f"message {key[1]}" if key[0] == "message" else safe(str(key[1]))
    return ""


def _finding_id(f: Any) -> tuple:
    """What makes a finding the same one across re-checks of a growing log: its rule, its event and (for a
    request) its capture line; not its words or its turn and step, which a re-check may attribute anew."""
    capture = f.detail.get("capture") if isinstance(f.detail, dict) else None
    return (f.rule, f.seq, capture if isinstance(capture, str) else None)


class SessionNavigation(SessionDisplay):
    """Moving through the session: every key that changes what is selected or shown."""

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
        self._settle_status()

    def _settle_status(self, force: bool = False) -> None:
        """Back to where the selection is, once the word about an earlier jump (or, ``force``, a finished
        job) is stale."""
        if not (force or self._transient):
            return
        if self.state is not None and 0 <= self.step_index < len(self.state.steps) and not self.previewing:
            self._step_status(self.step_index)

    def action_back(self) -> None:
        search = self.query_one("#search", Input)
        if search.display:
            self._close_search()
            return
        if self.focused is not self.timeline:
            self.timeline.focus()
            self._settle_status()
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
                    if (s := state.finding_step[i]) is not None and (s >= here if direction > 0 else s <= here)
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
                here = f"{sd.recorded.file}:{sd.recorded.line}"
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
        # by priority, for a narrow terminal: the rule and its path, the sentence, then where (what is cut)
        t = styled(f"[{i + 1}/{len(state.findings)}] ", "bold")
        t.append(f"{f.severity} {f.rule}", {"error": "bold red", "warning": "bold #e0af68"}.get(f.severity, "#7dcfff"))
        if f.path:
            t.append(" at ", "dim")
            t.append(safe(f.path), "bold #ff9e64")
        t.append(": " + safe(f.message))
        where = finding_where(f)
        if where:
            t.append("\n" + where, "dim")
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
            self.say(why, transient=True)

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
            diff = self.query_one(DiffView)
            key = diff.selected_key
            edit = diff.edit_of(key)
            seq = diff.source_of(key)
            if edit is not None and seq is None:  # a difference no event made: say why
                self.say(Text(edit.no_event(), style="#e0af68"))
                return
            if seq is None and isinstance(key, tuple) and key and key[0] == "line":
                if key[3] is None:  # a line only the recorded request has
                    self.say(
                        Text("this line is only in the recorded request: no event of the log made it", style="#e0af68")
                    )
                    return
                seq = self._origin_from_path(key[2])
            what = safe(edit.produced()) if edit is not None else "the difference"
        elif tab == "header":
            header = self.query_one(HeaderView)
            seq = header.target_of(header.selected_key)
            what = "the header field" if header.field_of(header.selected_key) else "the header event"
        elif tab == "prefix":
            prefix = self.query_one(PrefixView)
            seq = prefix.target_of(prefix.selected_key)
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
            header = self.query_one(HeaderView)
            field = header.field_of(header.selected_key) or field
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
