"""The cyclic garbage collector during a check: paused, then never made to rescan what the check kept.

Parsed JSON holds no reference cycles, so reference counting frees it; left
on, the cyclic collector would rescan every retained message on each
allocation burst (a quarter of a large check).  Turned back on at the end, it
would make one pass over everything the run kept, because all of it is still
in the youngest generation (a third of a large check, and another pass at
interpreter exit).  So the run's objects are frozen (``gc.freeze``) instead:
no collection ever scans them, and reference counting still frees them.

A replayed session holds no reference cycle (the fold's parts report to a
findings sink, not back to the replay, and their handler tables are plain
functions), so reference counting frees a unit's objects as soon as its
result is taken.  What a unit leaves cyclic all the same (an exception kept
with its traceback, a library's own cycles) would stay until the end:
:func:`collect_young` after each unit frees it, scanning only what was
allocated since the last unit and is still alive (the young generation),
never what the run keeps.

Cyclic garbage among frozen objects is only freed by a full collection.  A
long-lived process (the TUI, an index build) runs many checks, so a run
starts with one whenever the frozen heap has doubled since the last: the
collector's work stays proportional to what is allocated, and memory within
about twice what is live.

Each unit's cyclic garbage is collected when the next unit starts, and the
last unit's when the run ends, unless the process ends with the run
(``collect_last=False``: the ``inspector check`` command): that collection
would visit what the run allocated since the last unit to free memory no
one would use.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

MIN_COLLECT = 1_000_000  # frozen objects below which a run never starts with a full collection


class _Frozen:
    after_collect = 0  # gc.get_freeze_count() right after the last full collection started here


@contextmanager
def collector_paused(collect_last: bool = True) -> Iterator[None]:
    was = gc.isenabled()  # False inside another paused run: the outermost one freezes
    if was and gc.get_freeze_count() > max(MIN_COLLECT, 2 * _Frozen.after_collect):
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _Frozen.after_collect = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if collect_last:
                gc.collect(0)  # the last unit's garbage (each earlier one's went when the next began)
            gc.freeze()
            gc.enable()


def collect_young() -> None:
    """Free the cyclic garbage of the units checked so far (the youngest generation only), when paused."""
    if not gc.isenabled():
        gc.collect(0)
