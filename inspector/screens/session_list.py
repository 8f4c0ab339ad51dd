"""The session list: every log under a folder or sessions root, checked one by one.

Rows appear as soon as each log's header is read, and fill in as each log is
checked in a worker thread (events, steps, resumes, findings by severity), so
a big root is usable at once.  The list sorts (``s`` cycles the column, ``r``
reverses) and filters (``/``); forked children sit under their parent.
Enter opens the session screen.

When an index (``inspector index``) covers the folder, the rows come from it
at once, read-only; a row whose file changed since it was indexed is marked
stale and re-checked live, and a log the index does not know is checked as
without an index.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input

from inspector.deeplink import At
from inspector.messages import SessionChosen, SessionScanFinished, SessionSummaryReady
from inspector.screens.state import check_input, session_findings
from inspector.widgets.jsontext import safe
from inspector.widgets.session_table import COLUMNS, SessionRow, SessionTable, header_text, layout, shown_path
from inspector.widgets.status import SessionBar
from invariants.gate.config import Config
from invariants.gate.pipeline import check, empty_inputs
from invariants.gate.result import CheckOptions
from invariants.read.discover import discover
from invariants.read.load import LogReader
from invariants.read.source import LogPath, LogSource, absolute_name, log_path

SORT_KEYS = ["order"] + [key for key, _, _, _ in COLUMNS]


def _sort_value(s: SessionRow, key: str, root: LogPath | None = None):
    if key == "order":
        return s.order
    if key == "errors":  # worst first: errors (an unreadable log counts as one), then warnings, then infos
        return (-(s.errors or (1 if s.problem else 0)), -s.warnings, -s.infos)
    if key == "file":
        return shown_path(s, root)
    if key == "created":
        return s.created if isinstance(s.created, (int, float)) and not isinstance(s.created, bool) else float("-inf")
    v = getattr(s, key)
    if v is None:
        return -1 if key not in ("id", "cwd", "file") else ""
    return v


def arrange(
    summaries: list[SessionRow], key: str, reverse: bool, needle: str, root: LogPath | None = None
) -> list[tuple[SessionRow, int]]:
    """Sorted, filtered rows with forked children under their parent (a matching child keeps its parent shown)."""
    by_id = {s.id: s for s in summaries}
    children: dict[str, list[SessionRow]] = {}
    roots: list[SessionRow] = []
    for s in summaries:
        if s.parent and s.parent in by_id and s.parent != s.id:
            children.setdefault(s.parent, []).append(s)
        else:
            roots.append(s)
    needle = needle.casefold()

    def matches(s: SessionRow) -> bool:
        return (
            not needle
            or needle in s.id.casefold()
            or needle in (s.cwd or "").casefold()
            or needle in shown_path(s, root).casefold()
        )

    def keep(s: SessionRow, seen: set[str]) -> bool:
        if s.id in seen:
            return False
        return matches(s) or any(keep(c, seen | {s.id}) for c in children.get(s.id, ()))

    def order(items: list[SessionRow]) -> list[SessionRow]:
        return sorted(items, key=lambda s: (_sort_value(s, key, root), s.order), reverse=reverse)

    out: list[tuple[SessionRow, int]] = []

    def walk(s: SessionRow, depth: int, seen: set[str]) -> None:
        out.append((s, depth))
        for c in order(children.get(s.id, [])):
            if keep(c, seen | {s.id}):
                walk(c, depth + 1, seen | {s.id})

    for r in order(roots):
        if keep(r, set()):
            walk(r, 0, set())
    return out


class SessionListScreen(Screen):
    BINDINGS = [
        Binding("s", "sort", "Sort"),
        Binding("r", "reverse", "Reverse"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    PALETTE = {"filter": ("Filter sessions", "Show only the sessions whose id, cwd or file contains a text")}

    sort_key: reactive[str] = reactive("errors", init=False)  # worst first: what a newcomer looks for
    reverse: reactive[bool] = reactive(False, init=False)
    needle: reactive[str] = reactive("", init=False)

    def __init__(
        self,
        root: LogPath,
        *,
        options: CheckOptions | None = None,
        config: Config | None = None,
        session: str | None = None,
        follow: bool = False,
        db: Path | None = None,
        at: At | None = None,
    ) -> None:
        super().__init__()
        self.root = root
        self.at = at  # --at: applies to the first session opened from the list
        self.db = db  # None: ./inspector-index.db when it exists
        self.index_used: Path | None = None  # the index the rows came from, once read
        self.index_rows = 0
        self.index_stale = 0
        self.options = options or CheckOptions()
        self.config = config  # what to report, as the gate does (None: every finding)
        self.wanted = session
        self.follow = follow
        self.summaries: dict[tuple[Path, str | None], SessionRow] = {}
        self._dirty = False
        self._to_top = False  # the next redraw puts the cursor on the first row (a sort)
        self._opened = False
        self.finished = False
        self.elapsed: float | None = None
        self.scan_problems: list[str] = []

    def compose(self) -> ComposeResult:
        yield SessionBar(Text(f" sessions under {safe(self.root)} · looking…"), id="list-bar")
        yield SessionBar(Text(""), id="list-header")
        yield SessionTable(id="sessions", root=self.root)
        yield Input(placeholder="filter by id, cwd or file; Enter applies, Escape clears", id="list-filter")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(SessionTable).focus()
        self.set_interval(0.1, self._flush)
        self.scan()

    def on_resize(self) -> None:
        self._draw_header()

    # -- scanning ----------------------------------------------------------------
    def _index_path(self) -> Path | None:
        """The index to read: ``--db``, else the default file in the working directory, if it covers the root."""
        from inspector.index import DEFAULT_DB, covers, index_info
        from invariants.gate.policy import FindingPolicy

        if self.options.captures is not None or self.options.profile is not None:
            return None  # the index was checked without these options
        db = self.db if self.db is not None else Path(DEFAULT_DB)
        try:
            if not db.is_file() or not covers(db, self.root):
                return None
            info = index_info(db)
            same = info is not None and info["meta"].get("policy") == FindingPolicy.of(self.config).key()
            return db if same else None  # an index kept under another configuration counts other findings
        except Exception:  # a broken index is no index
            return None

    def _from_index(self, db: Path) -> dict[tuple[str, str | None], SessionRow]:
        """Rows from the index (read-only), keyed by (absolute file, member)."""
        from inspector.index import list_sessions

        out: dict[tuple[str, str | None], SessionRow] = {}
        for row in list_sessions(db, under=self.root, check_fresh=True, order="path"):
            member = row.get("member")
            path = log_path(row["file"])
            try:  # named as discovery names it, so the live scan finds the same row (a URL is named as written)
                if isinstance(path, Path) and isinstance(self.root, Path):
                    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
                    path = self.root / rel if not rel.startswith("..") else path
            except ValueError:
                pass
            if path == self.root / ".":
                path = self.root
            s = SessionRow(
                -1,
                path,
                str(row.get("uid") or member or path.name),
                member=member,
                cwd=row.get("cwd") if isinstance(row.get("cwd"), str) else None,
                created=row.get("created_at"),
                parent=row.get("parent_session") if isinstance(row.get("parent_session"), str) else None,
                events=row.get("events"),
                steps=row.get("steps"),
                resumes=row.get("resumes"),
                errors=row.get("errors") or 0,
                warnings=row.get("warnings") or 0,
                infos=row.get("infos") or 0,
                profile=row.get("profile"),
                loaded=not row.get("stale"),
                indexed=True,
                stale=bool(row.get("stale")),
            )
            out[(absolute_name(log_path(row["file"])), member)] = s
        return out

    @work(thread=True, exclusive=True, group="scan")
    def scan(self) -> None:
        started = time.perf_counter()
        indexed: dict[tuple[str, str | None], SessionRow] = {}
        db = self._index_path()
        if db is not None:
            try:
                indexed = self._from_index(db)
            except Exception:  # unreadable index: the live scan below does it all
                indexed = {}
            if indexed:
                self.index_used, self.index_rows = db, len(indexed)
                self.index_stale = sum(1 for s in indexed.values() if s.stale)
                for s in indexed.values():
                    self.post_message(SessionSummaryReady(s))
        notes: list[str] = []  # a FIFO or device named like a log: skipped, and said in the status bar
        sources, problems = discover([self.root], notes)
        problems.extend(notes)
        problems += empty_inputs([check_input(self.root)], sources)  # what `check` says of a folder without logs
        heads: list[SessionRow] = []
        fresh: set[tuple[LogPath, str | None]] = set()  # rows the index answered: no live check
        for i, src in enumerate(sources):
            member = src.member
            known = indexed.pop((absolute_name(src.path), member), None)
            if known is not None and not known.stale:
                s = replace(known, order=i)
                fresh.add((s.path, s.member))
            elif known is not None:  # changed since indexed: its header again, then a live check
                s = replace(self._head(i, src), indexed=True, stale=True)
            else:
                s = self._head(i, src)
            heads.append(s)
            self.post_message(SessionSummaryReady(s))
        for s in indexed.values():  # indexed, but discovery did not find it
            if s.stale:
                self.post_message(
                    SessionSummaryReady(replace(s, problem="no longer on disk (the index is stale)", loaded=True))
                )
        if not self._opened:
            wanted = [s for s in heads if self.wanted is not None and s.id == self.wanted]
            if wanted or (self.wanted is None and len(heads) == 1):
                target = (wanted or heads)[0]
                self._opened = True
                self.post_message(SessionChosen(target.path, target.id))
            elif self.wanted is not None:
                problems.append(f"no session with id {self.wanted!r} under {self.root}")
        by_path: dict[LogPath, list[SessionRow]] = {}
        for s in heads:
            if not s.problem and (s.path, s.member) not in fresh:
                by_path.setdefault(s.path, []).append(s)
        for path, group in by_path.items():  # one check per file: a database holds many sessions
            try:
                result = check([check_input(path)], self.options, config=self.config)
            except Exception as exc:  # one bad log must not stop the list
                for s in group:
                    self.post_message(
                        SessionSummaryReady(replace(s, problem=f"{type(exc).__name__}: {exc}", loaded=True))
                    )
                continue
            if result.sessions:  # what the check could not read beside a readable log (e.g. a capture file)
                problems.extend(p for p in result.problems if p not in problems)
            for s in group:
                summary = next((m for m in result.sessions if m.member == s.member), None)
                if summary is None:
                    self.post_message(
                        SessionSummaryReady(
                            replace(s, problem="; ".join(result.problems) or "not readable", loaded=True)
                        )
                    )
                    continue
                sev = {"error": 0, "warning": 0, "info": 0}
                for f in session_findings(result, summary):
                    sev[f.severity] = sev.get(f.severity, 0) + 1
                self.post_message(
                    SessionSummaryReady(
                        replace(
                            s,
                            events=summary.events,
                            steps=summary.steps,
                            resumes=len(summary.resumes),
                            errors=sev["error"],
                            warnings=sev["warning"],
                            infos=sev["info"],
                            profile=summary.profile,
                            loaded=True,
                        )
                    )
                )
        self.post_message(SessionScanFinished(len(heads), time.perf_counter() - started, problems))

    @staticmethod
    def _head(order: int, src: LogSource) -> SessionRow:
        reader = LogReader(src)
        member = src.member
        try:
            next(iter(reader.iter_objects()), None)
        except Exception as exc:  # unreadable file or database: shown as such, never fatal
            return SessionRow(
                order, src.path, member or src.path.name, member=member, problem=f"{type(exc).__name__}: {exc}"
            )
        h = reader.header
        if h is None:
            return SessionRow(order, src.path, member or src.path.name, member=member, problem="no session header")
        return SessionRow(
            order,
            src.path,
            h.id,
            member=member,
            cwd=h.cwd if isinstance(h.cwd, str) else None,
            created=h.created_at,
            parent=h.parent_session if isinstance(h.parent_session, str) else None,
        )

    def on_session_summary_ready(self, message: SessionSummaryReady) -> None:
        self.summaries[(message.summary.path, message.summary.member)] = message.summary
        self._dirty = True

    def on_session_scan_finished(self, message: SessionScanFinished) -> None:
        self.finished = True
        self.elapsed = message.elapsed
        if not message.count:
            table = self.query_one(SessionTable)
            said = "; ".join(message.problems) or f"no session logs under {self.root}"
            table.placeholder = f"{said} (looked for .jsonl, .jsonl.zstd and session databases)"
            table.refresh()
        self._dirty = True
        self._flush()
        self.scan_problems = message.problems
        self._draw_bar()

    def _flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        summaries = list(self.summaries.values())
        kids: dict[str, int] = {}
        for s in summaries:
            if s.parent:
                kids[s.parent] = kids.get(s.parent, 0) + 1
        for s in summaries:
            s.forks = kids.get(s.id, 0)
        top, self._to_top = self._to_top, False
        self.query_one(SessionTable).set_rows(
            arrange(summaries, self.sort_key, self.reverse, self.needle, self.root), top=top
        )
        self._draw_bar()
        self._draw_header()

    def _draw_bar(self) -> None:
        """How many sessions there are, how many the filter shows, how far the check is."""
        summaries = self.summaries.values()
        total = len(summaries)
        bar = Text(f" sessions under {safe(self.root)}")
        if self.needle:
            shown = sum(1 for s, _ in self.query_one(SessionTable).rows)
            bar.append(f" · {shown} of {total} session{'s' if total != 1 else ''}", "bold #e0af68")
            bar.append(f" match “{safe(self.needle)}”", "#e0af68")
        if not self.finished:
            bar.append(f" · checked {sum(1 for s in summaries if s.loaded)} of {total}…")
        else:
            if not self.needle:
                bar.append(f" · {total} session{'s' if total != 1 else ''} checked")
            bar.append(" · Enter opens one")
        bar.append_text(self._index_note())
        if self.scan_problems:
            bar.append(" · " + safe("; ".join(self.scan_problems)), "bold #e0af68")
        self.query_one("#list-bar", SessionBar).show(bar)

    def _index_note(self) -> Text:
        """Where the rows come from, when an index gave them."""
        if self.index_used is None:
            return Text("")
        note = f" · from the index {safe(self.index_used)} ({self.index_rows} row(s)"
        note += f", {self.index_stale} stale, re-checked live)" if self.index_stale else ")"
        return Text(note, style="#7dcfff")

    def _draw_header(self) -> None:
        table = self.query_one(SessionTable)
        self.query_one("#list-header", SessionBar).show(
            header_text(table.size.width or self.size.width, self.sort_key, self.reverse)
        )

    # -- opening -------------------------------------------------------------------
    def on_session_chosen(self, message: SessionChosen) -> None:
        from inspector.screens.session import SessionScreen

        summary = next(
            (s for s in self.summaries.values() if s.path == message.path and s.id == message.session_id), None
        )
        src = LogSource(message.path, self.root, summary.member if summary is not None else None)
        at, self.at = self.at, None
        self.app.push_screen(
            SessionScreen(src, options=self.options, config=self.config, follow=self.follow, from_list=True, at=at)
        )

    # -- sorting and filtering -------------------------------------------------------
    def action_sort(self) -> None:
        """The next column shown (a column that gave way to a narrow screen is not sorted by)."""
        table = self.query_one(SessionTable)
        shown = {COLUMNS[i][0] for i, _ in layout(table.size.width or self.size.width)}
        keys = [k for k in SORT_KEYS if k == "order" or k in shown]
        at = keys.index(self.sort_key) if self.sort_key in keys else 0
        self.reverse = False  # each column starts in its natural order (findings: worst first)
        self.sort_key = keys[(at + 1) % len(keys)]

    def action_reverse(self) -> None:
        self.reverse = not self.reverse

    def watch_sort_key(self) -> None:
        self._dirty = self._to_top = True  # after a sort the top row is the one highlighted
        self._flush()

    def watch_reverse(self) -> None:
        self._dirty = self._to_top = True
        self._flush()

    def watch_needle(self) -> None:
        self._dirty = True
        self._flush()

    def action_filter(self) -> None:
        box = self.query_one("#list-filter", Input)
        box.display = True
        box.value = self.needle
        box.focus()

    @on(Input.Changed, "#list-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.needle = event.value

    @on(Input.Submitted, "#list-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.query_one(SessionTable).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#list-filter", Input)
        box.value = ""
        box.display = False
        self.needle = ""
        self.query_one(SessionTable).focus()

    def action_help(self) -> None:
        from inspector.screens.dialogs import LIST_KEYS, HelpScreen

        self.app.push_screen(HelpScreen("keys of the session list", LIST_KEYS))

    async def action_quit(self) -> None:
        self.app.exit()
