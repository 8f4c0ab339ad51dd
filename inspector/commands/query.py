"""``inspector query SQL``: run one read-only SQL statement against the index."""

from __future__ import annotations

import argparse
import sys

from .common import fail
from .index import add_db_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "query",
        help="run read-only SQL against the index; print a table or JSON",
        description="Run one SELECT statement against the index (opened read-only: writes, ATTACH and PRAGMA are "
        "refused). Tables: sessions, steps, cache_steps, findings, headers, header_tools, instances, versions, "
        "requests, captures, messages, tool_calls, runs, meta; views: session_overview, diverged_sessions, "
        "prefix_drift, instance_drift, forks, fork_chains, model_usage, step_tools, tool_usage, step_cache, "
        "cache_breaks, cache_summary, header_changes, finding_counts; full text: messages_fts, findings_fts.",
    )
    p.add_argument("sql", metavar="SQL", help="one SELECT statement ('-' reads it from stdin)")
    add_db_flag(p)
    p.add_argument(
        "--param", "-p", action="append", default=[], metavar="VALUE", help="a value for the next ? placeholder"
    )
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format (default table)")
    p.add_argument("--limit", type=int, default=1000, metavar="N", help="print at most N rows (default 1000; 0 = all)")
    p.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="stop the query after this long (default 60)"
    )


def run(args: argparse.Namespace) -> int:
    from inspector.index import QueryError, run_query
    from inspector.index.table import cell_width, render
    from invariants.gate.report import dumps_json

    sql = sys.stdin.read() if args.sql == "-" else args.sql
    if args.format == "json" and not args.limit:  # every row: streamed, never held
        from inspector.index.read import stream_query

        try:
            with stream_query(args.db, sql, args.param, timeout=args.timeout) as (names, stream):
                write_json_rows(names, stream, sys.stdout)
        except QueryError as exc:
            return fail(str(exc))
        return 0
    try:
        cols, rows, truncated = run_query(args.db, sql, args.param, limit=args.limit or None, timeout=args.timeout)
    except QueryError as exc:
        return fail(str(exc))
    if args.format == "json":
        out = [{c: (v.hex() if isinstance(v, bytes) else v) for c, v in zip(cols, r)} for r in rows]
        sys.stdout.write(dumps_json(out, indent=True) + "\n")
    else:
        sys.stdout.write(render(cols, rows, max_width=cell_width(60)) + "\n")
        sys.stdout.write(
            f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
            + (f" (first {args.limit}; --limit 0 for all)" if truncated else "")
            + "\n"
        )
    if truncated:
        print(f"inspector: note: output stopped at {args.limit} rows", file=sys.stderr)
    return 0


def write_json_rows(cols: list[str], rows, out) -> None:
    """The rows as the JSON array ``dumps_json(list, indent=True)`` gives, written one row at a time."""
    from invariants.gate.report import dumps_json

    first = True
    for r in rows:
        obj = dumps_json({c: (v.hex() if isinstance(v, bytes) else v) for c, v in zip(cols, r)}, indent=True)
        out.write(("[\n" if first else ",\n") + "\n".join("  " + ln for ln in obj.split("\n")))
        first = False
    out.write("[]\n" if first else "\n]\n")
