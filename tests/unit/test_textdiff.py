"""textdiff: both sides of a difference windowed on it, the changed runs marked, never cut before it."""

from __future__ import annotations

from invariants.model.jsonvalue import MISSING
from invariants.model.textdiff import CHANGED, CUT, SAME, diff_text, diff_values, plain, preview_pair

PROMPT = " ".join(f"Rule {i}: answer in plain words and cite the file you read." for i in range(1, 81))


def _changed(pieces) -> list[str]:
    return [p.text for p in pieces if p.kind == CHANGED]


def test_a_word_changed_in_the_middle_of_a_long_string_is_in_both_windows():
    edited = PROMPT.replace("Rule 40: answer in plain", "Rule 40: answer in terse")
    d = diff_text(PROMPT, edited)
    assert d.offset == PROMPT.index("Rule 40: answer in plain") + len("Rule 40: answer in ")
    left, right = plain(d.expected), plain(d.recorded)
    assert "Rule 40: answer in plain words" in left and "Rule 40: answer in terse words" in right
    assert left != right
    # the windows open with a cut of the same length on both sides, and end with one
    assert d.expected[0].kind == CUT and d.expected[0].omitted == d.recorded[0].omitted > 1000
    assert d.expected[-1].kind == CUT and d.recorded[-1].kind == CUT
    assert _changed(d.expected) == ["plain"] and _changed(d.recorded) == ["terse"]
    # what is shown plus what is cut is the whole string
    assert sum(len(p.text) + p.omitted for p in d.expected) == len(PROMPT)
    assert sum(len(p.text) + p.omitted for p in d.recorded) == len(edited)


def test_shorten_would_have_shown_two_identical_previews_and_preview_pair_does_not():
    from invariants.model.jsonvalue import shorten

    edited = PROMPT.replace("Rule 40: answer in plain", "Rule 40: answer in terse")
    assert shorten(PROMPT, 80) == shorten(edited, 80)
    a, b = preview_pair(PROMPT, edited, width=80)
    assert a != b and "plain" in a and "terse" in b
    assert a.startswith("…(") and len(a) <= 80 + 2 * len("…(0000 chars)…")


def test_a_character_inside_a_word_is_the_changed_run():
    d = diff_text("the quick brown fox", "the quick brawn fox")
    assert [(p.kind, p.text) for p in d.expected] == [(SAME, "the quick br"), (CHANGED, "o"), (SAME, "wn fox")]
    assert _changed(d.recorded) == ["a"]


def test_an_appended_tail_is_changed_on_one_side_only():
    d = diff_text("Let me count them.", "Let me count them. (edited)")
    assert _changed(d.expected) == [] and _changed(d.recorded) == [" (edited)"]
    assert d.offset == len("Let me count them.")


def test_two_distant_changes_keep_the_common_text_between_them_folded():
    edited = PROMPT.replace("Rule 10: answer", "Rule 10: reply").replace("Rule 70: answer", "Rule 70: reply")
    d = diff_text(PROMPT, edited, width=400)
    assert _changed(d.expected) == ["answer", "answer"] and _changed(d.recorded) == ["reply", "reply"]
    inner = [p for p in d.expected[1:-1] if p.kind == CUT]
    assert inner and inner[0].omitted > 2000  # the run between them is cut, not shown


def test_equal_values_and_values_of_any_kind():
    same = diff_text("abc", "abc")
    assert same.offset == -1 and plain(same.expected) == "abc"
    d = diff_values({"role": "user", "content": "hi"}, MISSING)
    assert plain(d.recorded) == "<absent>" and plain(d.expected).startswith('{"role":"user"')
    q = diff_values("line one\nline two", "line one\nline 2")
    assert plain(q.expected) == '"line one\nline two"' and q.offset == len("line one\nline ")  # characters, not JSON
    n = diff_values(0.2, 0.7)
    assert _changed(n.expected) == ["2"] and _changed(n.recorded) == ["7"]


def test_width_bounds_what_is_shown_however_long_the_change():
    d = diff_text("a" * 10 + "x" * 5000, "a" * 10 + "y" * 5000, width=100)
    assert sum(len(p.text) for p in d.expected) == 100
    assert d.expected[-1].kind == CUT and d.expected[-1].omitted == 4910
