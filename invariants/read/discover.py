"""Find session logs under the paths a user names.

A path may be one log file, a folder of logs, a harness sessions root in
either layout (``cwd-<hash12>/<id>.jsonl`` or ``--<project>--/<id>/session.jsonl[.zstd]``),
or a SQLite session database (``.sqlite``/``.db``), read like a sessions root:
every session in it is one :class:`LogSource` (``member`` = its id).
Capture files (``requests.jsonl``...) sit beside logs and are not logs.
Symlinks to folders are not followed, so a link loop in a root cannot hang us.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from invariants.read.source import SQLITE_SUFFIXES, LogSource, is_capture_name, is_log_name


def discover(paths: Iterable[str | os.PathLike]) -> tuple[list[LogSource], list[str]]:
    """Logs under ``paths`` in a stable order, and sentences for paths that are unusable."""
    found: list[LogSource] = []
    problems: list[str] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            problems.append(f"{p}: no such file or directory")
            continue
        if p.is_file():
            if is_capture_name(p.name):
                problems.append(f"{p}: this is a recorded-request capture, not a session log (pass it with --captures)")
            elif p.name.endswith(SQLITE_SUFFIXES):
                _add_database(found, seen, problems, p, p.parent, explicit=True)
            elif is_log_name(p.name):
                _add(found, seen, LogSource(p, p.parent))
            else:
                problems.append(f"{p}: not a session log (expected .jsonl, .jsonl.zstd or .jsonl.zst)")
            continue
        if not p.is_dir():
            problems.append(f"{p}: not a regular file or directory")
            continue
        for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                fp = Path(dirpath) / name
                if is_log_name(name) and not fp.is_symlink():
                    _add(found, seen, LogSource(fp, p))
                elif name.endswith(SQLITE_SUFFIXES) and not fp.is_symlink():
                    _add_database(found, seen, problems, fp, p, explicit=False)
    return found, problems


def _add(found: list[LogSource], seen: set, src: LogSource) -> None:
    key = (src.path.resolve(), src.member)
    if key not in seen:
        seen.add(key)
        found.append(src)


def _add_database(
    found: list[LogSource], seen: set, problems: list[str], path: Path, root: Path, explicit: bool
) -> None:
    """Every session of a harness SQLite database (read-only); a foreign .db in a folder is skipped quietly."""
    from invariants.read.sqlite_backend import NotASessionDatabase, list_sessions

    try:
        members = list_sessions(path, root)
    except (NotASessionDatabase, OSError) as exc:
        if explicit:
            problems.append(f"{path}: not a harness session database ({exc})" if isinstance(exc, OSError) else str(exc))
        return
    for src in members:
        _add(found, seen, src)
