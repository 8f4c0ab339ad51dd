"""``inspector sessions``: list indexed sessions, filtered (reads the index only)."""

from __future__ import annotations

import argparse
import sys

from .common import fail
from .index import add_db_flag

COLUMNS = ("uid", "created", "era", "events", "steps", "requests", "errors", "warnings", "parent", "path")


def _short(row: dict) -> str:
    """The path below the indexed root (the root is the same for most rows; --format json has it all)."""
    path, root = row.get("path") or "", row.get("root") or ""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if root and path.startswith(prefix) else path


def _parent(row: dict) -> str | None:
    """The parent the header names; a ``?`` marks one that is not indexed under the same root."""
    claim = row.get("parent_session")
    if claim is None:
        return None
    return claim if row.get("parent_id") is not None else f"{claim} ?"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sessions",
        help="list indexed sessions (filter by finding, rule, model, date, parent)",
        description="List the sessions of an index built by `inspector index`, read-only.",
    )
    add_db_flag(p)
    p.add_argument("--under", metavar="PATH", help="only sessions whose log is under this path")
    p.add_argument("--category", metavar="NAME", help="with a finding of this category (e.g. request-divergence)")
    p.add_argument("--rule", metavar="CODE", help="with a finding of this rule (DIV001) or prefix (DIV)")
    p.add_argument("--severity", choices=("error", "warning", "info"), help="with a finding at or above this severity")
    p.add_argument("--model", metavar="NAME", help="with a step whose request header names this model")
    p.add_argument("--since", metavar="DATE", help="created at or after (YYYY-MM-DD, ISO time or epoch ms)")
    p.add_argument("--until", metavar="DATE", help="created before the end of (YYYY-MM-DD) or at (ISO time)")
    p.add_argument("--parent", metavar="ID", help="forked children of this session id")
    p.add_argument("--forked", action="store_true", help="only forked children")
    p.add_argument("--era", metavar="ERA", help="seed, late, or a profile name")
    p.add_argument("--id", dest="uid", metavar="ID", help="this session id (or id prefix)")
    p.add_argument("--diverged", action="store_true", help="with a request/header divergence or unexplained request")
    p.add_argument(
        "--search",
        metavar="FTS",
        help="full-text search over message text, streamed text no message holds, and finding messages (FTS5 syntax)",
    )
    p.add_argument(
        "--sort", choices=("created", "path", "errors", "size"), default="created", help="order (default created)"
    )
    p.add_argument("--limit", type=int, metavar="N", help="at most N sessions")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format (default table)")


def run(args: argparse.Namespace) -> int:
    from inspector.index import QueryError, list_sessions
    from inspector.index.table import cell_width, render
    from invariants.gate.report import dumps_json

    try:
        rows = list_sessions(
            args.db,
            limit=args.limit,
            order=args.sort,
            under=args.under,
            category=args.category,
            rule=args.rule,
            severity=args.severity,
            model=args.model,
            since=args.since,
            until=args.until,
            parent=args.parent,
            forked=True if args.forked else None,
            era=args.era,
            uid=args.uid,
            diverged=args.diverged,
            search=args.search,
        )
    except QueryError as exc:
        return fail(str(exc))
    except ValueError as exc:
        return fail(f"bad filter value: {exc}")
    if args.format == "json":
        sys.stdout.write(dumps_json(rows, indent=True) + "\n")
        return 0
    table = [[_parent(r) if c == "parent" else _short(r) if c == "path" else r.get(c) for c in COLUMNS] for r in rows]
    sys.stdout.write(render(COLUMNS, table, max_width=cell_width(72)) + "\n")
    sys.stdout.write(f"{len(rows)} session{'s' if len(rows) != 1 else ''}\n")
    return 0
