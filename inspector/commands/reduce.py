"""``inspector reduce LOG --rule CODE --output DIR``: the smallest log (and capture) that still shows a finding,
optionally redacted, with a manifest and a regression test.  Exit 0 reproduced, 1 the finding is not in the log,
2 usage error, unreadable input or a non-empty output folder (without ``--force``).  The inputs are never written."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reduce",
        help="reduce a log to a minimal repro of one finding",
        description="Reduce a log to the smallest one that keeps a finding; write it, repro.json and maybe a test.",
    )
    p.add_argument("log", help="the session log")
    p.add_argument("--captures", metavar="FILE", help="the capture file (default: the one beside the log)")
    p.add_argument("--rule", required=True, help="the rule code of the finding, e.g. DIV001")
    p.add_argument("--at", metavar="TURN.STEP|SEQ", help="which finding of that rule (default: the first)")
    p.add_argument("--output", required=True, metavar="DIR", help="folder for the repro (new or empty)")
    p.add_argument("--force", action="store_true", help="write into DIR even when it is not empty")
    p.add_argument("--redact", action="store_true", help="pseudonymise every string the finding does not need")
    p.add_argument(
        "--as-test",
        action="store_true",
        help="also write DIR/test_repro_<rule>_<digest>.py (the inspector_check fixture, judged by the default "
        "configuration, not the project's)",
    )
    p.add_argument("--max-seconds", type=float, metavar="N", help="stop after N seconds with the best result so far")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    from invariants.model.inert import inert
    from invariants.reduce import FindingNotFound, ReduceInputError, reduce_log, write_repro

    from .common import fail

    log = Path(args.log)
    if not log.is_file():
        return fail(f"{log}: not a file")
    captures = Path(args.captures) if args.captures else None
    if captures is not None and not captures.is_file():
        return fail(f"{captures}: not a file")
    out = Path(args.output)
    real = os.path.realpath  # never raises on a symlink loop
    if real(out) in (real(log.parent), real((captures or log).parent)):
        return fail(f"{out}: the output folder must not be the input's folder")
    if out.exists() and not out.is_dir():
        return fail(f"{out}: not a folder")
    if out.is_dir() and not args.force and any(out.iterdir()):  # asked before the search, which may be long
        return fail(f"{out}: the output folder is not empty (its files would be overwritten); --force writes anyway")
    from inspector.progress import progress_for

    shown = progress_for("reduce", args.quiet, unit="candidates")

    def told(candidates: int, events_left: int) -> None:
        if shown is not None:
            shown.detail = f"{events_left} events left"
            shown.advance(candidates - shown.done)

    try:
        reduction = _reduce_shown(
            shown,
            reduce_log,
            log,
            args.rule,
            at=args.at,
            captures=captures,
            redact=args.redact,
            max_seconds=args.max_seconds,
            progress=told,
        )
    except ReduceInputError as e:
        return fail(str(e))
    except RecursionError:  # a structure deeper than the reducer's rewriting can walk
        return fail(f"{log}: too deeply nested for the reducer")
    except OSError as exc:
        return fail(f"{exc.filename or log}: cannot read ({exc.strerror or exc})")
    except FindingNotFound as e:
        print(f"inspector reduce: {inert(str(e))}", file=sys.stderr)  # (it names the log, whatever its name holds)
        for f in e.findings:
            print(inert(f"  {f.rule} seq {f.seq} turn {f.turn} step {f.step}"), file=sys.stderr)
        if not e.findings:
            print("  (the log has no findings)", file=sys.stderr)
        return 1
    from invariants.model.atomic import write_error

    try:
        write_repro(reduction, out, as_test=args.as_test, into=args.force)
    except OSError as exc:
        return fail(write_error(out, "the repro", exc))
    m = reduction.manifest
    note = " (time limit reached: best so far)" if m["timed_out"] else ""
    print(
        inert(
            f"{m['rule']} reproduced{note}: {m['events']['before']} -> {m['events']['after']} events, "
            f"{m['captures']['before']} -> {m['captures']['after']} capture lines, {m['candidates']} candidates, "
            f"{m['seconds']} s{', redacted' if m['redacted'] else ''}; written to {os.path.realpath(out)}"
        )
    )
    if args.redact and not m["redacted"]:
        print("inspector reduce: redaction lost the finding; the repro is NOT redacted", file=sys.stderr)
    return 0


def _reduce_shown(shown, reduce_log, *args, **kwargs):
    """``reduce_log``, its progress display closed whatever happens."""
    try:
        return reduce_log(*args, **kwargs)
    finally:
        if shown is not None:
            shown.close()
