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
from dataclasses import dataclass
from pathlib import Path

LOG_SUFFIXES = (".jsonl", ".jsonl.zstd", ".jsonl.zst")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def is_capture_name(name: str) -> bool:
    base = strip_log_suffix(name)
    return base == "requests" or base.endswith(".requests") or base.startswith("requests-")


def strip_log_suffix(name: str) -> str:
    for suffix in (".jsonl.zstd", ".jsonl.zst", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_log_name(name: str) -> bool:
    return name.endswith(LOG_SUFFIXES) and not is_capture_name(name)


@dataclass(frozen=True, slots=True)
class LogSource:
    """One log to read; ``root`` is the folder the user named (for confinement).

    ``member`` is set for a session stored in a SQLite database: ``path`` is
    then the database file and ``member`` the session id inside it.
    """

    path: Path
    root: Path
    member: str | None = None

    @property
    def display(self) -> str:
        return str(self.path) if self.member is None else f"{self.path}#{self.member}"

    @property
    def compressed(self) -> bool:
        return self.path.name.endswith((".zstd", ".zst"))

    @property
    def resumable(self) -> bool:
        """Whether a later read may continue at a byte offset (plain files only)."""
        return self.member is None and not self.compressed


def discover(paths: list[str | os.PathLike]) -> tuple[list[LogSource], list[str]]:
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


def _add_database(found: list[LogSource], seen: set, problems: list[str], path: Path, root: Path, explicit: bool) -> None:
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
