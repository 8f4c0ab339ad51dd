"""A folder on a full disk: a small tmpfs mounted for the test (root on Linux), filled to the last block.

Where mounting is not allowed the test is skipped with the reason; the writers' behaviour on ENOSPC is
also tested without a mount, by fault injection (tests/unit/test_atomic.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def full_disk(where: Path, size_kb: int = 64, keep: dict[str, bytes] | None = None) -> Iterator[Path]:
    """``where`` mounted as a ``size_kb`` tmpfs holding the files ``keep``, then filled until a write fails."""
    where.mkdir(parents=True, exist_ok=True)
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        for name, data in (keep or {}).items():
            (where / name).write_bytes(data)
        with contextlib.suppress(OSError), open(where / ".fill", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
