"""A pool worker killed mid-run (``kill -9``, the OOM killer on a huge log): the run loses only what that
worker died on, as problem lines (exit 2), and goes on; it ended in a traceback before."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.index import build_index
from tests.support.index_db import q
from tests.support.logs import make_root

pytestmark = pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork", reason="the workers must inherit the poisoned function"
)

DIED = "its worker process ended abruptly"


def _poison(monkeypatch: pytest.MonkeyPatch, module: object, name: str, folder: Path) -> None:
    """``module.name`` kills the worker process that calls it for a log of ``folder``, every time."""
    real = getattr(module, name)

    def dies(source, *args, **kwargs):
        if Path(str(source.path)).parent == folder:
            os._exit(9)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(module, name, dies)


def test_check_on_workers_loses_only_the_log_a_worker_died_on(tmp_path, monkeypatch, capsys) -> None:
    from invariants.gate import unit

    written = list(make_root(tmp_path / "root", n=8).values())
    assert main(["check", str(tmp_path / "root"), "--jobs", "1", "--no-cache", "--format", "json", "-q"]) == 1
    serial = json.loads(capsys.readouterr().out)
    poisoned = written[4]
    _poison(monkeypatch, unit, "replay_source", poisoned.folder)
    code = main(["check", str(tmp_path / "root"), "--jobs", "2", "--no-cache", "--format", "json", "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert f"{poisoned.log}: not checked ({DIED})" in err
    fleet = json.loads(out)
    others = [s for s in serial["sessions"] if s["file"] != str(poisoned.log)]
    assert len(others) == len(serial["sessions"]) - 1 and fleet["sessions"] == others
    assert [f for f in serial["findings"] if f["file"] != str(poisoned.log)] == fleet["findings"]


def test_index_on_workers_leaves_the_folder_a_worker_died_on_to_the_next_run(tmp_path, monkeypatch) -> None:
    from inspector.index import work

    written = list(make_root(tmp_path / "root", n=8).values())
    poisoned = written[4]
    with monkeypatch.context() as patch:
        _poison(patch, work, "replay", poisoned.folder)
        stats = build_index([tmp_path / "root"], tmp_path / "index.db", jobs=2)
    assert stats.problems == [f"{poisoned.log}: not indexed ({DIED})"]
    paths = {p for (p,) in q(tmp_path / "index.db", "SELECT path FROM sessions")}
    assert str(poisoned.log) not in paths and len(paths) == len(written) - 1
    again = build_index([tmp_path / "root"], tmp_path / "index.db", jobs=2)
    assert again.new == 1 and not again.problems


def test_a_fork_comparison_a_worker_died_on_is_a_problem_line(tmp_path, monkeypatch, capsys) -> None:
    """The seed comparisons of large forks go to the workers too; one whose worker dies every time is a
    problem line for the child (exit 2), the other children are compared as usual."""
    from invariants.analysis import forks
    from invariants.gate import assemble
    from tests.unit.test_fork_pass import _families

    _families(tmp_path, 6, tampered={2, 4})
    monkeypatch.setattr(assemble, "AUTO_BYTES", 0)  # every comparison goes to the workers
    monkeypatch.setattr(assemble, "FORK_BYTES", 0)
    real = forks.check_fork_sides

    def dies_on_child_2(child, parent, emit):
        if child.session == "child-2":
            os._exit(9)
        return real(child, parent, emit)

    monkeypatch.setattr(forks, "check_fork_sides", dies_on_child_2)
    code = main(["check", str(tmp_path), "--jobs", "2", "--no-cache", "--format", "json", "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert f"{tmp_path / 'f2' / 'a-child.jsonl'}: fork seed not checked ({DIED})" in err
    frk = [(f["rule"], f["session"]) for f in json.loads(out)["findings"] if f["rule"].startswith("FRK")]
    assert frk == [("FRK001", "child-4")]
