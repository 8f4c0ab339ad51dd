"""``inspector replay``: print the rebuilt request(s) of a session as JSON."""

from __future__ import annotations

import argparse
import sys

from .common import add_config_flags, check_profile, fail, load_configuration


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="print the request(s) the log says were sent, as JSON",
        description="Rebuild the request of every step (or one step) from the log alone, with its keys in the "
        "order the harness's recorded requests carry them. "
        "With --turn/--step: one pretty-printed request object (--attempt K: the K-th attempt of a retried step). "
        'Without: one JSON line per step ({"session","turn","step","seq","request"}), whose request is '
        "byte-identical to a recorded request the log explains.",
    )
    p.add_argument("log", metavar="LOG", help="a log file (or a folder, with --session)")
    p.add_argument("--turn", type=int, help="turn of the step to rebuild")
    p.add_argument("--step", type=int, help="step within --turn (default 1)")
    p.add_argument(
        "--attempt",
        type=int,
        metavar="K",
        help="with --turn: the K-th attempt of a step the loop retried (default 1); each attempt is derived "
        "from the log as it stood at that attempt's dispatch",
    )
    p.add_argument("--session", metavar="ID", help="which session, when LOG holds several")
    p.add_argument("--profile", metavar="NAME", help="force a format profile")
    add_config_flags(p)


def run(args: argparse.Namespace) -> int:
    from invariants.analysis.attempts import step_attempts
    from invariants.gate.config import ConfigError
    from invariants.gate.report import dumps_json
    from invariants.gate.result import CheckOptions
    from invariants.gate.unit import replay_sources
    from invariants.read.discover import discover

    try:
        config = load_configuration(args)
    except ConfigError as exc:
        return fail(str(exc))
    sources, problems = discover([args.log])
    if problems:
        return fail("; ".join(problems))
    profile = check_profile(args.profile if args.profile is not None else config.profile)
    models, problems = replay_sources(sources, CheckOptions(profile=profile))
    if problems:
        return fail("; ".join(problems))
    if args.session is not None:
        models = [m for m in models if m.id == args.session]
        if not models:
            return fail(f"no session {args.session!r} under {args.log}")
    if len(models) != 1:
        ids = ", ".join(m.id for m in models[:10])
        return fail(f"{args.log} holds {len(models)} sessions; pick one with --session ({ids})")
    model = models[0]
    if not model.steps:  # empty, random bytes, a log without steps: nothing rebuilt is no success
        why = next((f.message for f in model.findings if f.severity == "error"), None)
        if model.header is None or why is not None:
            return fail(f"{model.source.display}: not a readable session log ({why or 'no session header'})")
        return fail(f"{model.source.display}: session {model.id} has no steps: no request to rebuild")
    if args.attempt is not None and args.turn is None:
        return fail("--attempt needs --turn (and --step): it picks one attempt of one step")
    if args.turn is not None:
        step = model.step_for(args.turn, args.step or 1)
        where = f"turn {args.turn} step {args.step or 1}"
        if step is None:
            return fail(f"session {model.id} has no {where}")
        attempts = step_attempts(model, step)
        k = args.attempt if args.attempt is not None else 1
        if not 1 <= k <= max(1, len(attempts)):
            return fail(f"{where} has {len(attempts) or 1} attempt(s); --attempt takes 1..{len(attempts) or 1}")
        if args.attempt is None and len(attempts) > 1:
            print(
                f"inspector: {where} has {len(attempts)} attempts; showing attempt 1 (choose one with --attempt K)",
                file=sys.stderr,
            )
        expected = model.rebuild_request(step, attempts[k - 1] if attempts else None)
        if expected is None:
            return fail(f"{where} has no request header in force: the log cannot rebuild it")
        sys.stdout.write(dumps_json(expected.request, indent=True) + "\n")
        return 0
    for step in model.steps:
        expected = model.rebuild_request(step)
        line = {
            "session": model.id,
            "turn": step.turn,
            "step": step.step,
            "seq": step.seq,
            "request": expected.request if expected else None,
        }
        sys.stdout.write(dumps_json(line) + "\n")
    return 0
