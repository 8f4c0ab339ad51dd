"""Where a fork's parent may sit under its root: the root's index, held in SQLite, in candidate order."""

from __future__ import annotations

import os
import random
from pathlib import Path

from invariants.analysis.forks import RootIndex, parent_candidates, root_index_scope
from invariants.read.source import LogSource


def _listed(root: Path) -> dict[str, list[Path]]:
    """The index as a dict, the way it was kept before (sorted listings, the root's names first)."""
    where: dict[str, list[Path]] = {}
    top = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in os.scandir(root))
    for name, _ in top:
        where.setdefault(name, []).append(root / name)
    for name, is_dir in top:
        if is_dir:
            for e in sorted(os.scandir(root / name), key=lambda e: e.name):
                where.setdefault(e.name, []).append(root / name / e.name)
    return where


def test_the_index_gives_every_name_of_the_root_and_its_folders_in_candidate_order(tmp_path: Path) -> None:
    rng = random.Random(3)
    names = ["a1.jsonl", "a1", "b2.jsonl.zstd", "é.jsonl", "Z.jsonl", "session.jsonl", "x"]
    for d in ["--p--", "cwd-1", "ä", "B", "c"]:
        (tmp_path / d).mkdir()
        for n in rng.sample(names, 4):
            target = tmp_path / d / n
            target.mkdir() if n in ("a1", "x") else target.write_text("")
    (tmp_path / "a1.jsonl").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "c")  # a link to a folder is a name, never listed
    want = _listed(tmp_path)
    index = RootIndex(tmp_path)
    try:
        for name in [*names, "link", "c", "missing"]:
            assert index.get(name) == want.get(name, []), name
    finally:
        index.close()


def test_a_child_s_parent_places_are_the_same_inside_a_scope_and_out(tmp_path: Path) -> None:
    for d in ["--a--", "--b--"]:
        (tmp_path / d / "p1").mkdir(parents=True)
        (tmp_path / d / "p1" / "session.jsonl").write_text("")
    (tmp_path / "cwd-x").mkdir()
    (tmp_path / "cwd-x" / "p1.jsonl").write_text("")
    child = LogSource(tmp_path / "--a--" / "c1" / "session.jsonl", tmp_path)
    alone = parent_candidates(child, "p1")
    with root_index_scope():
        scoped = parent_candidates(child, "p1")
        again = parent_candidates(child, "p1")
    assert alone == scoped == again
    assert tmp_path / "--b--" / "p1" / "session.jsonl" in alone
    assert tmp_path / "cwd-x" / "p1.jsonl" in alone
