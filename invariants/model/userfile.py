"""Opening a local file the tool only reads: a log, a capture, a configuration, a baseline, a ledger.

Such a path was found as a regular file (a walk) or named by the user, but what it names when opened
may be a pipe (named by mistake, or put in a log's place since the walk), which would block the read
for ever, or a device (``/dev/zero``), which would never end.  :func:`open_regular` opens without
blocking, asks the open file what it is, and gives only a regular file: anything else is an
``OSError`` ("not a regular file") whose sentence the caller's "cannot read" line gives.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO


def open_regular(path: str | os.PathLike, buffering: int = -1) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file; ``OSError`` (``FileNotFoundError``
    when it is missing) otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a pipe opens at once, with or without a writer
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return open(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of ``path``; ``OSError`` (``FileNotFoundError`` when it is missing) for one that
    cannot be read or is not a regular file, ``UnicodeDecodeError`` for one that is not UTF-8."""
    with open_regular(path) as fh:
        return fh.read().decode("utf-8")
