"""Write a file or a folder whole or not at all.

Every file the tool writes (a report, a baseline, the ledger, the result
cache, a reduced repro, an index export) goes through here, so that a kill -9,
a full disk or an error never leaves a truncated file where a good one was:
the content goes to a temporary file in the target's folder, is flushed and
fsynced, and is renamed over the target's name in one step.

- A symlink at the target is refused (:class:`WriteRefused`): we never write
  through a link to somewhere else.
- A hard link at the target is never written through: the new content is a
  new file renamed over this name, so the other names keep their bytes.
- After an error the temporary file (or folder) is removed and the target is
  as it was.

Self-contained (standard library only) so any writer can call it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["WriteRefused", "atomic_file", "atomic_folder", "check_target", "write_atomic", "write_error"]


class WriteRefused(OSError):
    """The target is a name we will not write to (a symlink, a folder, a device)."""


def check_target(target: str | os.PathLike) -> Path:
    """``target`` as a Path, or :class:`WriteRefused` when it names a symlink or something not a regular file."""
    path = Path(target)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    if stat.S_ISLNK(st.st_mode):
        raise WriteRefused(f"{path}: is a symlink; refusing to write through it")
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(f"{path}: not a regular file; refusing to replace it")
    return path


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike, mode: str = "w", *, encoding: str = "utf-8") -> Iterator[IO[Any]]:
    """A file object whose content replaces ``target`` when the block ends without an error.

    ``mode`` is ``"w"`` (text, ``encoding``) or ``"wb"``.  The temporary file
    sits in the target's folder (so the rename stays on one filesystem) and is
    hidden (``.<name>.<random>.tmp``); its permission bits follow the file it
    replaces, or 0o644 less the umask for a new file.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file: mode {mode!r} is not 'w' or 'wb'")
    path = check_target(target)
    folder = path.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        _copy_mode(path, fd)
        with os.fdopen(fd, mode, encoding=encoding if mode == "w" else None, newline="" if mode == "w" else None) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        check_target(path)  # a link planted while we wrote is refused too
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)


def write_atomic(target: str | os.PathLike, data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Replace ``target`` with ``data`` (text or bytes) whole, or leave it as it was."""
    with atomic_file(target, "wb" if isinstance(data, bytes) else "w", encoding=encoding) as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_folder(target: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """A temporary folder beside ``target`` that becomes ``target`` when the block ends without an error.

    The folder is complete or absent: an error (or a kill) leaves no
    ``target``, and the temporary folder is removed after an error.  An
    existing ``target`` is an error (:class:`FileExistsError`) unless
    ``replace``: then it is moved aside, the new one renamed in, and the old
    one removed.  A symlink at ``target`` is always refused.
    """
    path = Path(target)
    if path.is_symlink():
        raise WriteRefused(f"{path}: is a symlink; refusing to write through it")
    if path.exists() and not replace:
        raise FileExistsError(17, "already exists", str(path))
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
        for root, _dirs, files in os.walk(tmp):
            for name in files:
                _fsync_path(os.path.join(root, name))
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".old"))
            os.replace(path, old / "x")
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _sync_folder(path.parent)


def write_error(target: str | os.PathLike, what: str, exc: OSError) -> str:
    """The one line a command prints when it cannot write ``target`` (no traceback, no errno noise)."""
    if isinstance(exc, WriteRefused):
        return f"cannot write {what}: {exc}"
    reason = exc.strerror or str(exc)
    return f"{target}: cannot write {what} ({reason})"


def _copy_mode(path: Path, fd: int) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o644 & ~umask
    with contextlib.suppress(OSError):
        os.fchmod(fd, mode)


def _fsync_path(name: str) -> None:
    fd = os.open(name, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: some filesystems refuse to fsync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
