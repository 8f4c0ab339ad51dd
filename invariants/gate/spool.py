"""A sequence written once and read again in order: held in memory, or as JSON lines in a temporary file.

The streamed check writes each session's block here as its unit completes
(in report order), so what a run holds is the reorder window, not the run:
the report is read back from the spool once every unit is done (the JSON
report's summary comes before its sessions, so nothing can be printed
before the last unit).  An in-memory spool keeps the objects themselves,
for callers that want a whole :class:`~invariants.gate.result.CheckResult`.
"""

from __future__ import annotations

import tempfile
from typing import IO, Any, Callable, Generic, Iterator, TypeVar

import orjson

T = TypeVar("T")


class Spool(Generic[T]):
    """Append, then iterate any number of times.  ``encode``/``decode`` give a disk spool (a temporary
    file, deleted on close); without them the items stay in memory."""

    def __init__(
        self,
        encode: Callable[[T], Any] | None = None,
        decode: Callable[[Any], T] | None = None,
    ) -> None:
        self._encode = encode
        self._decode = decode
        self._items: list[T] = []
        self._file: IO[bytes] | None = tempfile.TemporaryFile() if encode is not None else None
        self._at_end = True  # False once read: the next append seeks back (a seek flushes the buffer)
        self.count = 0
        self.fallbacks = 0  # items the json module had to encode (orjson could not)

    @property
    def on_disk(self) -> bool:
        return self._file is not None

    def append(self, item: T) -> None:
        if self._file is None:
            self.count += 1
            self._items.append(item)
            return
        assert self._encode is not None
        self.append_encoded(self._encode(item))

    def append_encoded(self, value: Any) -> None:
        """An item of a disk spool as ``encode`` would give it (one read from :meth:`encoded`)."""
        assert self._file is not None, "only a disk spool keeps its items encoded"
        self.count += 1
        if not self._at_end:
            self._file.seek(0, 2)
            self._at_end = True
        data = dump_item(value)
        self.fallbacks += data[:1] == b"\x00"
        self._file.write(data + b"\n")

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[T]:
        if self._file is None:
            yield from self._items
            return
        assert self._decode is not None
        decode = self._decode
        for value in self.encoded():
            yield decode(value)

    def encoded(self) -> Iterator[Any]:
        """A disk spool's items as ``encode`` gave them, not decoded (a reader that needs a few fields)."""
        assert self._file is not None, "only a disk spool keeps its items encoded"
        fh = self._file
        fh.flush()
        fh.seek(0)
        self._at_end = False
        for line in fh:  # sequential readers only (a report reads its blocks once per section)
            yield load_item(line)

    def close(self) -> None:
        self._items = []
        if self._file is not None:
            discard(self._file)
            self._file = None

    def __del__(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            discard(f)


def discard(fh: IO[bytes]) -> None:
    """Close a temporary file no one reads again.  Closing flushes its buffer, which on a full disk
    fails as the write before it did: that write's error is the one to say, not this one."""
    try:
        fh.close()
    except OSError:
        pass


def dump_item(value: Any) -> bytes:
    """One item as bytes without a newline: orjson's JSON, or ``\\x00`` and the json module's where orjson
    refuses the value."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # lone surrogates, huge ints: the json module carries them
        import json

        return b"\x00" + json.dumps(value, ensure_ascii=True).encode()


def load_item(line: bytes) -> Any:
    """The value :func:`dump_item` gave ``line`` for."""
    if line[:1] == b"\x00":
        import json

        return json.loads(line[1:])
    return orjson.loads(line)
