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
import os
import sys
import tempfile
from pathlib import Path
from typing import IO

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


def _open_output(target: Path) -> tuple[IO[str], str]:
    """A temporary file in the target's folder (renamed over the target once complete)."""
    if target.is_symlink():
        raise OSError("it is a link; refusing to write through it")
    if target.is_dir():
        raise OSError("it is a directory")
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:  # the mode a plain open would give (mkstemp's is 0600), or the replaced file's
        mode = target.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    os.fchmod(fd, mode)
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n"), tmp


def _finish_output(handle: IO[str], tmp: str, target: Path) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    if target.is_symlink():  # made a link while we wrote
        raise OSError("it is a link; refusing to write through it")
    os.replace(tmp, target)


def _discard(handle: IO[str] | None, tmp: str | None) -> None:
    if handle is not None:
        handle.close()
    if tmp is not None:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _is_input(target: Path, paths: list[str]) -> bool:
    try:
        me = target.resolve()
        return any(Path(p).resolve() == me for p in paths)
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    from invariants.analysis.otlp import export_request
    from invariants.analysis.trace import session_trace
    from invariants.gate.baseline import BaselineError
    from invariants.gate.config import ConfigError
    from invariants.gate.pipeline import check
    from invariants.gate.report import dumps_json
    from invariants.gate.result import CheckOptions

    for raw in args.paths:
        problem = missing_input(raw)
        if problem:
            return fail(problem)
    if args.output is not None and _is_input(args.output, args.paths):
        return fail(f"{args.output}: is one of the inputs; refusing to overwrite it")
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
    handle: IO[str] | None = None
    tmp: str | None = None
    try:
        if args.output is not None:
            handle, tmp = _open_output(args.output)
        elif sender is None:
            handle = sys.stdout
        for model in result.models:
            trace = session_trace(model, by_session.get((model.file, model.id), ()), content=args.content)
            if handle is not None:
                handle.write(dumps_json(export_request(trace)) + "\n")
            if sender is not None:
                sender.send(trace)
        if args.output is not None and handle is not None and tmp is not None:
            _finish_output(handle, tmp, args.output)
            handle = tmp = None
    except OSError as exc:
        where = args.output if args.output is not None else "stdout"
        _discard(handle if handle is not sys.stdout else None, tmp)
        return fail(f"{where}: cannot write ({exc.strerror or exc})")
    except send_error as exc:  # only with --endpoint
        _discard(handle if handle is not sys.stdout else None, tmp)
        return fail(str(exc))
    finally:
        if sender is not None:
            sender.close()
    if sender is not None:
        print(f"inspector: sent {len(result.models)} session(s), {sender.spans} spans to {sender.url}", file=sys.stderr)
    return 0
