"""Find session logs under the paths a user names.

A path may be one log file, a folder of logs, or a harness sessions root in
either layout (``cwd-<hash12>/<id>.jsonl`` or ``--<project>--/<id>/session.jsonl[.zstd]``).
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
    """One log file to read; ``root`` is the folder the user named (for confinement)."""

    path: Path
    root: Path

    @property
    def display(self) -> str:
        return str(self.path)

    @property
    def compressed(self) -> bool:
        return self.path.name.endswith((".zstd", ".zst"))


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
            elif p.name.endswith(SQLITE_SUFFIXES) or is_log_name(p.name):
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
    return found, problems


def _add(found: list[LogSource], seen: set[Path], src: LogSource) -> None:
    key = src.path.resolve()
    if key not in seen:
        seen.add(key)
        found.append(src)
