"""Command line entry point: a thin layer over the ``invariants`` library.

Subcommands live in ``inspector/commands/<name>.py``, each with ``register``
(argparse) and ``run`` (returns the exit code).  ``inspector PATH`` with no
subcommand opens the TUI.  Exit codes: 0 clean, 1 findings at or above the
fail threshold, 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ("check", "replay", "rules", "tui", "index", "sessions", "query", "cache-report", "reduce")
DEFAULT_COMMAND = "tui"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``command`` alone: then only its module is imported, so
    ``inspector check`` loads none of the other commands."""
    parser = argparse.ArgumentParser(
        prog="inspector",
        description="Invariant checker and replay debugger for dsh session logs. "
        "`inspector PATH` opens the TUI; `inspector check PATH` is the CI gate.",
    )
    from invariants import __version__

    parser.add_argument("--version", action="version", version=f"inspector {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if command is None else (command,):
        module = importlib.import_module(f"inspector.commands.{name.replace('-', '_')}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        argv.insert(0, DEFAULT_COMMAND)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(f"inspector.commands.{args.command.replace('-', '_')}")
    try:
        return module.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
