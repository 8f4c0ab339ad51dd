"""Logs named by fsspec URLs (``memory://``, ``file://``) read like the same files on disk.

The tree is ``sample_logs/`` without its SQLite database (databases are read
from local paths only): logs with captures beside them, plain and zstd, a
torn zstd log, forks.  The JSON report of the URL must be the report of the
disk copy, with the file names as the user wrote them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

fsspec = pytest.importorskip("fsspec", reason="the fleet extra (fsspec) is not installed")

from inspector.cli import main  # noqa: E402
from invariants.read.discover import discover  # noqa: E402
from invariants.read.source import UrlPath  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_logs"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    shutil.copytree(SAMPLES, root, ignore=shutil.ignore_patterns("*.sqlite", "EXPECTED.json", "README.md"))
    return root


def _to_memory(root: Path) -> str:
    """The tree copied into the process's memory filesystem; its URL."""
    fs = fsspec.filesystem("memory")
    base = f"/t-{uuid.uuid4().hex[:8]}"
    for p in sorted(root.rglob("*")):
        if p.is_file():
            fs.pipe(f"{base}/{p.relative_to(root).as_posix()}", p.read_bytes())
    return f"memory://{base}"


def _report(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv, "--format", "json", "--no-cache", "-q"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def disk(tmp_path, capsys):
    root = _tree(tmp_path)
    code, out, _ = _report(capsys, str(root))
    assert code == 1 and '"DIV001"' in out  # the samples diverge on purpose
    return root, code, out


def test_a_memory_url_gives_the_report_of_the_same_files_on_disk(disk, capsys):
    root, code, out = disk
    url = _to_memory(root)
    got = _report(capsys, url)
    assert url in got[1] and str(root) not in got[1]  # file names as the user wrote them
    assert got[:2] == (code, out.replace(str(root), url))


def test_a_file_url_gives_the_report_of_the_same_files_on_disk(disk, capsys):
    root, code, out = disk
    url = f"file://{root}/"  # a trailing slash names the same folder
    got = _report(capsys, url)
    assert got[:2] == (code, out.replace(str(root), f"file://{root}"))


def test_a_memory_url_discovers_in_the_order_of_a_local_folder_with_zstd_logs(disk):
    root, _, _ = disk
    url = _to_memory(root)
    local, _ = discover([root])
    remote, problems = discover([url])
    assert problems == []
    assert [s.display.replace(url, str(root)) for s in remote] == [s.display for s in local]
    assert all(isinstance(s.path, UrlPath) for s in remote)
    assert any(s.compressed for s in remote)


def test_a_url_is_walked_as_it_is_checked_not_listed_first(disk, monkeypatch):
    """A bucket of tens of thousands of sessions was listed whole before its first log was checked
    (every source held: 330 bytes a session, peak RSS 41.8 -> 48.4 MB from 10,000 to 30,000
    sessions on a file:// root); now its folders are listed as the walk reaches them."""
    from invariants.read.discover import iter_discover

    root, _, _ = disk
    url = _to_memory(root)
    listed: list[str] = []
    real = UrlPath.children

    def children(self):
        listed.append(str(self))
        return real(self)

    monkeypatch.setattr(UrlPath, "children", children)
    problems: list[str] = []
    walk = iter_discover([url], problems)
    first = next(walk)
    assert first.display == f"{url}/capture-divergence.jsonl"
    assert listed == [url]  # its own folder only: the sub-folders wait for the walk
    rest = list(walk)
    assert len(listed) > 1 and len(rest) + 1 == len(discover([root])[0])


def test_explicit_captures_may_be_urls(disk, capsys):
    root, _, _ = disk
    url = _to_memory(root)
    log, capture = "capture-divergence.jsonl", "capture-divergence.requests.jsonl"
    on_disk = _report(capsys, str(root / log), "--captures", str(root / capture))
    got = _report(capsys, f"{url}/{log}", "--captures", f"{url}/{capture}")
    assert on_disk[0] == 1 and '"DIV001"' in on_disk[1]
    assert got[:2] == (on_disk[0], on_disk[1].replace(str(root), url))


@pytest.mark.parametrize(
    "url, says",
    [
        ("memory://no-such-folder", "memory://no-such-folder: no such file or directory"),
        ("nosuchproto://bucket/logs", "nosuchproto://bucket/logs: Protocol not known: nosuchproto"),
    ],
)
def test_an_unusable_url_is_one_line_and_exit_2(capsys, url, says):
    code, out, err = _report(capsys, url)
    assert code == 2
    assert err.strip() == f"inspector: error: {says}"


def test_a_url_whose_backend_is_not_installed_names_the_extra(capsys):
    try:
        import s3fs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("s3fs is installed: the backend is not missing")
    code, _, err = _report(capsys, "s3://some-bucket/logs")
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "s3fs" in err and "dsh-inspector[s3]" in err


def test_a_sqlite_database_behind_a_url_is_a_problem_not_skipped(tmp_path, capsys):
    db = next(SAMPLES.rglob("*.sqlite"))
    shutil.copy(db, tmp_path / db.name)
    code, _, err = _report(capsys, f"file://{tmp_path}")
    assert code == 2
    assert f"file://{tmp_path}/{db.name}: SQLite session databases are read from local paths only" in err


def test_a_plain_path_run_never_loads_fsspec():
    code = (
        "import sys; from invariants import check; check(['sample_logs']); "
        "print([m for m in sys.modules if m.split('.')[0] == 'fsspec'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == "[]"


def test_watch_refuses_a_url_in_one_line(capsys):
    code = main(["check", "memory://anything", "--watch"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip() == "inspector: error: memory://anything: --watch needs local paths, not URLs"


def test_the_result_cache_serves_an_unchanged_url_and_rereads_a_rewritten_one(tmp_path):
    import time

    from invariants import check
    from invariants.gate.pipeline import RunStats
    from invariants.gate.result_cache import ResultCache

    folder = tmp_path / "one"
    folder.mkdir()
    shutil.copy(SAMPLES / "clean-multi-turn.jsonl", folder / "clean-multi-turn.jsonl")
    url = _to_memory(folder)
    cache = ResultCache(tmp_path / "cache")

    def run() -> tuple[RunStats, list[str]]:
        stats = RunStats()
        result = check([url], cache=cache, stats=stats)
        cache.flush()
        return stats, [f.rule for f in result.findings]

    first, clean = run()
    assert (first.cache_hits, first.cache_misses, clean) == (0, 1, [])
    assert run()[0].cache_hits == 1
    data = (folder / "clean-multi-turn.jsonl").read_bytes()
    broken = data.replace(b'"seq":3,', b'"seq":9,', 1)  # same size, another revision
    assert len(broken) == len(data) and broken != data
    time.sleep(0.01)
    fsspec.filesystem("memory").pipe(f"{url[len('memory://') :]}/clean-multi-turn.jsonl", broken)
    again, rules = run()
    assert (again.cache_hits, again.cache_misses) == (0, 1) and rules


def test_the_index_of_a_memory_url_holds_the_rows_of_the_same_files_on_disk(tmp_path, capsys):
    import sqlite3

    root = _tree(tmp_path)
    url = _to_memory(root)

    def rows(db: Path, source: str) -> dict[str, list]:
        assert main(["index", source, "--db", str(db), "--jobs", "1", "-q"]) == 0
        conn = sqlite3.connect(db)
        try:
            queries = {
                "sessions": "SELECT path, uid, events, steps, errors FROM sessions ORDER BY path",
                "findings": "SELECT rule, file, seq, line, message FROM findings ORDER BY id",
                "requests": "SELECT line, session_uid, step_idx, status, codes FROM requests ORDER BY id",
            }
            return {name: conn.execute(sql).fetchall() for name, sql in queries.items()}
        finally:
            conn.close()

    on_disk = rows(tmp_path / "disk.db", str(root))
    in_memory = rows(tmp_path / "memory.db", url)
    assert on_disk["findings"] and on_disk["requests"]

    def named(table: list) -> list:
        return [tuple(v.replace(str(root), url) if isinstance(v, str) else v for v in row) for row in table]

    assert in_memory == {k: named(v) for k, v in on_disk.items()}
