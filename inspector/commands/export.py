"""``inspector export``: each session as an OpenTelemetry trace (GenAI semantic conventions).

The sessions are checked as ``inspector check`` would (same configuration),
each replay becomes a span tree (:mod:`invariants.analysis.trace`) with the
findings as span events, and the trees go to an OTLP/JSON file (one
``ExportTraceServiceRequest`` per line and session), to stdout, or to an
OTLP/HTTP collector through the OpenTelemetry SDK (``--endpoint``, the
``otel`` extra, imported only then).  See docs/OTEL.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO

from invariants.model.inert import inert

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
        "export",
        help="export sessions as OpenTelemetry traces (GenAI semantic conventions)",
        description="Check the sessions under PATH and export each as one OpenTelemetry trace: the session an "
        "invoke_agent span, each turn a span, each step a `chat {model}` span, each tool call an "
        "`execute_tool {name}` span, each finding a span event. Without --output or --endpoint the OTLP/JSON "
        "lines go to stdout. Message content is left out unless --content. See docs/OTEL.md.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="log files, folders, session roots or databases")
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        type=Path,
        help="write OTLP/JSON here: one ExportTraceServiceRequest per line, one line per session",
    )
    p.add_argument(
        "--endpoint",
        metavar="URL",
        help="send over OTLP/HTTP (protobuf) to this collector: a base URL (/v1/traces is added) or the full "
        "traces URL; needs the otel extra",
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="--endpoint: time allowed per session"
    )
    p.add_argument(
        "--content",
        action="store_true",
        help="include message content (gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions, "
        "tool call arguments and results); off by default: logs hold private text",
    )
    add_input_flags(p)
    add_config_flags(p)


def _export(models: list, by_session: dict, args: argparse.Namespace, out: IO[str] | None, sender) -> None:
    from invariants.analysis.otlp import export_request
    from invariants.analysis.trace import session_trace
    from invariants.gate.report import dumps_json

    for model in models:
        trace = session_trace(model, by_session.get((model.file, model.id), ()), content=args.content)
        if out is not None:
            out.write(dumps_json(export_request(trace)) + "\n")
        if sender is not None:
            sender.send(trace)


def run(args: argparse.Namespace) -> int:
    from invariants.gate.baseline import BaselineError
    from invariants.gate.config import ConfigError
    from invariants.gate.pipeline import check
    from invariants.gate.result import CheckOptions
    from invariants.model.atomic import atomic_file, write_error

    from .check import _written_input

    for raw in args.paths:
        problem = missing_input(raw)
        if problem:
            return fail(problem)
    problem = _written_input(args)
    if problem:
        return fail(problem)
    try:
        config = load_configuration(args)
    except ConfigError as exc:
        return fail(str(exc))
    profile = check_profile(args.profile if args.profile is not None else config.profile)
    problem = missing_captures(args.captures)
    if problem:
        return fail(problem)
    sender = None
    send_error: tuple[type[Exception], ...] = ()
    if args.endpoint:
        from inspector.otlp_send import Sender, SendError

        send_error = (SendError,)
        try:
            sender = Sender(args.endpoint, timeout=args.timeout)
        except SendError as exc:
            return fail(str(exc))
    try:
        result = check(
            args.paths, CheckOptions(captures=args.captures, profile=profile), config=config, keep_models=True
        )
    except (BaselineError, ConfigError) as exc:
        return fail(str(exc))
    if result.problems:
        return fail("; ".join(result.problems))
    by_session: dict[tuple[str | None, str | None], list] = {}
    for f in result.findings:
        by_session.setdefault((f.file, f.session), []).append(f)
    try:
        if args.output is not None:
            with atomic_file(args.output) as fh:
                _export(result.models, by_session, args, fh, sender)
        else:
            _export(result.models, by_session, args, sys.stdout if sender is None else None, sender)
    except send_error as exc:  # only with --endpoint
        return fail(str(exc))
    except OSError as exc:
        return fail(write_error(args.output or "stdout", "the traces", exc))
    finally:
        if sender is not None:
            sender.close()
    if sender is not None:
        print(
            inert(f"inspector: sent {len(result.models)} session(s), {sender.spans} spans to {sender.url}"),
            file=sys.stderr,
        )
    return 0
