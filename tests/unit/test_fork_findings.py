"""Fork findings point at the fork seed event, in the child and in the parent."""

from __future__ import annotations

from invariants import check
from invariants.simulate.convert import convert_log
from tests.support.logs import Log


def _seed_family(tmp_path, *, tamper: int | None = None, seed_cut: int = 0):
    p = Log("parent")
    p.clean_turn(1, header_reason="initial")
    p.clean_turn(2)
    boundary = len(p.events) - 1 - seed_cut
    child = Log("child", parentSession="parent", seedLength=boundary + 1)
    child.events = [dict(e) for e in p.events[: boundary + 1]]
    if tamper is not None:
        child.events[tamper] = {**child.events[tamper], "time": 1}
    p.write(tmp_path / "parent.jsonl")
    child.write(tmp_path / "child.jsonl")
    return check([tmp_path]), boundary


def test_a_seed_mismatch_points_at_the_differing_event_and_the_parents_line(tmp_path):
    result, _ = _seed_family(tmp_path, tamper=5)
    (f,) = [f for f in result.findings if f.rule == "FRK001"]
    assert (f.file.endswith("child.jsonl"), f.line, f.seq, f.path) == (True, 7, 5, "time")
    assert f.detail["parent_file"].endswith("parent.jsonl") and f.detail["parent_line"] == 7
    assert "the parent's line 7 in" in f.message


def test_an_open_seed_boundary_points_at_the_seeds_last_event(tmp_path):
    result, boundary = _seed_family(tmp_path, seed_cut=2)
    (f,) = [f for f in result.findings if f.rule == "FRK002"]
    assert (f.line, f.seq) == (boundary + 2, boundary)
    assert f.detail == {"parent_file": f.detail["parent_file"], "parent_line": boundary + 2}
    assert f.detail["parent_file"].endswith("parent.jsonl")


def test_the_parents_line_is_its_own_when_its_rows_are_packed(tmp_path):
    p = Log("parent", era="late")
    for turn in (1, 2):
        p.turn_start(turn)
        p.step_start(turn, 1)
        p.user(f"u{turn}")
        if turn == 1:
            p.snapshot()
        seqs = [p.chunk(turn, 1, t) for t in ("a", "b", "c", "d", "e")]
        p.assistant(turn, 1, [{"type": "text", "text": "abcde"}], seqs)
        p.step_end(turn, 1)
        p.turn_end(turn)
    plain = p.write(tmp_path / "parent-plain.jsonl")
    convert_log(plain, tmp_path / "family" / "parent.jsonl.zstd")  # five chunks per step become one row
    child = Log("child", era="late", parentSession="parent", seedLength=len(p.events))
    child.events = [dict(e) for e in p.events]
    tampered = len(p.events) - 2  # turn 2's step/end
    child.events[tampered] = {**child.events[tampered], "time": 1}
    child.write(tmp_path / "family" / "child.jsonl")
    result = check([tmp_path / "family"])
    (f,) = [f for f in result.findings if f.rule == "FRK001"]
    assert (f.line, f.seq) == (tampered + 2, tampered)
    assert f.detail["parent_line"] == tampered + 2 - 2 * 4  # each packed row holds 5 chunk events on one line
