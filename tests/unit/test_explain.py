"""The explained report the pytest plugin fails with: compact expected/recorded pairs, inert log text."""

from __future__ import annotations

from invariants.gate.formats.explain import WIDTH, compact_pair, explain_findings, finding_block
from invariants.model.registry import make_finding


def test_a_short_pair_is_shown_whole():
    assert compact_pair('"abc"', '"abd"') == ('"abc"', '"abd"')


def test_a_long_pair_is_cut_a_little_before_the_first_difference():
    same = "x" * 500
    a, b = compact_pair(same + "EXPECTED" + "y" * 300, same + "RECORDED" + "y" * 300)
    assert a.startswith("…") and a.endswith("…") and b.startswith("…") and b.endswith("…")
    assert "EXPECTED" in a and "RECORDED" in b and "RECORDED" not in a
    assert len(a) <= WIDTH + 2 and a.index("EXPECTED") == b.index("RECORDED") > 1


def test_a_difference_near_the_start_keeps_the_start():
    a, b = compact_pair("A" + "z" * 400, "B" + "z" * 400)
    assert a.startswith("A") and b.startswith("B") and a.endswith("…")


def test_a_block_names_rule_place_path_values_and_capture_and_is_inert():
    f = make_finding(
        "DIV001",
        "messages diverge \x1b[2J",
        file="logs/s.jsonl",
        session="s",
        line=7,
        seq=6,
        turn=2,
        step=1,
        path="messages[1].content[0].text",
        detail={"expected": '"a\x1b]0;x"', "recorded": '"b"', "capture": "logs/requests.jsonl:3"},
    )
    text = "\n".join(finding_block(f))
    assert "DIV001 messages-diverge [request-divergence, error] at turn.step 2.1, line 7, seq 6" in text
    assert "path      messages[1].content[0].text" in text and "capture   logs/requests.jsonl:3" in text
    assert 'expected  "a\\x1b]0;x"' in text and 'recorded  "b"' in text
    assert "\x1b" not in text


def test_findings_are_grouped_by_file_after_the_unusable_inputs():
    one = make_finding("HDR002", "does not apply", file="a.jsonl", turn=1, step=1)
    two = make_finding("LOG003", "seq", file="b.jsonl", line=3, seq=2)
    text = explain_findings([one, two], (), "error", ["c.jsonl: cannot read"])
    lines = text.splitlines()
    assert lines[0] == "unusable input: c.jsonl: cannot read"
    assert "a.jsonl: 1 finding(s) at or above error" in lines and "b.jsonl: 1 finding(s) at or above error" in lines
    assert explain_findings([], (), "warning") == "no finding at or above warning"
