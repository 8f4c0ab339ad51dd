"""Results that arrive out of order, given back in item order as soon as each one can be."""

from __future__ import annotations

from invariants.gate.executor import in_order


def test_each_result_is_given_once_every_item_before_it_has_come() -> None:
    arrived = [(2, "c"), (0, "a"), (1, "b"), (4, "e"), (3, "d"), (5, "f")]
    given: list[tuple[int, str]] = []  # (how many had arrived when it was given, result)
    count = 0

    def arriving():
        nonlocal count
        for pair in arrived:
            count += 1
            yield pair

    for result in in_order(arriving()):
        given.append((count, result))
    assert given == [(2, "a"), (3, "b"), (3, "c"), (5, "d"), (5, "e"), (6, "f")]


def test_nothing_arrived_gives_nothing() -> None:
    assert list(in_order(iter(()))) == []
