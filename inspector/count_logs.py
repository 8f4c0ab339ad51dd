"""``python -m inspector.count_logs PATH...``: the logs the paths hold and their bytes, as ``N BYTES``.

A check's progress display runs it in a process of its own for its total
(:func:`inspector.progress.count_in_background`).  It stops early, printing
nothing, when the process that started it is gone.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from invariants.read.discover import iter_discover


def count(paths: Sequence[str], parent: int | None = None) -> tuple[int, int] | None:
    """How many logs (sessions of a store included) ``paths`` hold, and the bytes of their files;
    None once ``parent`` is no longer this process's parent (looked at every 1,000 logs)."""
    n = nbytes = 0
    for s in iter_discover(paths, []):
        n += 1
        if s.member is None and isinstance(s.path, os.PathLike):
            try:
                nbytes += os.stat(s.path).st_size
            except OSError:
                pass
        if parent is not None and n % 1000 == 0 and os.getppid() != parent:
            return None
    return n, nbytes


if __name__ == "__main__":
    counted = count(sys.argv[1:], os.getppid())
    if counted is not None:
        print(*counted)
