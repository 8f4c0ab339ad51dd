"""The world a simulated session runs in: seeded randomness, a fake clock, ids, and where its lines go.

Randomness is seeded and the clock only moves when told, so what the simulator writes is byte-stable.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

EPOCH_MS = 1_783_900_800_000  # 2026-07-13T00:00:00Z, the last day of the seed era


def _dump(value: Any) -> bytes:
    """``JSON.stringify`` bytes: no spaces, key order kept, UTF-8 unescaped."""
    return orjson.dumps(value)


class Clock:
    """Epoch milliseconds that only move when told, by seeded amounts."""

    def __init__(self, start_ms: int, rng: random.Random):
        self.now = start_ms
        self._rng = rng

    def tick(self, lo: int = 0, hi: int = 1) -> int:
        self.now += self._rng.randint(lo, hi)
        return self.now


class World:
    """The randomness and clock shared by every session of one scenario."""

    def __init__(self, seed: int, start_ms: int = EPOCH_MS):
        self.rng = random.Random(seed)
        self.clock = Clock(start_ms, self.rng)

    def session_id(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"

    def call_id(self, index: int) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return f"call_{index:02d}_" + "".join(self.rng.choice(alphabet) for _ in range(24))


class MemoryLines:
    """JSONL lines kept in memory, so faults can be injected before writing."""

    keeps_history = True

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, obj: Any) -> None:
        self.lines.append(_dump(obj))

    def write_raw(self, line: bytes) -> None:
        self.lines.append(line)

    def getvalue(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)

    def close(self) -> None:
        pass


class FileLines:
    """JSONL lines streamed straight to a file (benchmark logs)."""

    keeps_history = False

    def __init__(self, path: str | Path):
        self._fh = open(path, "wb")

    def write(self, obj: Any) -> None:
        self._fh.write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))

    def write_raw(self, line: bytes) -> None:
        self._fh.write(line + b"\n")

    def close(self) -> None:
        self._fh.close()


class NullLines:
    keeps_history = False

    def write(self, obj: Any) -> None:
        pass

    def write_raw(self, line: bytes) -> None:
        pass

    def close(self) -> None:
        pass
