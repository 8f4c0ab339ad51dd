"""The session screen's writers: the rebuilt request of a step (``x``) and a redacted repro
of the selected finding (``R``, :mod:`invariants.reduce`, in a worker).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work

from inspector.screens.session.display import SessionDisplay
from inspector.screens.state import kept
from inspector.widgets.jsontext import count, safe
from invariants.read.source import LogPath, strip_log_suffix


def _log_suffix_free(path: LogPath) -> str:
    return strip_log_suffix(path.name)


def _file_name(name: str) -> str:
    """A file name from log values (turn and step are the log's): no separators, no controls."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


class SessionExport(SessionDisplay):
    """Writing what the screen shows to files the user names (never over an input)."""

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

        log, captures = self.source.path, self.options.captures[0] if self.options.captures else None
        if not isinstance(log, Path) or not (captures is None or isinstance(captures, Path)):
            self.app.call_from_thread(self.say, Text("no repro: a repro is reduced from local files, not URLs", "red"))
            return
        try:
            at = None if finding.seq is None else str(finding.seq)
            reduction = reduce_log(log, finding.rule, at=at, captures=captures, redact=True)
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
        inputs = [Path(p) for p in self._paths()] + [Path(kept(r).file) for r in state.model.requests]
        if _same_file(path, inputs):
            self.say(Text("refusing to overwrite an input (a session log or a capture)", style="bold red"))
            return
        from invariants.gate.report import dumps_json
        from invariants.model.atomic import write_atomic

        try:
            # dumps_json: inert when the file is printed (C1 controls escaped too), and any
            # JSON the log held (ints over 64 bits, lone surrogates) still exports.  Written
            # whole or not at all, never through a link.
            write_atomic(path, dumps_json(exp.request, indent=True) + "\n")
        except (OSError, TypeError) as exc:
            self.say(Text(f"export failed: {safe(exc)}", style="bold red"))
            return
        self.say(
            Text(
                f"exported the rebuilt request ({count(len(exp.request.get('messages', [])), 'message')}) to "
                f"{safe(path.resolve())}",
                style="green",
            )
        )


def _same_file(path: Path, inputs: list[Path]) -> bool:
    """Whether ``path`` is one of ``inputs``, by name (links resolved) or as the same file (a hard link)."""
    real = os.path.realpath(path)
    if real in {os.path.realpath(p) for p in inputs}:
        return True
    try:
        st = os.stat(path)
    except OSError:
        return False
    for p in inputs:
        try:
            other = os.stat(p)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False
