"""``inspector index PATH...``: build or update the postmortem index (one SQLite file)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from .common import add_config_flags, fail, load_configuration

DEFAULT_DB = "inspector-index.db"  # same as inspector.index.DEFAULT_DB, without importing sqlite-utils for --help
PAUSE_ENV = "INSPECTOR_INDEX_PAUSE_AT"  # test hook: "N" pauses inside the N-th folder's transaction


def add_db_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="FILE",
        type=Path,
        default=Path(DEFAULT_DB),
        help=f"the index database (default: ./{DEFAULT_DB} in the working directory)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "index",
        help="index a sessions root into one SQLite file (incremental; opens in Datasette or sqlite3)",
        description="Index every session log under PATH (both eras, plain and zstd) with its capture, run the same "
        "checks as `inspector check` under the same configuration, and store sessions, steps, findings, headers, "
        "loop instances and message text "
        f"in one SQLite file (default ./{DEFAULT_DB}). Re-running reads only what changed: unchanged files are "
        "skipped, grown plain logs are read from where the last run stopped, replaced or compressed logs are "
        "re-read in full. Query it with `inspector sessions`, `inspector query`, Datasette or the sqlite3 shell.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a sessions root, a folder of logs, or a log file")
    add_db_flag(p)
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        default=None,
        help="worker processes that replay logs (default: usable CPUs, at most 4; 1 = in this process)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDR",
        default=None,
        help="compute the rows on a Dask cluster: tcp://HOST:PORT, or local[:N] to start N local worker processes; "
        "this process stays the one writer (needs the fleet extra; overrides --jobs)",
    )
    p.add_argument(
        "--export",
        nargs=2,
        metavar=("FORMAT", "DIR"),
        default=None,
        help="after indexing, write the sessions, findings, steps and requests tables to DIR, typed (booleans, "
        "UTC timestamps, JSON as lists and structs) (FORMAT: parquet; needs pyarrow, the fleet extra)",
    )
    add_config_flags(p)
    p.add_argument("--full", action="store_true", help="re-read every log even when its revision is unchanged")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="delete the database (only an index this tool wrote) and the files SQLite keeps beside it, then index"
        " from scratch",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but problems")
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")


def run(args: argparse.Namespace) -> int:
    from inspector.index import IndexBuildError, build_index
    from inspector.index.connection import is_index
    from invariants.gate.baseline import BaselineError
    from invariants.gate.config import ConfigError
    from invariants.gate.policy import FindingPolicy
    from invariants.model.inert import inert
    from invariants.read.source import SQLITE_SIDECARS

    try:
        config = load_configuration(args)
        FindingPolicy.of(config)  # an unreadable baseline stops the run before the database is touched
    except (ConfigError, BaselineError) as exc:
        return fail(str(exc))
    db = args.db
    if args.jobs is not None and args.jobs < 1:
        return fail("--jobs must be at least 1")
    if args.export is not None and args.export[0] != "parquet":
        return fail(f"--export {args.export[0]}: the only format is parquet")
    try:
        if args.rebuild and db.exists() and db.stat().st_size and not is_index(db):
            return fail(f"{db}: not an index written by `inspector index`; --rebuild deletes only those")
    except IndexBuildError as exc:
        return fail(str(exc))
    if args.rebuild:
        # The database first: a journal left without its database is never rolled back into a new one.
        for suffix in ("", *SQLITE_SIDECARS):
            target = Path(f"{db}{suffix}")
            if target.exists():
                target.unlink()
    from inspector.progress import progress_for

    with ExitStack() as stack:
        executor = None
        if args.scheduler is not None:
            from inspector.index.schedule import CLUSTER_BATCH, lost_group
            from invariants.gate.executor_dask import SchedulerError, dask_executor

            try:
                executor = stack.enter_context(
                    dask_executor(args.scheduler, None, lost=lost_group, batch=CLUSTER_BATCH)
                )
            except SchedulerError as exc:
                return fail(str(exc))
        shown = progress_for("index", args.quiet or args.json, unit="folders")
        if shown is not None:
            stack.callback(shown.close)  # however the run ends: its lines come from a thread

        def progress(stats) -> None:
            if shown is None:
                return
            if shown.total != stats.groups:
                shown.total = stats.groups  # the changed folders, known once the plan is made
            shown.advance(stats.groups_written - shown.done)

        try:
            stats = build_index(
                args.paths,
                db,
                jobs=args.jobs,
                full=args.full,
                progress=progress,
                config=config,
                executor=executor,
                after_folder=_pause_hook(),
            )
        except IndexBuildError as exc:
            return fail(str(exc))
    for problem in stats.problems:
        fail(problem)
    if not args.quiet and stats.notes:
        from invariants.model.inert import inert

        for note in stats.notes:
            print(f"inspector: note: {inert(note)}", file=sys.stderr)
    if args.export is not None and stats.written:
        from inspector.index.export import ExportError, export_parquet

        try:
            counts = export_parquet(db, args.export[1])
        except ExportError as exc:
            return fail(str(exc))
        if not args.quiet and not args.json:
            rows = ", ".join(f"{n} {t}" for t, n in counts.items())
            print(inert(f"{args.export[1]}: {rows} (parquet)"), file=sys.stderr)
    if not stats.written:
        print(inert(f"inspector: no session logs to index; {db} was not created"), file=sys.stderr)
    if args.json:
        from invariants.gate.report import dumps_json

        print(dumps_json({**stats.summary(), "db": os.path.abspath(db)}, indent=True))
    elif not args.quiet and stats.written:
        s = stats
        print(
            inert(
                f"{db}: {s.sessions} sessions ({s.new} new, {s.appended} appended, {s.replaced} re-read, "
                f"{s.unchanged} unchanged, {s.removed} removed), {s.steps_added} steps added, "
                f"{s.fork_checks} fork checks, {s.seconds:.2f}s"
            )
        )
    return 2 if stats.problems else 0


def _pause_hook() -> Callable[[int], None] | None:
    """The test hook: with ``INSPECTOR_INDEX_PAUSE_AT=N`` the run stops inside the N-th folder's
    transaction (and says so on stderr), so a test can kill it there or read the index meanwhile."""
    pause_at = int(os.environ.get(PAUSE_ENV, "0") or 0)
    if not pause_at:
        return None

    def pause(written: int) -> None:
        if written == pause_at:
            print(
                f"inspector index: paused inside the transaction of folder {written} (test hook {PAUSE_ENV})",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(3600)

    return pause
