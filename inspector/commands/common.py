"""Flags and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from invariants.read.source import LogPath, log_path


def add_input_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--captures",
        action="append",
        metavar="FILE",
        type=log_path,
        help="recorded-request capture file(s), paths or URLs; "
        "default: requests.jsonl or <log>.requests.jsonl beside each log",
    )
    p.add_argument(
        "--profile",
        metavar="NAME",
        help="judge logs by this format profile instead of sniffing the era (see `inspector rules --profiles`)",
    )


def missing_captures(captures: list[LogPath] | None) -> str | None:
    """The error for ``--captures`` files that are missing or unreadable (a check without them would look clean)."""
    from invariants.read.capture import capture_problems

    return "; ".join(capture_problems(captures)) or None


def missing_input(raw: str) -> str | None:
    """The error for a path or URL that names nothing (None: it exists)."""
    try:
        return None if log_path(raw).exists() else f"{raw}: no such file or directory"
    except OSError as exc:
        return str(exc)


def add_config_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("configuration")
    g.add_argument(
        "--config", metavar="FILE", type=Path, help="read settings from this inspector.toml or pyproject.toml"
    )
    g.add_argument("--isolated", action="store_true", help="ignore every configuration file")


def load_configuration(args: argparse.Namespace):
    """The configuration ``inspector check`` would use: ``--config``, else the nearest file from the
    working directory up (``--isolated``: none).  Raises ``ConfigError``."""
    from invariants.gate.config import load_config

    return load_config(args.config, isolated=args.isolated)


def split_codes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def no_room(exc: BaseException) -> str | None:
    """What to say when ``exc`` is a disk this run writes to being full (a file's write, or SQLite's
    ``SQLITE_FULL``), else None.  A file the command writes says so where it is written; what reaches
    here is mostly a run's temporary files (the report's spool: about 1 KB a session), so where those go
    is said too."""
    import errno
    import tempfile

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        what = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    elif type(exc).__module__ == "sqlite3" and getattr(exc, "sqlite_errorcode", None) == 13:  # SQLITE_FULL
        what = str(exc)
    else:
        return None
    return (
        f"no room left to write ({what}); temporary files go to {tempfile.gettempdir()} (TMPDIR names another folder)"
    )


def fail(message: str) -> int:
    from invariants.model.inert import inert

    print(f"inspector: error: {inert(message)}", file=sys.stderr)
    return 2


def check_profile(name: str | None) -> str | None:
    from invariants.read.profiles import PROFILES

    if name is not None and name not in PROFILES:
        raise SystemExit(fail(f"unknown profile {name!r}; known: {', '.join(PROFILES)}"))
    return name
