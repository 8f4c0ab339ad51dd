"""Typed partial decoding of a run of plain ``assistant/chunk`` lines.

A streamed response is most of a log's lines, and the checker needs only a
few fields of each chunk: seq and time (the envelope checks), turn and step
(the chunk belongs to the open step) and the chunk's type (a ``usage`` chunk
carries the step's token counts).  msgspec decodes exactly those into Structs
and skips the rest (the text deltas) without building Python objects for
them, while still checking that every line is valid JSON.  Nothing is
decided here that the general path would decide differently: any run this
decoder does not accept (an extra or missing key, a wrong type, a syntax
error, bytes that are not UTF-8) goes through the general path, which
reports it as before.

msgspec does not check the UTF-8 of text it skips, and invalid UTF-8 is a
damaged line (``LOG001``), so a run that is not ASCII is decoded as UTF-8
first (in C, a fraction of the parse), as the capture reader does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from invariants.model.jsonvalue import is_utf8

_MAX_SAFE = 2**53 - 1


_SafeSeq = Annotated[int, msgspec.Meta(ge=0, le=_MAX_SAFE)]
_SafeTime = Annotated[int, msgspec.Meta(ge=-_MAX_SAFE, le=_MAX_SAFE)]


# gc=False: decoded JSON holds no reference cycles, and untracked Structs decode twice as fast.
class Typed(msgspec.Struct, gc=False):
    """An object of which only ``type`` is read (a ``block-end`` chunk's block)."""

    type: Any = UNSET


class Kind(msgspec.Struct, gc=False):
    """An object of which only ``kind`` is read (a ``finish`` chunk's reason)."""

    kind: Any = UNSET


# The chunk types the value checks know (``values.CHUNK_TYPES``): a known type decodes to its
# interned literal, and any other value fails the run over to the general path, which reports it.
ChunkType = Literal["block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"]


class TypedChunk(msgspec.Struct, gc=False):
    """The fields the value checks read of a chunk that is not a plain delta; every other key
    (a delta's text, a block's content) is skipped, its syntax checked.  A ``block`` or
    ``reason`` that is not an object fails the run over to the general path, which reports it."""

    type: ChunkType | None = None
    blockType: Any = UNSET
    block: Typed | UnsetType = UNSET
    reason: Kind | UnsetType = UNSET


class _Data(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int
    step: int
    chunk: TypedChunk


class _Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["assistant/chunk"]  # a duplicate "type" key after seq counts, as in JSON.parse (the last wins)
    seq: _SafeSeq
    time: _SafeTime
    data: _Data


_decode = msgspec.json.Decoder(_Line).decode_lines


class TypedRun:
    """What the fold needs of a run of chunk lines that all belong to one (turn, step):
    that pair, the first and last seq, every chunk's type, the typed fields of chunk ``i``
    (:meth:`chunk`: the replay checks the values of those that are not plain deltas) and
    the index of the last ``usage`` chunk (or None)."""

    __slots__ = ("turn", "step", "first_seq", "last_seq", "kinds", "_lines", "usage")

    def __init__(
        self,
        turn: int,
        step: int,
        first_seq: int,
        last_seq: int,
        kinds: list[str | None],
        lines: list[_Line],
        usage: int | None,
    ) -> None:
        self.turn, self.step, self.first_seq, self.last_seq = turn, step, first_seq, last_seq
        self.kinds, self._lines, self.usage = kinds, lines, usage

    def chunk(self, i: int) -> TypedChunk:
        return self._lines[i].data.chunk


def decode_run(text: bytes | memoryview, expected_seq: int, lines: int) -> TypedRun | None:
    """The run (its ``lines`` lines, newline-separated) as a :class:`TypedRun` when it is
    the plain case, else None (take the general path).

    The plain case: UTF-8, valid JSON, one value on each line, every line exactly
    ``{type, seq, time, data: {turn, step, chunk: {...}}}`` with integer seq, time,
    turn and step, a known chunk type (or none), seqs contiguous from
    ``expected_seq``, times safe integers and one (turn, step) throughout.  A
    memoryview ``text`` is a slice of a block already known to be ASCII.
    """
    if type(text) is bytes and not is_utf8(text):
        return None
    try:
        parsed = _decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    n = len(parsed)
    if n != lines:  # a line with two values (the line decoder takes whitespace between them)
        return None
    first, last = parsed[0], parsed[-1]
    if first.seq != expected_seq or last.seq != expected_seq + n - 1:
        return None
    # Comprehensions, not map(attrgetter(...)): a Struct's field read in bytecode is specialised, about
    # twice as fast over a run as the generic lookup attrgetter makes.
    if [line.seq for line in parsed] != list(range(expected_seq, expected_seq + n)):
        return None
    datas = [line.data for line in parsed]
    turn, step = first.data.turn, first.data.step
    if {d.turn for d in datas} != {turn} or {d.step for d in datas} != {step}:
        return None
    kinds: list[str | None] = [d.chunk.type for d in datas]
    usage = n - 1 - kinds[::-1].index("usage") if "usage" in kinds else None
    return TypedRun(turn, step, expected_seq, last.seq, kinds, parsed, usage)
