"""Items that arrived far ahead of their turn, held on disk until the turn comes.

The reorder window of a streamed check holds a unit's sessions until every
session before them has arrived.  Usually that is a few batches; but when one
early unit is still being checked while the plan runs on through units the
result cache answers at once (a run with a few changed logs among many
cached ones), every answer behind it would wait in memory.  Past a bound the
window parks what arrives here instead: a temporary file, written in *runs*
of consecutive places (cache answers arrive in plan order, so a run is
usually long), each taken back whole, in order, when its first place comes
up.  What stays in memory is three integers a run.
"""

from __future__ import annotations

import tempfile
from typing import IO, Any, Callable, Generic, Iterator, TypeVar

from invariants.gate.spool import discard, dump_item, load_item

T = TypeVar("T")


class Parking(Generic[T]):
    """``park(place, item)`` in any order; ``take(place)`` gives back the run that starts at ``place``."""

    def __init__(self, encode: Callable[[T], Any], decode: Callable[[Any], T]) -> None:
        self._encode = encode
        self._decode = decode
        self._file: IO[bytes] | None = None
        self._runs: dict[int, list[int]] = {}  # first place -> [place after the run, file offset, bytes]
        self._last = -1  # first place of the run written last (the one a next place may extend)
        self._end = 0  # where the next item is written
        self._at_end = True
        self.parked = 0  # items parked over the run (a figure for tests and benchmarks)

    def __contains__(self, place: int) -> bool:
        return place in self._runs

    def __bool__(self) -> bool:
        return bool(self._runs)

    def park(self, place: int, item: T) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile()
        if not self._at_end:
            self._file.seek(self._end)
            self._at_end = True
        data = dump_item(self._encode(item)) + b"\n"
        run = self._runs.get(self._last)
        if run is not None and run[0] == place:
            run[0] += 1
            run[2] += len(data)
        else:
            self._runs[place] = [place + 1, self._end, len(data)]
            self._last = place
        self._file.write(data)
        self._end += len(data)
        self.parked += 1

    def take(self, place: int) -> Iterator[T]:
        """The items of the run that starts at ``place``, in place order (the run is forgotten)."""
        end, offset, size = self._runs.pop(place)
        if place == self._last:
            self._last = -1
        fh = self._file
        assert fh is not None
        fh.flush()
        fh.seek(offset)
        self._at_end = False
        read = 0
        for _ in range(end - place):
            line = fh.readline()
            read += len(line)
            yield self._decode(load_item(line))
        assert read == size
        if not self._runs:  # every run taken: the file starts over
            fh.seek(0)
            fh.truncate()
            self._end = 0

    def close(self) -> None:
        self._runs = {}
        if self._file is not None:
            discard(self._file)
            self._file = None
