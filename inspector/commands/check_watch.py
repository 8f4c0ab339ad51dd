"""``inspector check --watch``: check, then check again whenever a log or capture changes, printing only new findings.

The rounds are :class:`invariants.gate.follow.Watch`'s: a grown log is
resumed over its appended events, an unchanged one keeps its model, and each
round's result is what the gate would give for the logs at that moment.  The
changes come from :func:`changes` (``watchfiles``, imported only here); a test
hands :func:`watch` any iterable of batches instead.  Ctrl-C stops the watch:
a last round reads the logs as they are (end-of-log findings are reported
then), the summary follows, and the exit code is the gate's for that round.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator, TextIO

from invariants.model.inert import inert

from .common import fail

# a finding per line (or a few): they can be printed as they come
STREAM_FORMATS = ("text", "jsonl", "github", "concise")


def usage_problem(args: argparse.Namespace, fmt: str) -> str | None:
    """Why these flags cannot be watched, or None."""
    for flag, attr in (("--output", "output"), ("--write-baseline", "write_baseline"), ("--ledger", "ledger")):
        if getattr(args, attr, None):
            return f"--watch prints findings as they come; it cannot be combined with {flag}"
    if args.statistics:
        return "--watch prints findings as they come; it cannot be combined with --statistics"
    if fmt not in STREAM_FORMATS:
        return f"--watch prints findings as they come: use --format {', '.join(STREAM_FORMATS)}, not {fmt}"
    return None


def changes(paths: list[str], stop_event=None) -> Iterator[set]:
    """Batches of file-system changes to the logs, databases and captures under ``paths`` (``watchfiles``)."""
    import watchfiles

    from invariants.read.source import SQLITE_SUFFIXES, is_capture_name, is_log_name

    def relevant(_change, path: str) -> bool:
        name = os.path.basename(path)
        base = name[: -len("-wal")] if name.endswith("-wal") else name
        return is_log_name(name) or is_capture_name(name) or base.endswith(SQLITE_SUFFIXES)

    # A file may be replaced by a rename: watch its folder, which outlives it.
    targets = sorted({str(Path(p).parent if Path(p).is_file() else Path(p)) for p in paths})
    return watchfiles.watch(*targets, watch_filter=relevant, stop_event=stop_event, raise_interrupt=True)


def watch(
    args: argparse.Namespace,
    cfg,
    batches: Iterable[object] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
):
    """Run the watch; returns ``(exit code, the Watch)``.  ``batches`` default to :func:`changes`."""
    from invariants.gate.follow import Follow, Watch
    from invariants.gate.formats import ReportContext, render
    from invariants.gate.report import finding_lines, summary_line
    from invariants.gate.result import CheckOptions, CheckResult

    out = out or sys.stdout
    err = err or sys.stderr
    fmt = cfg.format
    follow = Follow(
        args.paths, CheckOptions(captures=args.captures, profile=cfg.profile), config=cfg, allow_empty=args.allow_empty
    )
    w = Watch(follow)
    from .check import report_root

    ctx = ReportContext(fail_on=cfg.fail_on, verbose=args.verbose, base_dir=report_root(args, cfg))

    def last() -> CheckResult:
        """The result of the round just run (every caller runs after one)."""
        if w.result is None:
            raise RuntimeError("the watch has run no round yet")
        return w.result

    def show(new: list) -> None:
        if not new:
            return
        partial = replace(last(), findings=new)
        text = "\n".join(finding_lines(partial, args.verbose)) if fmt == "text" else render(partial, fmt, ctx)
        out.write(text + "\n")
        out.flush()

    def note(text: str) -> None:
        if not args.quiet:
            print(inert(f"inspector: {text}"), file=err, flush=True)

    problems: set[str] = set()

    def report_problems() -> None:
        for p in last().problems:
            if p not in problems:
                problems.add(p)
                fail(p)

    try:
        for new in w.rounds(changes(args.paths) if batches is None else batches):
            report_problems()
            show(new)
            stats = follow.stats
            if stats.rounds == 1:
                s = last().summary()
                note(
                    f"watching {', '.join(args.paths)}: {s['sessions']} session(s), {s['events']} events (Ctrl-C stops)"
                )
            else:
                note(f"round {stats.rounds}: {stats.last_events_replayed} event(s) replayed, {len(new)} new finding(s)")
    except KeyboardInterrupt:
        pass
    show(w.round(final=True))
    report_problems()
    result = last()
    if fmt == "text":
        out.write(summary_line(result) + "\n")
    stats = follow.stats
    note(
        f"{summary_line(result)}; watched {stats.rounds} round(s), {stats.events_replayed} event(s) replayed"
        if fmt != "text"
        else f"watched {stats.rounds} round(s), {stats.events_replayed} event(s) replayed"
    )
    if result.problems:
        return 2, w
    if args.exit_zero:
        return 0, w
    return (1 if result.failed(cfg.fail_on) else 0), w


def run(args: argparse.Namespace, cfg) -> int:
    problem = usage_problem(args, cfg.format)
    if problem:
        return fail(problem)
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        return fail("--watch needs the watchfiles package (python3 -m pip install watchfiles)")
    from invariants.gate.baseline import BaselineError

    try:
        code, _ = watch(args, cfg)
    except BaselineError as exc:
        return fail(str(exc))
    return code
