"""Small contracts of the command as a kept tool: ``python -m inspector``, whole cells when piped,
the release tag the pre-commit snippet names, and the hook's file pattern."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml

from inspector.cli import main
from invariants import __version__
from invariants.read.source import SQLITE_SUFFIXES
from tests.conftest import ROOT, SAMPLES
from tests.support.readme import block_named


def test_python_dash_m_inspector_is_the_inspector_command(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    version = subprocess.run(
        [sys.executable, "-m", "inspector", "--version"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert version.returncode == 0 and version.stdout.strip() == f"inspector {__version__}"
    broken = subprocess.run(
        [sys.executable, "-m", "inspector", "check", str(SAMPLES / "capture-divergence.jsonl")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert broken.returncode == 1 and "DIV001" in broken.stdout
    usage = subprocess.run([sys.executable, "-m", "inspector"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert usage.returncode == 2 and "usage: inspector" in usage.stdout


@pytest.fixture(scope="module")
def long_index(tmp_path_factory):
    """An index of one sample log whose path is far longer than a table cell."""
    base = tmp_path_factory.mktemp("long")
    deep = base / ("a-very-long-folder-name-that-a-team-might-use-for-recorded-sessions" * 2) / "nested"
    deep.mkdir(parents=True)
    for p in SAMPLES.glob("clean-multi-turn.*"):
        shutil.copy2(p, deep / p.name)
    db = base / "index.db"
    assert main(["index", str(base), "--db", str(db), "--jobs", "1", "-q"]) == 0
    return db, deep / "clean-multi-turn.jsonl"


def _as_terminal(monkeypatch, is_tty: bool) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: is_tty)


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
def test_sessions_and_query_cut_long_cells_only_for_a_terminal(long_index, capsys, monkeypatch, tty):
    db, log = long_index
    capsys.readouterr()
    _as_terminal(monkeypatch, tty)
    assert main(["sessions", "--db", str(db)]) == 0
    listed = capsys.readouterr().out
    assert main(["query", "--db", str(db), "SELECT path FROM sessions"]) == 0
    queried = capsys.readouterr().out
    below_root = log.relative_to(db.parent).as_posix()
    if tty:
        assert "…" in listed and below_root not in listed
        assert "…" in queried and str(log) not in queried
    else:
        assert "…" not in listed and below_root in listed
        assert "…" not in queried and str(log) in queried


def _project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_the_pre_commit_snippets_name_the_tag_of_this_version():
    """Releases are tagged ``v<version>`` (docs/RELEASING.md), so ``rev:`` in docs/CI.md resolves to this release."""
    version = _project_version()
    assert version == __version__
    config = yaml.safe_load(block_named(ROOT / "docs" / "CI.md", "yaml", "# .pre-commit-config.yaml"))
    (entry,) = config["repos"]
    assert entry["rev"] == f"v{version}"
    manifest = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert re.findall(r"rev: (\S+)", manifest) == [f"v{version}"]
    releasing = (ROOT / "docs" / "RELEASING.md").read_text(encoding="utf-8")
    assert 'git tag -a "v$version"' in releasing and "rev: v" in releasing


def test_the_hooks_run_for_session_logs_sqlite_stores_and_their_write_ahead_logs():
    """The harness's SQLite persistence takes any path (its tests use ``sessions.db`` and ``sessions.sqlite``)
    and journals in WAL mode by default, so a store's committed rows may sit in ``<store>-wal``."""
    hooks = {h["id"]: re.compile(h["files"]) for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    names = ["s.jsonl", "rec/s.jsonl.zstd", "rec/s.jsonl.zst", "rec/s.requests.jsonl", "sessions.db"]
    names += [f"rec/store{suffix}" for suffix in SQLITE_SUFFIXES] + ["rec/sessions.db-wal", "rec/sessions.sqlite-wal"]
    for hook, pattern in hooks.items():
        for name in names:
            assert pattern.search(name), (hook, name)
        for name in ("notes.txt", "db.py", "rec/sessions.db-shm", "rec/sessions.db.bak", "sqlite/readme.md"):
            assert not pattern.search(name), (hook, name)
    assert hooks["inspector-check-baseline"].search("inspector-baseline.json")
