"""Fork seeds: a child's first seedLength events are its parent's, ending on a closed turn."""

from __future__ import annotations

import orjson
import pytest

from invariants import check
from tests.support.logs import Log


def _family(tmp_path, *, tamper: bool = False, seed_cut: int = 0, seed_length: int | None = None, parent: bool = True):
    p = Log("parent")
    p.clean_turn(1, header_reason="initial")
    p.clean_turn(2)
    boundary = len(p.events) - 1 - seed_cut
    child = Log("child", parentSession="parent", seedLength=seed_length if seed_length is not None else boundary + 1)
    child.events = [dict(e) for e in p.events[: boundary + 1]]
    if tamper:
        child.events[1] = {
            **child.events[1],
            "data": {"content": [{"type": "text", "text": "changed"}], "source": {"kind": "user"}},
        }
    if not seed_cut and seed_length is None:
        child.clean_turn(3, header_reason="resume")
    if parent:
        p.write(tmp_path / "parent.jsonl")
    child.write(tmp_path / "child.jsonl")
    return check([tmp_path])


def _rules(result):
    return [f.rule for f in result.findings]


def test_faithful_fork_is_clean(tmp_path):
    assert _rules(_family(tmp_path)) == []


def test_tampered_seed_is_reported(tmp_path):
    result = _family(tmp_path, tamper=True)
    (f,) = [f for f in result.findings if f.rule == "FRK001"]
    assert f.seq == 1 and f.session == "child" and f.path.startswith("data")


def test_a_seed_copied_with_its_keys_in_another_order_is_the_same_seed(tmp_path):
    """Its text differs from the parent's, so the fields are walked: keys in another order are no
    difference (JSON.parse gives equal values); a changed value still is."""
    p = Log("parent")
    p.clean_turn(1, header_reason="initial")
    child = p.fork("child")
    i = next(i for i, e in enumerate(child.events) if e["type"] == "step/start")
    child.events[i] = {**child.events[i], "data": dict(reversed(list(child.events[i]["data"].items())))}
    assert orjson.dumps(child.events[i]) != orjson.dumps(p.events[i])
    child.clean_turn(2, header_reason="resume")
    p.write(tmp_path / "parent.jsonl")
    child.write(tmp_path / "child.jsonl")
    assert _rules(check([tmp_path])) == []
    child.events[i]["data"]["step"] = 7
    child.write(tmp_path / "child.jsonl")
    assert "FRK001" in _rules(check([tmp_path]))


def test_seed_ending_inside_a_turn_is_reported(tmp_path):
    assert "FRK002" in _rules(_family(tmp_path, seed_cut=2))


def test_missing_parent_is_an_info(tmp_path):
    result = _family(tmp_path, parent=False)
    assert [(f.rule, f.severity) for f in result.findings] == [("FRK003", "info")]


def test_seed_longer_than_the_log(tmp_path):
    assert "FRK004" in _rules(_family(tmp_path, seed_length=500))


def test_sample_fork_family_is_clean_of_errors():
    from tests.conftest import SAMPLES

    result = check([SAMPLES / "fork"])
    assert not [f for f in result.findings if f.severity == "error"]
    assert len(result.sessions) == 2
    child = [m for m in result.sessions if m.parent_session][0]
    assert child.seed_length > 0
    assert orjson.dumps([f.rule for f in result.findings]) == b'["PFX003"]'


def test_same_id_logs_in_unrelated_folders_are_not_taken_for_the_parent(tmp_path):
    """Ids repeat across test folders: a far log is the parent only if it is the only one created before the child."""
    import shutil

    root = tmp_path / "root"
    (root / "one").mkdir(parents=True)
    _family(root / "one")  # parent.jsonl + child.jsonl
    child = root / "one" / "child.jsonl"
    (root / "two").mkdir()
    shutil.move(str(child), root / "two" / "child.jsonl")
    assert _rules(check([root])) == []  # the only same-id parent under the root, created before: taken, seed equal
    other = Log("parent")
    other.clean_turn(1, header_reason="initial", header={"config": {"model": "zzz"}})
    (root / "three").mkdir()
    other.write(root / "three" / "parent.jsonl")
    result = check([root])
    assert [(f.rule, f.severity) for f in result.findings] == [("FRK003", "info")]  # ambiguous: not compared


def test_a_far_log_created_after_the_child_is_not_its_parent(tmp_path):
    import shutil

    root = tmp_path / "root"
    (root / "one").mkdir(parents=True)
    _family(root / "one")
    (root / "two").mkdir()
    shutil.move(str(root / "one" / "child.jsonl"), root / "two" / "child.jsonl")
    late = Log("parent")
    late.header["createdAt"] = 1_900_000_000_000
    late.clean_turn(1, header_reason="initial")
    (root / "one" / "parent.jsonl").write_bytes(b"\n".join(late.lines()) + b"\n")
    assert [f.rule for f in check([root]).findings] == ["FRK003"]


def _seed_family(tmp_path, variant: str):
    """A parent of two turns (the second streamed), and a child forked after them, written as
    ``variant`` says: the child's seed lines, or the parent's, changed in one way."""
    import zstandard

    p = Log("parent")
    p.clean_turn(1, header_reason="initial")
    p.user_turn("again")
    p.streamed_step("streamed reply of a few words")
    p.end_turn()
    child = p.fork("child")
    child.clean_turn(3, header_reason="resume")
    p.clean_turn(3, header_reason="resume")  # the parent goes on: it has events past the seed
    parent_lines, child_lines = p.lines(), child.lines()
    seed = child.header["seedLength"]
    if variant == "mid-turn":  # the seed ends on the parent's step/end, not its turn/end
        child.header["seedLength"] = seed - 1
        child_lines = child.lines()
    elif variant == "tampered":
        child_lines[3] = child_lines[3].replace(b'"turn":1', b'"turn":1,"extra":0')
    elif variant == "spaced":  # the same JSON, other bytes
        child_lines[2] = child_lines[2].replace(b'"seq":', b'"seq": ')
    elif variant == "damaged-in-both":  # the same bytes, but a line no reader takes for an event
        parent_lines[4] = child_lines[4] = b"{not json"
    elif variant == "seq-gap-in-both":
        parent_lines[4] = child_lines[4] = child_lines[4].replace(b'"seq":3', b'"seq":30')
    elif variant == "parent-short":
        parent_lines = parent_lines[: seed - 2]
    elif variant == "parent-header-damaged":
        parent_lines[0] = b"{oops"
    elif variant == "deep-in-both":
        deep = b"[" * 600 + b"]" * 600
        parent_lines[5] = child_lines[5] = child_lines[5].replace(b'"data":{', b'"data":{"x":' + deep + b",", 1)
    (tmp_path / "parent.jsonl").write_bytes(b"".join(line + b"\n" for line in parent_lines))
    text = b"".join(line + b"\n" for line in child_lines)
    if variant == "compressed":
        (tmp_path / "child.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    else:
        (tmp_path / "child.jsonl").write_bytes(text)


@pytest.mark.parametrize(
    "variant",
    [
        "faithful",
        "mid-turn",
        "tampered",
        "spaced",
        "damaged-in-both",
        "seq-gap-in-both",
        "parent-short",
        "parent-header-damaged",
        "deep-in-both",
        "compressed",
    ],
)
def test_a_seed_told_copied_from_its_bytes_is_reported_as_reading_both_heads_reports_it(tmp_path, monkeypatch, variant):
    """The byte comparison only ever skips reading the heads: with it and without it, a check
    reports the same findings, and it decides only a faithful copy that ends on a closed turn."""
    from invariants.analysis import forks

    _seed_family(tmp_path, variant)
    decided: list[bool] = []
    copied_seed = forks.copied_seed

    def told(*args):
        decided.append(copied_seed(*args))
        return decided[-1]

    monkeypatch.setattr(forks, "copied_seed", told)
    fast = orjson.dumps([f.to_json() for f in check([tmp_path]).findings])
    monkeypatch.setattr(forks, "copied_seed", lambda *args: False)
    slow = orjson.dumps([f.to_json() for f in check([tmp_path]).findings])
    assert fast == slow
    assert decided == [True] if variant == "faithful" else True not in decided
