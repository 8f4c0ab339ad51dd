"""``inspector check --scheduler``: the per-unit half on a 2-worker Dask LocalCluster over loopback.

The report must be byte-identical to the serial one, and a worker lost
mid-run must neither hang the run nor shorten it.
"""

from __future__ import annotations

import os
import shutil
import sys
from functools import partial
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="the fleet extra (dask, distributed) is not installed")

from inspector.cli import main  # noqa: E402
from invariants.gate.executor_dask import DaskExecutor, SchedulerError, parse_scheduler, tapered  # noqa: E402
from invariants.gate.pipeline import check  # noqa: E402
from invariants.gate.unit import Unit, lost_result, plan_units, run_unit  # noqa: E402
from invariants.read.discover import discover  # noqa: E402
from invariants.read.source import LogSource  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_logs"
CORPUS = REPO.parent / "shared" / "corpus"


@pytest.fixture(scope="module")
def client():
    import cloudpickle
    import dask

    # The workers cannot import this test module by name: ship its functions by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # A task survives two lost workers (the one the test kills, and one the scheduler may count against it on a
    # loaded machine: a task queued on the killed worker, or a missed heartbeat); a third loses it.
    with dask.config.set({"distributed.scheduler.allowed-failures": 2}):
        with (
            distributed.LocalCluster(
                n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as c,
        ):
            yield c
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def json_report(capsys, source: Path | str, *extra: str) -> tuple[int, str]:
    return cli(capsys, "check", str(source), "--format", "json", "--no-cache", "-q", *extra)


def test_samples_report_is_byte_identical_to_serial(client, capsys):
    serial = json_report(capsys, SAMPLES)
    fleet = json_report(capsys, SAMPLES, "--scheduler", client.scheduler.address)
    assert serial[0] == 1  # the samples diverge on purpose
    assert fleet == serial


def test_a_local_cluster_gives_the_serial_report_with_quiet_forked_workers(capsys, recwarn):
    """``--scheduler local:2`` starts its own cluster: the report is the serial one, and its workers run
    without the housekeeping that takes the GIL from the task thread (forked on Linux).  Its scheduler
    listens on a free loopback port, so a taken 8787 (a user's own dashboard) draws no warning."""
    import socket

    import dask

    from invariants.gate.executor_dask import dask_executor

    serial = json_report(capsys, SAMPLES)
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 8787))
    except OSError:
        pass  # already taken, which is the case this is about
    with taken:
        assert json_report(capsys, SAMPLES, "--scheduler", "local:2") == serial
    assert [str(w.message) for w in recwarn if "already in use" in str(w.message)] == []
    with dask_executor("local:2", progress=None) as ex:
        assert ex.client.cluster.scheduler.http_server.port != 8787
        assert dict(ex.imap(abs, range(-3, 0))) == {0: 3, 1: 2, 2: 1}
        get = partial(ex.client.run, dask.config.get)
        assert set(get("distributed.worker.profile.enabled").values()) == {False}
        assert set(get("distributed.admin.tick.interval").values()) == {"1s"}
        if sys.platform == "linux":
            assert set(get("distributed.worker.multiprocessing-method").values()) == {"forkserver"}
        # the nanny's default would make glibc trim freed memory at once (10 % slower tasks)
        assert dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_") is None
        # the in-process scheduler's diagnostic logs stay short: at their defaults they grew the client to the end
        assert ex.client.cluster.scheduler.transition_log.maxlen == 50


HELD_AT_START = """
import os, sys, threading
held, taken = threading.Lock(), threading.Event()
def hold():
    with held:
        taken.set()
        threading.Event().wait()
threading.Thread(target=hold, daemon=True).start()
taken.wait()
# A process forked from this one finds the lock taken, as a worker forked while another thread wrote a log line
# finds that stream's lock: it would wait forever; here it says so and exits.
os.register_at_fork(after_in_child=lambda: held.acquire(timeout=1) or os._exit(17))
from inspector.cli import run
if __name__ == "__main__":
    sys.argv = ["inspector", "check", sys.argv[1], "--scheduler", "local:2", "--no-cache", "--format", "json", "-q"]
    run()
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no fork on Windows")
def test_a_lock_held_when_the_local_cluster_starts_never_reaches_a_worker(capsys, tmp_path):
    """Workers are forked from a fresh process, never from the client: a worker forked from a process
    whose other thread held a lock at that moment (a log line being written) hung a test run."""
    import subprocess

    script = tmp_path / "held.py"
    script.write_text(HELD_AT_START)
    serial = json_report(capsys, SAMPLES)
    done = subprocess.run([sys.executable, str(script), str(SAMPLES)], capture_output=True, text=True, timeout=180)
    assert (done.returncode, done.stdout) == serial, done.stderr[-2000:]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
def test_corpus_report_is_byte_identical_to_serial(client, capsys):
    serial = json_report(capsys, CORPUS)
    fleet = json_report(capsys, CORPUS, "--scheduler", client.scheduler.address)
    assert '"findings"' in serial[1]
    assert fleet == serial


def test_explicit_captures_on_the_cluster_give_the_serial_report(client, capsys):
    """With ``--captures`` the run is one unit: its replays are spread over the workers (``replay_job``)
    and every replayed model comes back to the client, which routes the captured requests."""
    captures = [arg for c in sorted(SAMPLES.glob("*.requests.jsonl"))[:8] for arg in ("--captures", str(c))]
    serial = json_report(capsys, SAMPLES, *captures)
    fleet = json_report(capsys, SAMPLES, *captures, "--scheduler", client.scheduler.address)
    assert serial != json_report(capsys, SAMPLES)  # the captures named are the ones compared
    assert fleet == serial


def _die_once(marker: str, target: str, job: tuple[Unit, object]) -> dict:
    """run_unit, except that the first worker to reach the ``target`` unit dies on it."""
    unit, _ = job
    if str(unit.sources[0].path.parent) == target and not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return run_unit(job)


def _die_always(job: tuple[Unit, object]) -> dict:
    os._exit(1)


class KillingExecutor(DaskExecutor):
    """Runs ``fn`` through ``wrap``, a worker-killing stand-in."""

    def __init__(self, client, wrap) -> None:
        # A unit lost on every attempt reads as the real run_unit's lost result, so a failure shows as a
        # problem line in the comparison below rather than as a TypeError about the wrapper.
        super().__init__(client, progress=None, batch=1, lost=lambda fn, job, why: lost_result(run_unit, job, why))
        self.wrap = wrap

    def imap(self, fn, items, costs=None):  # map goes through imap too
        if fn is not run_unit:  # the fork pass's seed comparisons: no worker dies there
            return super().imap(fn, items, costs)
        return super().imap(self.wrap, items, costs)


def _units_of(source: Path):
    sources, _ = discover([source])
    return plan_units(sources, None)


def test_a_worker_lost_mid_run_reruns_its_task(client, tmp_path):
    some = CORPUS / "upstream-seed-era" / "ui__acp__turns"  # 18 one-log folders: 18 tasks
    source = some if some.is_dir() else SAMPLES
    folders = [str(u.sources[0].path.parent) for u in _units_of(source)]
    marker = tmp_path / "killed"
    serial = check(source)
    wrap = partial(_die_once, str(marker), folders[len(folders) // 2])
    fleet = check(source, executor=KillingExecutor(client, wrap))
    assert marker.exists()  # a worker did die
    assert fleet.problems == serial.problems
    assert [s.to_json() for s in fleet.sessions] == [s.to_json() for s in serial.sessions]
    assert [f.to_json() for f in fleet.findings] == [f.to_json() for f in serial.findings]
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def test_a_task_that_kills_every_worker_becomes_a_problem_not_a_hang(client):
    executor = DaskExecutor(client, progress=None, lost=lambda fn, item, reason: f"lost {item}: {reason}")
    assert executor.map(_die_always, [7]) == ["lost 7: its worker was lost on every attempt"]
    client.wait_for_workers(2, timeout=60)


def test_lost_unit_names_every_log_of_it():
    unit = Unit([LogSource(Path("a/x.jsonl"), Path("a")), LogSource(Path("a/y.jsonl"), Path("a"))], [3, 4])
    assert lost_result(run_unit, (unit, None), "gone") == {
        "sessions": [],
        "problems": [[0, "a/x.jsonl: not checked (gone)"], [1, "a/y.jsonl: not checked (gone)"]],
        "captures": [],
    }


def test_scheduler_values():
    assert parse_scheduler("local") == ("local", None)
    assert parse_scheduler("local:3") == ("local", 3)
    assert parse_scheduler("tcp://127.0.0.1:8786") == ("tcp://127.0.0.1:8786", None)
    for bad in ("local:0", "local:x", "127.0.0.1:8786"):
        with pytest.raises(SchedulerError):
            parse_scheduler(bad)


@pytest.mark.parametrize("n", [0, 1, 7, 255, 256, 513, 1000, 5000])
@pytest.mark.parametrize("jobs", [1, 2, 5])
def test_a_stream_goes_in_full_tasks_then_ever_shorter_ones(n, jobs):
    batches = list(tapered(iter(range(n)), 256, jobs))
    assert [x for b in batches for x in b] == list(range(n))  # every unit once, in order
    sizes = [len(b) for b in batches]
    assert all(0 < s <= 256 for s in sizes)
    assert all(s >= 16 for s in sizes[:-1])  # never a task per unit at the end
    if n >= 256 * (jobs + 2):
        assert sizes[0] == 256  # a long stream is sent in full tasks...
        tail = sizes[sizes.index(max(s for s in sizes if s < 256)) :]
        assert tail == sorted(tail, reverse=True)  # ...and its end in shrinking ones
        assert sum(tail) >= 256 * jobs // 2 and tail[-1] < 64  # the last task is short


@pytest.mark.parametrize("n", [49, 300, 5000])
@pytest.mark.parametrize("jobs", [1, 2, 5])
def test_a_long_stream_starts_in_short_tasks_so_the_workers_start_while_it_is_walked(n, jobs):
    """``ramp``: the first ``jobs`` tasks take a sixteenth of a full one, each next ``jobs`` twice as
    many, up to full ones; the end still shrinks.  The first task leaves after ``16 * jobs + 16``
    units are read, 48 at two workers (a full first task waited for ``size * jobs + size``: 768)."""
    read = []

    def walked():
        for i in range(n):
            read.append(i)
            yield i

    stream = tapered(walked(), 256, jobs, ramp=True)
    first = next(stream)
    assert first == list(range(16)) and len(read) <= 16 * jobs + 16
    batches = [first, *stream]
    assert [x for b in batches for x in b] == list(range(n))
    sizes = [len(b) for b in batches]
    if n >= 256 * (jobs + 2):
        full = sizes.index(256)
        assert sizes[:full] == [16 << (k // jobs) for k in range(full)]  # 16, then doubled every `jobs` tasks
        tail = sizes[full:]
        end = tail.index(max(s for s in tail if s < 256))
        assert set(tail[:end]) == {256} and tail[end:] == sorted(tail[end:], reverse=True)


def test_one_unit_a_task_when_asked():
    assert list(tapered(iter(range(5)), 1, 2)) == [[0], [1], [2], [3], [4]]


def test_a_batch_asked_caps_a_tasks_items_and_a_short_run_still_spreads(client, monkeypatch):
    """``DaskExecutor(batch=N)`` (the index sends at most 64 folders a task, whose rows come back whole):
    no task holds more than N items, and a short run known whole still goes in a few tasks a worker."""
    import pickle

    sizes: list[int] = []
    submit = client.submit

    def counted(fn, *args, **kwargs):
        sizes.append(len(pickle.loads(args[1])))
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(client, "submit", counted)
    executor = DaskExecutor(client, batch=8)
    assert sorted(executor.imap(str, iter(range(100)))) == [(i, str(i)) for i in range(100)]
    assert sum(sizes) == 100 and max(sizes) == 8
    sizes.clear()
    assert sorted(executor.imap(str, list(range(40)))) == [(i, str(i)) for i in range(40)]
    assert sum(sizes) == 40 and max(sizes) == 40 // (2 * 4)  # two workers, four tasks each in flight


def test_unreachable_scheduler_is_a_one_line_error(capsys):
    code = main(["check", str(SAMPLES), "-q", "--no-cache", "--scheduler", "tcp://127.0.0.1:9"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "cannot connect" in err


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test (a test runner may have another), restored after."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_that_a_gc_hook_drops_still_stops_a_local_cluster_run_quietly(python_sigint, capfd):
    """The in-process scheduler hooks the garbage collector; a KeyboardInterrupt raised while such a hook
    runs is dropped by Python ("Exception ignored"), and the run went on to write its whole report.  Here
    the executor raises at its next result, leaving the block raises, the workers ignore Ctrl-C (the
    client stops them) and nothing is printed."""
    import gc
    import signal

    from invariants.gate.executor_dask import dask_executor

    def interrupt_inside_gc(phase: str, info: dict) -> None:
        if phase == "start":
            gc.callbacks.remove(interrupt_inside_gc)
            os.kill(os.getpid(), signal.SIGINT)  # its handler runs here, inside the hook

    left = False
    with pytest.raises(KeyboardInterrupt):
        with dask_executor("local:1", progress=None) as ex:
            assert set(ex.client.run(signal.getsignal, signal.SIGINT).values()) == {signal.SIG_IGN}
            gc.callbacks.append(interrupt_inside_gc)
            gc.collect()  # the interrupt is dropped here
            assert ex.interrupted
            with pytest.raises(KeyboardInterrupt):
                list(ex.imap(abs, range(3)))
            left = True
    assert left
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert "KeyboardInterrupt" not in capfd.readouterr().err


def test_ctrl_c_while_a_local_cluster_starts_stops_the_run_once_it_is_up(python_sigint, monkeypatch, capfd):
    """Raised inside Dask's start, an interrupt left a cluster that nothing closed (its close failed at
    exit, with a traceback): it is held until the cluster is up, then raised before any work is sent,
    and the cluster is closed."""
    import signal

    from distributed.deploy.spec import SpecCluster

    from invariants.gate.executor_dask import dask_executor

    class InterruptedCluster(distributed.LocalCluster):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)  # its handler runs here, before the cluster's block is entered

    monkeypatch.setattr(distributed, "LocalCluster", InterruptedCluster)
    ran = False
    with pytest.raises(KeyboardInterrupt):
        with dask_executor("local:1", progress=None):
            ran = True
    assert not ran
    assert [c for c in SpecCluster._instances if isinstance(c, InterruptedCluster) and c.status.name != "closed"] == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def _samples_without_database(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    shutil.copytree(SAMPLES, root, ignore=shutil.ignore_patterns("*.sqlite", "EXPECTED.json", "README.md"))
    return root


def test_a_file_url_on_the_cluster_gives_the_serial_report_of_the_same_files(client, capsys, tmp_path):
    # memory:// lives in one process, so the workers could not see it: file:// is the URL they share.
    root = _samples_without_database(tmp_path)
    serial = json_report(capsys, root)
    fleet = json_report(capsys, f"file://{root}", "--scheduler", client.scheduler.address)
    assert serial[0] == 1 and f"file://{root}/" in fleet[1]
    assert fleet == (serial[0], serial[1].replace(str(root), f"file://{root}"))


# Columns that say when or by which process a row was written, not what it holds; a checkpoint is
# an opaque pickle whose bytes depend on the process that made it (resuming from it is tested below).
_VOLATILE = {
    "runs": None,
    "meta": {"value"},
    "sessions": {"indexed_at"},
    "captures": {"indexed_at"},
    "checkpoints": {"data", "size"},
}


def _tables(db: Path) -> dict[str, list[tuple]]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            if "_fts" not in r[0]  # full-text search tables: derived from the messages, compared there
        ]
        out = {}
        for t in names:
            if t in _VOLATILE and _VOLATILE[t] is None:
                continue
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})") if r[1] not in (_VOLATILE.get(t) or ())]
            out[t] = conn.execute(f"SELECT {', '.join(cols)} FROM {t} ORDER BY rowid").fetchall()
        out["meta"] = conn.execute("SELECT key, value FROM meta WHERE key != 'created_at' ORDER BY key").fetchall()
        return out
    finally:
        conn.close()


def _index(capsys, root: Path, db: Path, *extra: str) -> dict:
    import json

    code = main(["index", str(root), "--db", str(db), "--json", *extra])
    out, _ = capsys.readouterr()
    assert code == 0
    return json.loads(out)


def test_the_index_built_on_the_cluster_equals_the_serial_one_also_incrementally(client, capsys, tmp_path):
    root = _samples_without_database(tmp_path)
    serial_db, fleet_db = tmp_path / "serial.db", tmp_path / "fleet.db"
    fleet = ("--scheduler", client.scheduler.address)
    first = _index(capsys, root, serial_db, "--jobs", "1")
    assert first["sessions"] > 10 and first["findings"] > 0
    assert _index(capsys, root, fleet_db, *fleet)["new"] == first["new"]
    serial_tables = _tables(serial_db)
    assert serial_tables["steps"] and serial_tables["findings"] and serial_tables["requests"]
    assert _tables(fleet_db) == serial_tables
    # A log grows: both resume it from their own checkpoint and store the same new rows.
    with open(root / "clean-multi-turn.jsonl", "ab") as fh:
        fh.write(b'{"not": "an event"}\n')
    again = _index(capsys, root, serial_db, "--jobs", "1")
    assert (again["appended"], again["unchanged"]) == (1, first["sessions"] - 1)
    assert _index(capsys, root, fleet_db, *fleet)["appended"] == 1
    grown = _tables(serial_db)
    assert grown["findings"] != serial_tables["findings"]
    assert _tables(fleet_db) == grown


def test_an_index_of_many_folders_built_on_the_cluster_is_the_serial_one_in_its_order(client, capsys, tmp_path):
    """Many folders go out in several tasks that finish in any order; the one writer still writes them
    in the serial run's order (its rowids), each as soon as the folders before it are in."""
    from tests.support.logs import make_root

    make_root(tmp_path / "root", n=24)
    serial = _index(capsys, tmp_path / "root", tmp_path / "serial.db", "--jobs", "1")
    fleet = _index(capsys, tmp_path / "root", tmp_path / "fleet.db", "--scheduler", client.scheduler.address)
    assert fleet["new"] == serial["new"] > 20
    assert _tables(tmp_path / "fleet.db") == _tables(tmp_path / "serial.db")


def test_a_lost_index_task_names_every_log_of_its_folder():
    from inspector.index.schedule import indexed_group, lost_group
    from inspector.index.work import GroupTask, LogTask, Stat

    logs = [LogTask(LogSource(Path(f"a/{n}.jsonl"), Path("a")), Stat(1, 2, 3, 4), None, True) for n in "xy"]
    lost = lost_group(indexed_group, (GroupTask("a", logs, [], False, []), None), "gone")
    assert lost.problems == ["a/x.jsonl: not indexed (gone)", "a/y.jsonl: not indexed (gone)"]
