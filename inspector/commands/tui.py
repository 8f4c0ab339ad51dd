"""``inspector PATH``: open the TUI (the default command)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import (
    add_config_flags,
    add_input_flags,
    check_profile,
    fail,
    load_configuration,
    missing_captures,
    missing_input,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tui",
        help="open the replay debugger TUI (default: `inspector PATH`)",
        description="Replay a session step by step and see where a request went wrong.",
    )
    p.add_argument("path", metavar="PATH", help="a log file, a folder of logs, or a sessions root")
    add_input_flags(p)
    add_config_flags(p)
    p.add_argument("--session", metavar="ID", help="open this session directly")
    p.add_argument(
        "--at",
        metavar="SEQ|TURN.STEP",
        help="open the session there: an event seq (on the Events tab) or a step (on its worst finding); "
        "for a folder, in the session opened first (--session, the only log, or the first one you open)",
    )
    p.add_argument("--follow", action="store_true", help="watch a log that is still being written")
    p.add_argument(
        "--db",
        metavar="FILE",
        help="the index (`inspector index`) the session list reads when it covers PATH "
        "(default: ./inspector-index.db when it exists); stale rows are re-checked live",
    )


def run(args: argparse.Namespace) -> int:
    if (missing := missing_input(args.path)) is not None:
        return fail(missing)
    unreadable = missing_captures(args.captures)
    if unreadable:  # opening without them would show an all-clear
        return fail(unreadable)
    from inspector.app import create_app
    from invariants.gate.baseline import BaselineError
    from invariants.gate.config import ConfigError
    from invariants.gate.policy import FindingPolicy

    try:
        config = load_configuration(args)
        FindingPolicy.of(config)  # an unreadable baseline is a usage error here, not a per-log failure
    except (ConfigError, BaselineError) as exc:
        return fail(str(exc))
    at = None
    if args.at is not None:
        from inspector.deeplink import parse_at

        at = parse_at(args.at)
        if at is None:
            return fail(f"--at {args.at}: give an event seq (12) or a step as TURN.STEP (2.1)")
    if args.db is not None and not Path(args.db).is_file():
        return fail(f"{args.db}: no index here (build one with `inspector index PATH --db {args.db}`)")
    app = create_app(
        path=args.path,
        captures=args.captures,
        session=args.session,
        follow=args.follow,
        profile=check_profile(args.profile if args.profile is not None else config.profile),
        db=args.db,
        config=config,
        at=at,
    )
    app.run()
    return app.return_code or 0
