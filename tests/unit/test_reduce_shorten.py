"""String cuts of the reducer: a window around the difference from the nearest relative, else the head."""

from __future__ import annotations

from invariants.reduce.shorten import LONG, WINDOW, cuts

HEAD = "You are an AI agent powered by the DeepSeek Harness SDK, answer briefly."
CHANGED = HEAD + "\nA line the header never wrote."


def test_a_string_and_its_relative_are_cut_to_a_window_around_their_difference():
    (cut,) = cuts([HEAD, CHANGED])[:1]
    assert cut == {HEAD: HEAD[-WINDOW:], CHANGED: CHANGED[len(HEAD) - WINDOW :]}
    assert cut[CHANGED].startswith(cut[HEAD])  # the difference (the added line) survives the cut


def test_a_difference_in_the_middle_keeps_a_window_on_each_side():
    a = "x" * 40 + "AAAA" + "y" * 40
    b = "x" * 40 + "BBBBB" + "y" * 40
    cut = cuts([a, b])[0]
    assert cut == {a: "x" * WINDOW + "AAAA" + "y" * WINDOW, b: "x" * WINDOW + "BBBBB" + "y" * WINDOW}


def test_a_string_without_relative_keeps_its_head():
    lone = "q" * (LONG + 10)
    other = "z" * (LONG + 10)
    assert cuts([lone, other]) == [{lone: lone[:WINDOW]}, {other: other[:WINDOW]}]
