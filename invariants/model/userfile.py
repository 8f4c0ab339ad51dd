"""Reading a file the user names for settings: a configuration, a baseline, a ledger.

Such a path is read whole, so a pipe named by mistake blocked the command for ever, and a device
(``/dev/zero``) would be read until memory ran out.  :func:`read_text` opens without blocking,
asks the open file what it is, and reads only a regular file: anything else is an ``OSError``
whose sentence the caller's "cannot read" line gives.
"""

from __future__ import annotations

import os
import stat


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of ``path``; ``OSError`` (``FileNotFoundError`` when it is missing) for one that
    cannot be read or is not a regular file, ``UnicodeDecodeError`` for one that is not UTF-8."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a pipe opens at once, with or without a writer
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read().decode("utf-8")
    finally:
        os.close(fd)
