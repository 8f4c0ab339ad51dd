"""Command line entry point: a thin layer over the ``invariants`` library.

Subcommands live in ``inspector/commands/<name>.py``, each with ``register``
(argparse) and ``run`` (returns the exit code).  ``inspector PATH`` with no
subcommand opens the TUI.  Exit codes: 0 clean, 1 findings at or above the
fail threshold, 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
from typing import NoReturn

COMMANDS = ("check", "replay", "rules", "tui", "index", "sessions", "query", "cache-report", "reduce", "export")
DEFAULT_COMMAND = "tui"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or with ``only`` of that one (what a run needs: building
    and importing all of them costs a command a good part of its start-up)."""
    parser = argparse.ArgumentParser(
        prog="inspector",
        description="Invariant checker and replay debugger for dsh session logs. "
        "`inspector PATH` opens the TUI; `inspector check PATH` is the CI gate.",
    )
    from invariants import __version__

    parser.add_argument("--version", action="version", version=f"inspector {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        module = importlib.import_module(f"inspector.commands.{name.replace('-', '_')}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None, *, exits: bool = False) -> int:
    """Run one command; ``exits``: the process ends when it returns (:func:`run`), so a command may
    leave what it holds to the exit (``args.exits``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        argv.insert(0, DEFAULT_COMMAND)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(f"inspector.commands.{args.command.replace('-', '_')}")
    args.exits = exits
    try:
        return module.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a full disk is one line, wherever the command was writing
        from inspector.commands.common import fail, no_room

        said = no_room(exc)
        if said is None:
            raise
        return fail(said)


def run() -> NoReturn:
    """The ``inspector`` command: :func:`main`, then an exit that skips tearing the interpreter down.

    A check of a large log ends holding its whole replay (tens of megabytes of small
    objects); freeing them one by one at exit cost a few percent of the run and
    serves no one, nor does collecting the cyclic garbage its last unit left
    (``main(exits=True)``).  Exit handlers (``atexit``: worker pools, Dask clients)
    still run and the standard streams are flushed first; every file the tool writes
    is closed before :func:`main` returns.  Library callers and tests call :func:`main`.
    """
    rc = main(exits=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``inspector check | head``) or stream
            pass
    atexit._run_exitfuncs()
    os._exit(rc)


if __name__ == "__main__":
    run()
