"""A run of consecutive plain ``assistant/chunk`` envelopes, held as one value so a log of many
chunks is read without an object per chunk (:class:`ChunkRun`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from invariants.read.envelope import parse_json
from invariants.read.rows_fast import expand_row_fast

if TYPE_CHECKING:
    from invariants.read.chunk_typed import TypedRun


class ChunkRun:
    """Consecutive plain ``assistant/chunk`` envelopes, validated as a run.

    Envelope and seq checks are done; the contract checks (open turn/step) are
    the replay's, which may fall back to event-by-event handling.  A run the
    typed decoder took (``typed``, see :mod:`invariants.read.chunk_typed`)
    keeps its raw ``lines`` and parses an event only when one is asked for.
    A run held before it is folded (the era sniff reads ahead) is
    :meth:`compact`: its events are parsed again from its ``lines`` or its
    packed ``row`` when asked for, so what is held does not grow with the
    number of chunks a row packs.
    """

    __slots__ = ("_objs", "_datas", "line_step", "lines", "typed", "row", "_n")

    def __init__(
        self,
        objs: list[dict] | None,
        datas: list | None,
        line_step: int = 1,
        lines: list[bytes] | None = None,
        typed: TypedRun | None = None,
        row: bytes | None = None,
    ) -> None:
        self._objs, self._datas = objs, datas
        self.line_step = line_step  # 1: one event per physical line; 0: the members of one packed row
        self.lines = lines
        self.typed = typed
        self.row = row  # the packed row's line, its events expanded from it
        self._n = len(objs) if objs is not None else len(lines or ())

    def __len__(self) -> int:
        return self._n

    def nbytes(self) -> int:
        """Bytes of the run's lines (0 for a packed row)."""
        return sum(map(len, self.lines)) if self.lines is not None else 0

    def compact(self) -> None:
        """Drop the parsed events if they can be had again (from the raw lines or the packed row)."""
        if self.lines is not None or self.row is not None:
            self._objs = self._datas = None

    @property
    def objs(self) -> list[dict]:
        if self._objs is None:
            self._objs = _row_events(self.row) if self.row is not None else _parse_run(self.lines or [])
        return self._objs

    @property
    def datas(self) -> list:
        if self._datas is None:
            self._datas = [o["data"] for o in self.objs]
        return self._datas

    def seq(self, i: int) -> int:
        """The seq of event ``i`` (a typed run's seqs are contiguous, checked by its decoder)."""
        if self.typed is not None:
            return self.typed.first_seq + i % len(self)
        return self.objs[i]["seq"]

    def events(self, indices: list[int]) -> list[dict]:
        """Events ``indices`` of the run, parsed in one pass when the run was not."""
        if self._objs is not None or self.row is not None:
            return [self.objs[i] for i in indices]
        lines = self.lines or []
        return _parse_run([lines[i] for i in indices])

    def event(self, i: int) -> dict:
        """Event ``i`` of the run, parsed alone when the run was not."""
        if self._objs is not None or self.row is not None:
            return self.objs[i]
        return _parse_run([self.lines[i]])[0]  # type: ignore[index]


def _parse_run(lines: list[bytes]) -> list[dict]:
    """The events of lines the typed decoder accepted, as the general path parses them."""
    try:
        return orjson.loads(b"[" + b",".join(lines) + b"]")
    except orjson.JSONDecodeError:  # a number orjson refuses (the general path then asks json)
        return [parse_json(line)[0] for line in lines]


def _row_events(line: bytes) -> list[dict]:
    """The events of a packed row's line that was read before (so it parses and expands)."""
    from invariants.read.chunk_rows import expand_row

    row = parse_json(line)[0]
    return expand_row_fast(row) or expand_row(row)
