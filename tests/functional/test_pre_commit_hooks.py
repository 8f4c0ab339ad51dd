"""The shipped `.pre-commit-hooks.yaml`, run by pre-commit itself on real commits.

One temporary git repository holds a copy of this package's source with the
hook manifest, tagged ``v<version>`` as a release is (docs/RELEASING.md; what a
user's ``repo:``/``rev:`` point at);
another holds recorded sessions and the ``.pre-commit-config.yaml`` that
docs/CI.md documents, with ``repo:`` pointed at the first.  ``pre-commit
install`` puts the git hook in place and every test commits through it.

``language: python`` makes pre-commit build a virtualenv and pip-install the
package with its dependencies from the package index: about 40 s, done once
for the module in a ``PRE_COMMIT_HOME`` under the test's temporary folder
(later runs reuse it: same repository path and revision).  ``PYTHONPATH`` is
removed from the hooks' environment, so they run the installed copy, not
this checkout.  ``pre-commit try-repo`` is not used: it runs hooks without
``args`` (these need the folder of recordings) and builds a fresh virtualenv
on every call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inspector.cli import main
from invariants import __version__
from tests.conftest import ROOT, SAMPLES
from tests.support.readme import block_named

pytest.importorskip(
    "pre_commit", reason="pre-commit is a development tool: install it with the dev group (--group dev)"
)

# What `pip install .` needs of the package (pyproject.toml names README.md as its readme).
PACKAGE_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "invariants", "inspector")
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "inspector tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "inspector tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,  # no signing, hooksPath or templates from the machine's git config
    "GIT_CONFIG_NOSYSTEM": "1",
}
HOOK_NAME = "inspector check (dsh session logs)"
BASELINE_HOOK_NAME = "inspector check against inspector-baseline.json"


def git(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """(hook repository, environment for git and pre-commit): the repository is a commit of this checkout."""
    base = tmp_path_factory.mktemp("pre-commit")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GIT_IDENTITY, PRE_COMMIT_HOME=str(base / "home"), PRE_COMMIT_COLOR="never")
    repo = base / "dsh-inspector"
    repo.mkdir()
    for name in PACKAGE_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, repo / name)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "hooks"), ("tag", f"v{__version__}")):
        done = git(repo, *args, env=env)
        assert done.returncode == 0, done.stderr
    return repo, env


def project(tmp_path: Path, hooks, hook_id: str) -> Path:
    """A git repository with docs/CI.md's pre-commit configuration (``repo:`` = the hook repository), installed."""
    hook_repo, env = hooks
    config = yaml.safe_load(block_named(ROOT / "docs" / "CI.md", "yaml", "# .pre-commit-config.yaml"))
    (entry,) = config["repos"]
    assert entry["rev"] == f"v{__version__}" and [h["id"] for h in entry["hooks"]] == ["inspector-check"]
    entry["repo"] = str(hook_repo)
    entry["hooks"][0]["id"] = hook_id
    proj = tmp_path / "proj"
    (proj / "recordings").mkdir(parents=True)
    (proj / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert git(proj, "init", "-q", env=env).returncode == 0
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"], cwd=proj, env=env, capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return proj


def record(proj: Path, *samples: str) -> None:
    """Copy sample logs with their captures into ``recordings/``."""
    for name in samples:
        for suffix in (".jsonl", ".requests.jsonl"):
            shutil.copy2(SAMPLES / f"{name}{suffix}", proj / "recordings" / f"{name}{suffix}")


def commit(proj: Path, env, *paths: str) -> tuple[int, str]:
    """Stage ``paths`` and commit through the installed hook: (git's exit code, what the hook printed)."""
    assert git(proj, "add", *paths, env=env).returncode == 0
    done = git(proj, "commit", "-m", "record sessions", env=env)
    return done.returncode, done.stdout + done.stderr


def commits(proj: Path, env) -> int:
    done = git(proj, "rev-list", "--count", "--all", env=env)
    return int(done.stdout) if done.returncode == 0 else 0


def hook_line(output: str, name: str) -> str:
    (line,) = [x for x in output.splitlines() if x.startswith(name)]
    return line


def test_hook_passes_a_sound_log_skips_other_files_and_blocks_a_broken_log(tmp_path, hooks):
    _, env = hooks
    proj = project(tmp_path, hooks, "inspector-check")

    record(proj, "clean-multi-turn")
    code, out = commit(proj, env, ".pre-commit-config.yaml", "recordings")
    assert code == 0, out
    assert hook_line(out, HOOK_NAME).endswith("Passed")

    (proj / "notes.txt").write_text("not a session log\n")
    code, out = commit(proj, env, "notes.txt")
    assert code == 0, out
    assert hook_line(out, HOOK_NAME).endswith("(no files to check)Skipped")

    record(proj, "capture-divergence")
    code, out = commit(proj, env, "recordings")
    assert code == 1, out
    assert hook_line(out, HOOK_NAME).endswith("Failed")
    assert "- exit code: 1" in out
    assert "recordings/capture-divergence.jsonl  (session 7bb4a066-9210-4919-89c7-a783a0f2372e" in out
    assert "error   DIV001  line 3, seq 1, turn 2 step 1: capture-divergence.requests.jsonl:3: derived message" in out
    assert "at messages[1].content[0].text" in out
    assert "2 session(s), 451 events, 14 request(s) checked: 2 error(s)" in out
    assert commits(proj, env) == 2  # the broken recording was not committed

    # A recorded request that no longer matches its log: the capture alone triggers the hook.
    git(proj, "reset", "-q", env=env)
    for path in (proj / "recordings").glob("capture-divergence.*"):
        path.unlink()
    capture = proj / "recordings" / "clean-multi-turn.requests.jsonl"
    lines = capture.read_text().split("\n")
    lines[0] = lines[0].replace("Answer briefly", "Answer at length", 1)
    capture.write_text("\n".join(lines))
    code, out = commit(proj, env, "recordings/clean-multi-turn.requests.jsonl")
    assert code == 1 and hook_line(out, HOOK_NAME).endswith("Failed"), out
    assert "error   DIV010  line 4, seq 2, turn 1 step 1: clean-multi-turn.requests.jsonl:1: system diverges" in out
    assert commits(proj, env) == 2


def test_baseline_hook_fails_only_on_findings_missing_from_the_baseline(tmp_path, hooks, monkeypatch, capsys):
    _, env = hooks
    proj = project(tmp_path, hooks, "inspector-check-baseline")

    record(proj, "capture-divergence")
    monkeypatch.chdir(proj)
    assert main(["check", "recordings/", "--write-baseline", "inspector-baseline.json", "--no-cache"]) == 0
    capsys.readouterr()
    code, out = commit(proj, env, ".pre-commit-config.yaml", "recordings", "inspector-baseline.json")
    assert code == 0, out
    assert hook_line(out, BASELINE_HOOK_NAME).endswith("Passed")

    record(proj, "corrupt-delta")
    code, out = commit(proj, env, "recordings")
    assert code == 1, out
    assert hook_line(out, BASELINE_HOOK_NAME).endswith("Failed")
    assert "error   HDR002" in out and "recordings/corrupt-delta.jsonl" in out
    assert "DIV001" not in out  # known: in the baseline
    assert commits(proj, env) == 1


def test_hook_runs_when_a_sqlite_session_store_is_committed(tmp_path, hooks):
    """A store is read like a sessions root; the hook's file pattern names it (and its WAL journal)."""
    _, env = hooks
    proj = project(tmp_path, hooks, "inspector-check")
    shutil.copy2(SAMPLES / "late" / "db" / "sessions.sqlite", proj / "recordings" / "sessions.db")
    code, out = commit(proj, env, ".pre-commit-config.yaml", "recordings/sessions.db")
    assert code == 0, out
    assert hook_line(out, HOOK_NAME).endswith("Passed")
    assert "(no files to check)" not in hook_line(out, HOOK_NAME)
