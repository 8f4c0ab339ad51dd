"""Parked items: written in any order, each run of consecutive places taken back whole, in order."""

from __future__ import annotations

import random

import pytest

from invariants.gate.parking import Parking


def _drain(parking: Parking, held: dict[int, str], start: int) -> list[str]:
    """What a reorder window emits from ``start``: held items and parked runs, in place order."""
    out, nxt = [], start
    while True:
        if nxt in held:
            out.append(held.pop(nxt))
            nxt += 1
        elif nxt in parking:
            for item in parking.take(nxt):
                out.append(item)
                nxt += 1
        else:
            return out


def test_consecutive_places_make_one_run_and_come_back_in_order() -> None:
    parking: Parking[dict] = Parking(dict, dict)
    for place in range(10, 20):
        parking.park(place, {"place": place, "text": "\ud800" if place == 13 else "é"})
    assert 10 in parking and 11 not in parking  # one run, named by its first place
    assert [x["place"] for x in parking.take(10)] == list(range(10, 20))
    assert not parking and parking.parked == 10
    parking.park(5, {"place": 5})  # the emptied file starts over
    assert [x["place"] for x in parking.take(5)] == [5]
    parking.close()


@pytest.mark.parametrize("seed", range(5))
def test_any_arrival_order_with_some_items_held_drains_to_place_order(seed: int) -> None:
    rnd = random.Random(seed)
    places = list(range(200))
    # mostly in order (cache answers), with stragglers arriving late (the units being checked)
    late = set(rnd.sample(places, 20))
    order = [p for p in places if p not in late] + rnd.sample(sorted(late), len(late))
    parking: Parking[str] = Parking(str, str)
    held: dict[int, str] = {}
    emitted: list[str] = []
    nxt = 0
    for p in order:
        if rnd.random() < 0.3 or p == nxt:
            held[p] = str(p)
        else:
            parking.park(p, str(p))
        got = _drain(parking, held, nxt)
        emitted += got
        nxt += len(got)
    assert emitted == [str(p) for p in places]
    assert not parking and not held
    parking.close()
