"""The surface fold and the derived message list, kept incrementally.

The surface is the ordered list of event seqs whose messages the model sees.
Appends only grow it; a replace (compaction, a tool-result rewrite) splices
it.  Instead of copying the list at every step we keep *generations*: the
current list grows in place, and a replace starts a new generation.  A
position in history is then ``(generation, length)``, and the messages of any
step are materialised on demand in time proportional to their number.

A generation is stored as the splice that started it and the seqs appended
during it, not as a copy of the list: a log that replaces its surface
thousands of times (a hostile one can) would otherwise hold thousands of
copies.  Full copies are kept as snapshots only while their total stays
within a budget proportional to the events seen; an older generation is
rebuilt from the nearest snapshot by replaying the splices (C-level slice
assignments), and the last one rebuilt is cached, so checking requests in
log order rebuilds each generation once.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

# Snapshot entries allowed per surface event seen (plus a floor): memory stays proportional to the log.
_SNAPSHOT_FACTOR = 4
_SNAPSHOT_FLOOR = 1 << 20


@dataclass(slots=True)
class ReplaceOutcome:
    ok: bool
    problem: str | None = None
    shadowed: list[int] = field(default_factory=list)


class Surface:
    def __init__(self) -> None:
        self.current: list[int] = []  # the current generation's list, growing in place
        # Finding a node's position without scanning: every live node has an order key (appends
        # count up; a replacement takes over its start's key), so ``_keys`` runs parallel to
        # ``current`` in ascending order and a position is one bisect.
        self._keys: list[int] = []
        self._key: dict[int, int] = {}  # live seq -> its key
        self._next_key = 0
        self.splices: list[tuple[int, int, int] | None] = [
            None
        ]  # per generation: (i, j, seq) applied to the previous final list
        self.appended: list[list[int]] = [[]]  # per generation: seqs appended during it, in order
        self.snapshots: dict[int, list[int]] = {}  # generation -> its final list (generations before the current)
        self._snapshot_size = 0
        self._events = 0
        self._cache: tuple[int, list[int]] | None = None  # the last generation rebuilt
        self._keep_next = False  # snapshot the current generation at the next replace, whatever the budget
        self.messages: dict[int, Any] = {}  # seq -> projected message (None = projects to nothing)
        self.lines: dict[int, int] = {}  # seq -> physical line of the surface event
        # (seq of the surface change, generation, length after it), in seq order
        self._points_seq: list[int] = []
        self._points: list[tuple[int, int]] = []

    @property
    def nodes(self) -> list[int]:
        return self.current

    @property
    def generation(self) -> int:
        return len(self.splices) - 1

    def position(self) -> tuple[int, int]:
        return self.generation, len(self.current)

    def append(self, seq: int, message: Any, line: int = 0) -> None:
        self.messages[seq] = message
        self.lines[seq] = line
        self.current.append(seq)
        self._keys.append(self._next_key)
        self._key[seq] = self._next_key
        self._next_key += 1
        self.appended[-1].append(seq)
        self._events += 1
        self._mark(seq)

    def _index(self, seq: Any) -> int | None:
        key = self._key.get(seq) if type(seq) is int else None
        return None if key is None else bisect.bisect_left(self._keys, key)

    def check_replace(self, start: int, end: int) -> ReplaceOutcome:
        nodes = self.current
        i = self._index(start)
        if i is None:
            return ReplaceOutcome(False, f"start seq {start} is not on the surface")
        j = self._index(end)
        if j is None:
            return ReplaceOutcome(False, f"end seq {end} is not on the surface")
        if i > j:
            return ReplaceOutcome(
                False, f"start seq {start} (position {i}) is after end seq {end} (position {j}) on the surface"
            )
        return ReplaceOutcome(True, shadowed=nodes[i : j + 1])

    def replace(self, seq: int, start: int, end: int, message: Any, line: int = 0) -> None:
        """Splice ``[start..end]`` (by position) into the new node; caller checked it."""
        nodes = self.current
        i, j = self._index(start), self._index(end)
        assert i is not None and j is not None, "check_replace accepted the range"
        self.messages[seq] = message
        self.lines[seq] = line
        self._events += 1
        if self._keep_next or self._snapshot_size + len(nodes) <= _SNAPSHOT_FLOOR + _SNAPSHOT_FACTOR * self._events:
            self._keep_next = False
            self.snapshots[self.generation] = nodes[:]  # the closing generation, kept whole
            self._snapshot_size += len(nodes)
        self.splices.append((i, j, seq))
        self.appended.append([])
        key = self._keys[i]
        for gone in nodes[i : j + 1]:
            del self._key[gone]
        nodes[i : j + 1] = [seq]
        self._keys[i : j + 1] = [key]
        self._key[seq] = key
        self._mark(seq)

    def _mark(self, seq: int) -> None:
        gen, length = self.position()
        self._points_seq.append(seq)
        self._points.append((gen, length))

    def position_before(self, seq: int) -> tuple[int, int]:
        """The surface as it stood over events with seq < ``seq``."""
        k = bisect.bisect_left(self._points_seq, seq)
        if k == 0:
            return 0, 0
        return self._points[k - 1]

    def final(self, gen: int) -> list[int]:
        """The whole list of generation ``gen`` (the current one as it stands); do not modify it."""
        if gen >= self.generation:
            return self.current
        if gen in self.snapshots:
            return self.snapshots[gen]
        cached = self._cache
        if cached is not None and cached[0] == gen:
            return cached[1]
        # Start from the nearest earlier generation known whole: a snapshot, the cache, or nothing.
        base = max((g for g in self.snapshots if g < gen), default=-1)
        if cached is not None and base < cached[0] < gen:
            base, lst = cached[0], list(cached[1])
        else:
            lst = list(self.snapshots[base]) if base >= 0 else []
        for g in range(base + 1, gen + 1):
            splice = self.splices[g]
            if splice is not None:
                i, j, seq = splice
                lst[i : j + 1] = [seq]
            lst.extend(self.appended[g])
        self._cache = (gen, lst)
        return lst

    def seqs_at(self, position: tuple[int, int]) -> list[int]:
        gen, length = position
        return self.final(gen)[:length]

    def messages_at(self, position: tuple[int, int]) -> tuple[list[Any], list[int]]:
        """Derived messages at a position, with the seq each came from.

        The messages of a whole generation are derived once (and extended as it
        grows) with a running count, so each request of a step costs two C-level
        slices: a capture of many small lines against a long history stays linear.
        """
        gen, length = position
        covered, out, origins, counts = self._derived_for(gen)
        k = counts[min(length, covered)]
        return out[:k], origins[:k]

    def _derived_for(self, gen: int) -> tuple[int, list[Any], list[int], list[int]]:
        cache = self.__dict__.setdefault("_derived", {})
        lst = self.final(gen)
        entry = cache.get(gen)
        if entry is None or (entry[0] > len(lst)):
            entry = (0, [], [], [0])
        covered, out, origins, counts = entry
        if covered < len(lst):
            get = self.messages.get
            n = len(out)
            for s in lst[covered:]:
                m = get(s)
                if m is not None:
                    out.append(m)
                    origins.append(s)
                    n += 1
                counts.append(n)
            entry = (len(lst), out, origins, counts)
        cache.pop(gen, None)
        cache[gen] = entry
        while len(cache) > 3:  # a few generations: memory stays a small multiple of the surface
            del cache[next(iter(cache))]
        return entry

    def __getstate__(self) -> dict:
        state = {
            k: getattr(self, k)
            for k in (
                "current",
                "_keys",
                "_key",
                "_next_key",
                "splices",
                "appended",
                "snapshots",
                "_snapshot_size",
                "_events",
                "_keep_next",
                "messages",
                "lines",
                "_points_seq",
                "_points",
            )
        }
        state["_cache"] = None
        return state  # the derived-message cache is rebuilt on demand

    def __setstate__(self, state: dict) -> None:
        if "generations" in state:  # a checkpoint written before generations were stored as splices
            gens = state.pop("generations")
            state.update(
                current=gens[-1],
                splices=[None] * len(gens),
                appended=[[] for _ in gens],
                snapshots=dict(enumerate(gens[:-1])),
                _snapshot_size=sum(map(len, gens[:-1])),
                _events=len(state.get("messages", {})),
                _keep_next=True,  # its appends were not recorded
                _keys=list(range(len(gens[-1]))),
                _key={s: k for k, s in enumerate(gens[-1])},
                _next_key=len(gens[-1]),
            )
        state.setdefault("_cache", None)
        state.setdefault("_keep_next", False)
        for k, v in state.items():
            setattr(self, k, v)
