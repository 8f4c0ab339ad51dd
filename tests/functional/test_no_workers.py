"""No worker process can be started (a container at its process limit, a machine out of memory): a
``--jobs`` run goes on in this process, with the report the workers would have given and one note;
a local cluster that cannot start is one error line.  Each ended in a traceback before."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
from pathlib import Path

import psutil
import pytest

from inspector.cli import main
from inspector.index import build_index
from tests.support.index_db import assert_same, q
from tests.support.logs import make_root

pytestmark = pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork", reason="the pool's workers must start by os.fork"
)

NOTE = "no worker process could be started (BlockingIOError: [Errno 11] Resource temporarily unavailable)"


def _forks_fail(monkeypatch: pytest.MonkeyPatch, after: int = 0) -> list[int]:
    """``os.fork`` succeeds ``after`` times, then fails as at a process limit; returns the pids it made."""
    real = os.fork
    made: list[int] = []

    def fork() -> int:
        if len(made) >= after:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        pid = real()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return made


def _serial(root: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    code = main(["check", str(root), "--jobs", "1", "--no-cache", "--format", "json", "-q"])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("after", [0, 1], ids=["no-worker", "one-of-two"])
def test_check_goes_on_here_when_no_worker_can_start(tmp_path, monkeypatch, capsys, after) -> None:
    """Whether no worker started or one of two did (it is stopped), the report is the serial one, the
    exit code too, and stderr has the note once, without a traceback."""
    make_root(tmp_path / "root", n=8)
    code, serial = _serial(tmp_path / "root", capsys)
    made = _forks_fail(monkeypatch, after)
    got = main(["check", str(tmp_path / "root"), "--jobs", "2", "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert (got, out) == (code, serial)
    assert err.count(NOTE) == 1 and "Traceback" not in err
    assert len(made) == after
    assert not [p for p in made if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_check_goes_on_here_where_a_pool_cannot_be_made(tmp_path, monkeypatch, capsys) -> None:
    """Without POSIX semaphores (no ``/dev/shm``: AWS Lambda, some sandboxes) the pool's queues
    cannot be made: the same note, the same report."""
    from invariants.gate import process_pool

    def no_semaphores(*args, **kwargs):
        raise OSError(errno.ENOSYS, "Function not implemented")

    make_root(tmp_path / "root", n=4)
    code, serial = _serial(tmp_path / "root", capsys)
    monkeypatch.setattr(process_pool, "ProcessPoolExecutor", no_semaphores)
    got = main(["check", str(tmp_path / "root"), "--jobs", "2", "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert (got, out) == (code, serial) and "Traceback" not in err
    assert "no worker process could be started (OSError: [Errno 38] Function not implemented)" in err


def test_the_note_is_not_said_with_q(tmp_path, monkeypatch, capsys) -> None:
    make_root(tmp_path / "root", n=4)
    _forks_fail(monkeypatch)
    main(["check", str(tmp_path / "root"), "--jobs", "2", "--no-cache", "--format", "json", "-q"])
    assert capsys.readouterr().err == ""


def test_a_worker_died_on_item_is_not_run_here_when_no_other_can_start(tmp_path, monkeypatch, capsys) -> None:
    """Once a worker died, the items it may have died on are never run in this process (they could take
    it down too): with no worker to run them alone, each is a problem line; the rest is checked here."""
    from invariants.gate import unit

    written = list(make_root(tmp_path / "root", n=8).values())
    code, serial = _serial(tmp_path / "root", capsys)
    poisoned = written[4].folder
    real = unit.replay_source

    def dies(source, *args, **kwargs):
        if Path(str(source.path)).parent == poisoned:
            os._exit(9)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(unit, "replay_source", dies)
    _forks_fail(monkeypatch, after=2)  # the pool's two workers start; no process after them can
    got = main(["check", str(tmp_path / "root"), "--jobs", "2", "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    assert got == 2 and "Traceback" not in err
    lost = [line for line in err.splitlines() if "not checked" in line]
    assert f"{written[4].log}: not checked (its worker process ended abruptly, and no other could start:" in err
    report = json.loads(out)
    checked = {s["file"] for s in report["sessions"]}
    assert str(written[4].log) not in checked
    assert len(checked) + len(lost) == len(written)  # every log is in the report or a problem line
    kept = [s for s in json.loads(serial)["sessions"] if s["file"] in checked]
    assert report["sessions"] == kept


def test_index_goes_on_here_when_no_worker_can_start(tmp_path, monkeypatch) -> None:
    """With the run's configuration, which the workers would have been given as they started."""
    from invariants.gate.config import Config

    make_root(tmp_path / "root", n=8)
    build_index([tmp_path / "root"], tmp_path / "all.db", jobs=1)
    codes = sorted({code for (code,) in q(tmp_path / "all.db", "SELECT rule FROM findings")})
    config = Config(ignore=codes[:1], severity={codes[-1]: "info"})
    build_index([tmp_path / "root"], tmp_path / "serial.db", jobs=1, config=config)
    assert q(tmp_path / "serial.db", "SELECT count(*) FROM findings") != q(
        tmp_path / "all.db", "SELECT count(*) FROM findings"
    )
    _forks_fail(monkeypatch)
    stats = build_index([tmp_path / "root"], tmp_path / "index.db", jobs=2, config=config)
    assert stats.notes == [NOTE + "; the run went on in this process"] and not stats.problems
    assert_same(tmp_path / "index.db", tmp_path / "serial.db")
    in_rowid_order = "SELECT path FROM sessions ORDER BY rowid"
    assert q(tmp_path / "index.db", in_rowid_order) == q(tmp_path / "serial.db", in_rowid_order)


def test_a_local_cluster_that_cannot_start_is_one_line(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("distributed")
    from invariants.gate import executor_dask

    def cannot(modules: list[str]) -> bool:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    make_root(tmp_path / "root", n=2)
    monkeypatch.setattr(executor_dask, "start_fork_server", cannot)
    assert main(["check", str(tmp_path / "root"), "--scheduler", "local:2", "--no-cache", "-q"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "inspector: error: --scheduler local:2: cannot start the cluster's processes "
        "([Errno 11] Resource temporarily unavailable)\n"
    )


def test_the_api_says_it_in_the_result_notes(tmp_path, monkeypatch) -> None:
    from invariants import check

    make_root(tmp_path / "root", n=4)
    serial = check(tmp_path / "root", jobs=1)
    _forks_fail(monkeypatch)
    result = check(tmp_path / "root", jobs=2)
    assert result.notes == [NOTE + "; the run went on in this process"]
    assert result.findings == serial.findings and not serial.notes
