"""What a log is called and where it lives: file-name rules and :class:`LogSource`.

Shared by discovery, the line readers and the SQLite backend, so none of
them needs another to know what a source is.
"""

from __future__ import annotations

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
