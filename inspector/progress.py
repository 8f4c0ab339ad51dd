"""Progress of a long command on stderr: a bar on a terminal, a line every few seconds otherwise.

``check``, ``index`` and ``reduce`` tell a :class:`Progress` what is done
(sessions, bytes); it never writes to stdout (the report's), and ``-q``
makes none at all (:func:`progress_for`).  On a terminal it is a
``rich.progress`` bar (sessions done / total, bytes, rate, time left) that
disappears when the command ends; elsewhere (a CI log) one plain line every
:data:`EVERY` seconds, also while nothing is done (a large folder's plan, a
fork pass).  The total of a check is counted by a second walk of the named
paths in a process of its own (the check itself never lists every log), so
the bar starts without one and gains it when the walk is done.  The rate and
the time left are measured from the first item done, not from the start: a
folder planned for seconds before its first session made the first estimate
hundreds of hours.

A display draws from a thread of its own, under :data:`DRAWING`, which a fork
waits for: a ``--jobs`` or index worker forked while that thread held stderr's
lock would have waited for ever on its first line to stderr.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterable, TextIO

from invariants.gate.pipeline import RunObserver

EVERY = 5.0  # seconds between plain progress lines
SETTLE = 1.0  # seconds of items done before a rate is measured from them

DRAWING = threading.Lock()
"""Held while a display writes to its stream; a fork of this process waits for it (and the copy in
the new process is let go), so no worker starts with stderr's lock taken."""
if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(before=DRAWING.acquire, after_in_parent=DRAWING.release, after_in_child=DRAWING.release)


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _duration(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """Counts done (and the total when known) and shows them; :meth:`close` ends the display."""

    def __init__(
        self, what: str, unit: str = "sessions", stream: TextIO | None = None, every: float | None = None
    ) -> None:
        self.what = what
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.every = every if every is not None else EVERY
        self.done = 0
        self.bytes = 0
        self.total: int | None = None
        self.total_bytes: int | None = None
        self.detail = ""  # what else to say (reduce: events left)
        self.started = time.monotonic()
        self.last = self.started
        self.first: tuple[float, int, int] | None = None  # when the first item was done, and the counts then
        self._lock = threading.Lock()

    # what the command tells
    def set_total(self, n: int, nbytes: int | None = None) -> None:
        with self._lock:
            self.total, self.total_bytes = n, nbytes
        self.show()

    def advance(self, n: int = 1, nbytes: int = 0) -> None:
        self.done += n
        self.bytes += nbytes
        now = time.monotonic()
        if self.first is None:
            self.first = (now, self.done, self.bytes)
        if now - self.last >= self.every:
            self.due(now)

    def due(self, now: float) -> None:
        """Show now, unless another thread just did."""
        with self._lock:
            if now - self.last < self.every:
                return
            self.last = now
        self.show()

    def show(self) -> None:
        pass

    def close(self) -> None:
        pass

    # what both displays say
    def _since_first(self) -> tuple[float, int, int] | None:
        """Seconds since the first item was done and what was done since, once :data:`SETTLE` passed."""
        if self.first is None:
            return None
        t, done, nbytes = self.first
        elapsed = time.monotonic() - t
        if elapsed < SETTLE or self.done <= done:
            return None
        return elapsed, self.done - done, self.bytes - nbytes

    def rate(self) -> float:
        """Items a second since the first was done (until then, since the start)."""
        since = self._since_first()
        if since is None:
            return self.done / max(time.monotonic() - self.started, 1e-6)
        return since[1] / since[0]

    def left(self) -> float | None:
        """Seconds left at the rate since the first item was done (by bytes when both totals are known);
        None before that rate is known."""
        since = self._since_first()
        if since is None:
            return None
        elapsed, done, nbytes = since
        if self.total_bytes and nbytes > 0:
            return elapsed * max(self.total_bytes - self.bytes, 0) / nbytes
        if self.total:
            return elapsed * max(self.total - self.done, 0) / done
        return None

    def line(self) -> str:
        total = f"/{self.total}" if self.total is not None else ""
        size = self.detail or _mb(self.bytes)
        text = f"inspector: {self.what} {self.done}{total} {self.unit}, {size}, {self.rate():.0f} {self.unit}/s"
        left = self.left()
        if left is not None:
            text += f", about {_duration(left)} left"
        return text


class PlainProgress(Progress):
    """One line every few seconds (and none for a command that ends sooner), from a thread of its
    own when nothing is done for that long."""

    def __init__(
        self, what: str, unit: str = "sessions", stream: TextIO | None = None, every: float | None = None
    ) -> None:
        super().__init__(what, unit, stream, every)
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.every > 0:
            self._ticker = threading.Thread(target=self._tick, name="inspector-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.every / 5):
            now = time.monotonic()
            if now - self.last >= self.every:
                self.due(now)

    def show(self) -> None:
        if time.monotonic() - self.started < self.every or self._stop.is_set():
            return
        with DRAWING:
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        """No line after this one returns."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()


class BarProgress(Progress):
    """A ``rich.progress`` bar on the terminal ``stream`` (stderr), gone when the command ends.  It is
    drawn :data:`REFRESH` times a second by a thread of this display's (rich's own would draw
    without :data:`DRAWING`)."""

    def __init__(
        self, what: str, unit: str = "sessions", stream: TextIO | None = None, every: float | None = 0.1
    ) -> None:
        super().__init__(what, unit, stream, every)
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        self.bar = Bar(
            TextColumn(f"inspector {what}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.fields[total_text]} " + unit),
            TextColumn("{task.fields[bytes_text]}"),
            TextColumn("{task.fields[rate_text]}"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            auto_refresh=False,
        )
        self.task = self.bar.add_task(what, total=None, total_text="?", bytes_text="", rate_text="")
        with DRAWING:
            self.bar.start()
        self._stop = threading.Event()
        self._drawer = threading.Thread(target=self._draw, name="inspector-progress", daemon=True)
        self._drawer.start()

    def _draw(self) -> None:
        while not self._stop.wait(1 / REFRESH):
            with DRAWING:
                self.bar.refresh()

    def show(self) -> None:
        self.bar.update(
            self.task,
            completed=self.done,
            total=self.total,
            total_text="?" if self.total is None else str(self.total),
            bytes_text=self.detail or _mb(self.bytes),
            rate_text=f"{self.rate():.0f} {self.unit}/s",
        )

    def close(self) -> None:
        self._stop.set()
        self._drawer.join()
        self.show()
        with DRAWING:
            self.bar.stop()


REFRESH = 10  # bar drawings a second


def progress_for(what: str, quiet: bool, unit: str = "sessions", stream: TextIO | None = None) -> Progress | None:
    """The display for a command: none when ``quiet``, a bar when ``stream`` (stderr) is a terminal that
    can draw one, else plain lines."""
    if quiet:
        return None
    stream = stream if stream is not None else sys.stderr
    return BarProgress(what, unit, stream) if _draws(stream) else PlainProgress(what, unit, stream)


def _draws(stream: TextIO) -> bool:
    """Whether a bar can be drawn on ``stream``: a terminal that moves its cursor, as rich judges it.
    ``TERM=dumb`` (an Emacs shell, a CI runner's pseudo-terminal) is a terminal where rich draws
    nothing, so a bar there left the whole run silent: it gets the plain lines."""
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    from rich.console import Console

    console = Console(file=stream)
    return console.is_terminal and not console.is_dumb_terminal


def count_in_background(progress: Progress, paths: Iterable[Any]) -> Callable[[], None]:
    """Count the logs under ``paths`` and their bytes, and give the totals to ``progress`` when done
    (the check never lists every log, so this is its total); returns what stops the count.

    Named log files are counted here.  Anything else (a folder, a store, a URL) is walked once more
    by a process of its own (:mod:`inspector.count_logs`): a thread of this one took the GIL from the
    check at every file it listed, which made a check of 10,000 sessions 20-30 % slower and gave
    the total only as the check ended."""
    named = [str(p) for p in paths]
    files = _named_log_files(named)
    if files is not None:
        progress.set_total(len(files), sum(files.values()) or None)
        return lambda: None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "inspector.count_logs", *named],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
    except OSError:  # a count is a nicety: never let it break the command
        return lambda: None

    def read() -> None:
        assert proc.stdout is not None
        said = proc.stdout.read().split()
        if proc.wait() == 0 and len(said) == 2 and all(x.isdigit() for x in said):
            progress.set_total(int(said[0]), int(said[1]) or None)

    reader = threading.Thread(target=read, name="inspector-count", daemon=True)
    reader.start()

    def stop() -> None:
        proc.kill()
        reader.join()

    return stop


def _named_log_files(named: list[str]) -> dict[str, int] | None:
    """Each named path's real path and size, when every one is a local log file; else None."""
    from invariants.read.source import is_log_name, is_url

    files: dict[str, int] = {}
    for p in named:
        if is_url(p) or not is_log_name(os.path.basename(p)):
            return None
        try:
            st = os.stat(p)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        files[os.path.realpath(p)] = st.st_size
    return files


class CheckObserver(RunObserver):
    """A check's :class:`~invariants.gate.pipeline.RunObserver`: each session done advances ``progress``."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def session(self, summary: Any) -> None:
        self.progress.advance(1, summary.bytes)
