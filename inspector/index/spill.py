"""A large folder's session rows, kept in a file as the worker makes them and read back one at a time.

A seed-era project folder (``cwd-<hash12>/<id>.jsonl``) holds every session of a project, often
thousands.  Its rows were one result: the worker held them all until the folder was done, sent them
to the writer as one object, and the writer held them until they were written: about 22 KB of
memory a small session (one folder of 8,000: 272 MB; now 175 MB, up to 64 of it the SQLite page
cache).  With a spill folder, each session's rows go to a file as soon as they are made, and the
writer reads them back one session at a time, in the order it writes them
(the worker makes them in another order: capture groups first need every member read).  Only a
writer on the same machine can read the file, so only local runs (this process, or its worker
processes) spill; a task sent to a Dask cluster keeps its rows in the result.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, TypeVar

T = TypeVar("T")

SPILL_LOGS = 64
"""A folder of more logs than this spills its rows when its task names a spill folder."""


@dataclass
class Rows(Generic[T]):
    """Items in writing order: in memory (``items``), or pickled in the file ``path``, the n-th
    starting at ``offsets[n]``.  Iterable more than once; :meth:`discard` deletes the file."""

    items: list[T] = field(default_factory=list)
    path: str | None = None
    offsets: list[int] = field(default_factory=list)

    def __iter__(self) -> Iterator[T]:
        if self.path is None:
            yield from self.items
            return
        with open(self.path, "rb") as fh:
            for at in self.offsets:
                if fh.tell() != at:  # most come in the order they were made: no seek, which drops the buffer
                    fh.seek(at)
                yield pickle.load(fh)

    def __len__(self) -> int:
        return len(self.offsets) if self.path is not None else len(self.items)

    def discard(self) -> None:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


class RowSink(Generic[T]):
    """Where a worker puts each item as it is made, under a sort key; :meth:`rows` gives them in key
    order.  With ``folder``, items are pickled to a new file in it at once and only their offsets kept."""

    def __init__(self, folder: str | None) -> None:
        self.kept: dict[Any, T] = {}
        self.at: dict[Any, int] = {}
        self.file = (
            tempfile.NamedTemporaryFile(dir=folder, prefix="rows-", suffix=".pickle", delete=False)
            if folder is not None
            else None
        )

    def put(self, key: Any, item: T) -> None:
        if self.file is None:
            self.kept[key] = item
            return
        self.at[key] = self.file.tell()
        pickle.dump(item, self.file, protocol=pickle.HIGHEST_PROTOCOL)

    def rows(self) -> Rows[T]:
        if self.file is None:
            return Rows([self.kept[k] for k in sorted(self.kept)])
        self.file.close()
        return Rows(path=self.file.name, offsets=[self.at[k] for k in sorted(self.at)])
