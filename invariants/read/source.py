"""What a log is called and where it lives: file-name rules, :class:`UrlPath` and :class:`LogSource`.

Shared by discovery, the line readers and the SQLite backend, so none of
them needs another to know what a source is.  A path the user names is a
plain :class:`~pathlib.Path`, or, when it is a URL (``memory://``,
``file://``, ``s3://``...), a :class:`UrlPath` read through fsspec; both
answer the few path questions the readers ask (``name``, ``parent``,
``/``, ``is_file``, ``stat``, ``open``), so every reader takes either.
"""

from __future__ import annotations

import io
import os
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Container, NamedTuple

LOG_SUFFIXES = (".jsonl", ".jsonl.zstd", ".jsonl.zst")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")
"""The files SQLite writes beside a database while it writes it."""


def journal_of(db: Path) -> Path:
    """The rollback journal beside the SQLite database ``db``: hot when a write to it was cut off."""
    return db.with_name(db.name + "-journal")


def is_capture_name(name: str) -> bool:
    base = strip_log_suffix(name)
    return base == "requests" or base.endswith(".requests") or base.startswith("requests-")


def is_folder_capture(name: str) -> bool:
    """Whether a capture file name is a folder's ``requests.jsonl`` (plain or zstd), not one log's."""
    return strip_log_suffix(name) == "requests"


def strip_log_suffix(name: str) -> str:
    for suffix in (".jsonl.zstd", ".jsonl.zst", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def capture_candidates(log_name: str) -> list[str]:
    """The names a log's capture may have beside it, in the order they are looked up: the folder's
    ``requests.jsonl`` (plain or zstd), then ``<log name>.requests.jsonl``."""
    own = strip_log_suffix(log_name)
    return [f"requests{s}" for s in LOG_SUFFIXES] + [f"{own}.requests{s}" for s in LOG_SUFFIXES]


def captures_present(log_name: str, listing: Container[str]) -> tuple[str, ...]:
    """Which of the log's :func:`capture_candidates` a listing of its folder holds, in lookup order."""
    return tuple(c for c in capture_candidates(log_name) if c in listing)


def is_log_name(name: str) -> bool:
    return name.endswith(LOG_SUFFIXES) and not is_capture_name(name)


class UrlError(OSError):
    """A URL that cannot be read: no such object, an unknown protocol, or its fsspec backend missing."""


class UrlStat(NamedTuple):
    """The part of ``os.stat_result`` the readers use; ``st_ino`` is a digest of the version tag (ETag, md5, inode)."""

    st_size: int
    st_mtime_ns: int
    st_ino: int
    st_dev: int = 0


@dataclass(slots=True, frozen=True)
class UrlPath:
    """A file or folder named by an fsspec URL; shown exactly as the user wrote it.

    Read-only: it opens for reading and lists, nothing else.  Credentials are
    whatever the fsspec backend finds in its environment.  fsspec is imported
    on first use, so plain paths never load it.  No ``__fspath__``: a reader
    that forgot to go through :meth:`open` fails loudly instead of reading a
    local file of the same name.
    """

    url: str

    # Ordered by the URL text, among URLs only.
    def __lt__(self, other: object) -> bool:
        return self.url < other.url if isinstance(other, UrlPath) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.url <= other.url if isinstance(other, UrlPath) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.url > other.url if isinstance(other, UrlPath) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.url >= other.url if isinstance(other, UrlPath) else NotImplemented

    @classmethod
    def of(cls, text: str) -> UrlPath:
        """The URL as written, less trailing slashes (a local path has none either)."""
        scheme, _, rest = text.partition("://")
        stripped = rest.rstrip("/")
        return cls(f"{scheme}://{stripped or rest[:1]}")

    def __str__(self) -> str:
        return self.url

    @property
    def name(self) -> str:
        return self._rest().rstrip("/").rpartition("/")[2]

    @property
    def parent(self) -> UrlPath:
        scheme, rest = self._split()
        head = rest.rstrip("/").rpartition("/")[0]
        return UrlPath(f"{scheme}://{head or rest[:1] if rest.startswith('/') else head}")

    @property
    def stem(self) -> str:
        name = self.name
        i = name.rfind(".")
        return name[:i] if 0 < i < len(name) - 1 else name

    @property
    def parents(self) -> tuple[UrlPath, ...]:
        out = []
        p = self
        while (up := p.parent) != p:
            out.append(up)
            p = up
        return tuple(out)

    def __truediv__(self, name: str) -> UrlPath:
        return UrlPath(f"{self.url.rstrip('/')}/{name}")

    def with_name(self, name: str) -> UrlPath:
        return self.parent / name

    def resolve(self) -> UrlPath:
        return self

    def absolute(self) -> UrlPath:
        return self

    def as_posix(self) -> str:
        return self.url

    def relative_to(self, other: Path | UrlPath) -> PurePosixPath:
        """The part of this URL below ``other`` (a ValueError when it is not below it, as pathlib raises)."""
        base = other.url.rstrip("/") + "/" if isinstance(other, UrlPath) else None
        if base is None or not self.url.startswith(base):
            raise ValueError(f"{self.url} is not below {other}")
        return PurePosixPath(self.url[len(base) :])

    def info(self) -> dict[str, Any]:
        """The backend's description of the object; :class:`UrlError` when it cannot be had."""
        fs, path = self.filesystem()
        try:
            return fs.info(path)
        except FileNotFoundError as exc:
            raise UrlError(f"{self.url}: no such file or directory") from exc
        except OSError as exc:
            raise UrlError(f"{self.url}: {exc}") from exc

    def children(self) -> dict[str, dict[str, Any]]:
        """Name -> info of every entry of this folder, one listing call; {} when it cannot be listed."""
        fs, path = self.filesystem()
        try:
            entries = fs.ls(path, detail=True)
        except OSError:
            return {}
        out = {}
        for e in entries:
            name = str(e.get("name", "")).rstrip("/").rpartition("/")[2]
            if name and name not in (".", ".."):
                out[name] = e
        return out

    def exists(self) -> bool:
        return self._kind() is not None

    def is_file(self) -> bool:
        return self._kind() == "file"

    def is_dir(self) -> bool:
        return self._kind() == "directory"

    def is_symlink(self) -> bool:
        try:
            return bool(self.info().get("islink"))
        except UrlError:
            return False

    def stat(self) -> UrlStat:
        info = self.info()
        tag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("ino") or ""
        return UrlStat(int(info.get("size") or 0), _mtime_ns(info), zlib.crc32(str(tag).encode()))

    def open(self, mode: str = "rb", buffering: int = -1) -> BinaryIO:
        """A buffered, read-only binary stream (``readline(limit)`` works on every backend)."""
        if mode != "rb":
            raise ValueError("URL paths are read-only")
        fs, path = self.filesystem()
        try:
            raw = fs.open(path, "rb")
        except FileNotFoundError as exc:
            raise UrlError(f"{self.url}: no such file or directory") from exc
        return io.BufferedReader(raw, buffering if buffering > 0 else io.DEFAULT_BUFFER_SIZE)

    def filesystem(self) -> tuple[Any, str]:
        """(fsspec filesystem, path inside it); :class:`UrlError` for an unknown protocol or missing backend."""
        try:
            import fsspec
        except ImportError as exc:
            raise UrlError(f"{self.url}: URL paths need fsspec (pip install 'dsh-inspector[fleet]')") from exc
        try:
            return fsspec.core.url_to_fs(self.url)
        except ImportError as exc:
            extra = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs"}.get(self._split()[0])
            hint = f" (pip install 'dsh-inspector[{extra}]')" if extra else ""
            raise UrlError(f"{self.url}: {exc}{hint}") from exc
        except ValueError as exc:
            raise UrlError(f"{self.url}: {exc}") from exc

    def _kind(self) -> str | None:
        try:
            return self.info().get("type")
        except UrlError as exc:
            if isinstance(exc.__cause__, (ImportError, ValueError)) or exc.__cause__ is None:
                raise
            return None

    def _split(self) -> tuple[str, str]:
        scheme, _, rest = self.url.partition("://")
        return scheme, rest

    def _rest(self) -> str:
        return self._split()[1]


def _mtime_ns(info: dict[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return int(value * 1e9)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1e9)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
            except ValueError:
                continue
    return 0


#: What a log, a capture or a folder is: a local path or a URL.
LogPath = Path | UrlPath


def is_url(raw: object) -> bool:
    """Whether a path the user wrote is a URL (``scheme://...``) rather than a local path."""
    text = raw if isinstance(raw, str) else str(raw) if isinstance(raw, UrlPath) else ""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isidentifier() and len(scheme) > 1


def log_path(raw: str | Path | UrlPath) -> LogPath:
    """The path the user wrote, as a :class:`UrlPath` if it is a URL, else a :class:`~pathlib.Path`."""
    if isinstance(raw, (Path, UrlPath)):
        return raw
    return UrlPath.of(raw) if is_url(raw) else Path(raw)


def local_file(path: LogPath) -> Path:
    """``path`` when it is local; a :class:`UrlError` for a URL (SQLite databases and writes are local only)."""
    if isinstance(path, UrlPath):
        raise UrlError(f"{path}: read from local paths only")
    return path


def local_size(path: LogPath) -> int:
    """The size of a local file in bytes; 0 for a URL (no round trip to learn it) or a file that cannot be read."""
    if isinstance(path, UrlPath):
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0


def absolute_name(path: LogPath) -> str:
    """A stable absolute name: the URL itself, or the local path made absolute (not resolved)."""
    return path.url if isinstance(path, UrlPath) else os.path.abspath(path)


@dataclass(slots=True, frozen=True)
class LogSource:
    """One log to read; ``root`` is the folder the user named (for confinement).

    ``member`` is set for a session stored in a SQLite database: ``path`` is
    then the database file and ``member`` the session id inside it.
    ``beside``: when the walk that found the log listed its folder, which of its
    :func:`capture_candidates` that listing holds (usually none or one), so its capture lookup
    needs no listing of its own; None when not known.  Not part of the source's identity.
    """

    path: LogPath
    root: LogPath
    member: str | None = None
    beside: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def display(self) -> str:
        return str(self.path) if self.member is None else f"{self.path}#{self.member}"

    @property
    def compressed(self) -> bool:
        return self.path.name.endswith((".zstd", ".zst"))

    @property
    def resumable(self) -> bool:
        """Whether a later read may continue at a byte offset (plain local files only)."""
        return self.member is None and not self.compressed and isinstance(self.path, Path)
