from __future__ import annotations

import os
from pathlib import Path

import pytest

# The pytest runs the tests start (pytester, the repro and plugin tests) keep arize-phoenix's plugin
# off as this one does (pyproject.toml's addopts): it imports Phoenix's server, ~45 s a process.
if "no:phoenix" not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = (os.environ.get("PYTEST_ADDOPTS", "") + " -p no:phoenix").strip()

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
SAMPLES = ROOT / "sample_logs"


@pytest.fixture(autouse=True)
def _own_settings_folder(tmp_path_factory, monkeypatch):
    """The TUI remembers its theme in the user's config folder: every test gets an empty one of its own."""
    monkeypatch.setenv("INSPECTOR_CONFIG_DIR", str(tmp_path_factory.mktemp("inspector-config")))


def corpus_dir(name: str) -> Path:
    """A corpus folder, read in place; skip the test with a reason when it is absent."""
    path = CORPUS / name
    if not path.is_dir():
        pytest.skip(f"conformance corpus not found at {path} (it lives in ../shared/corpus beside the repo)")
    return path


@pytest.fixture
def check_log(tmp_path):
    """Write a tests.support.logs.Log and run the checker on it; returns the CheckResult."""
    from invariants import CheckOptions, check

    def run(log, requests: list[dict] | None = None, name: str = "s1.jsonl", **options):
        path = log.write(tmp_path / name)
        if requests is not None:
            log.write_requests(tmp_path / "requests.jsonl", requests)
        return check([path], CheckOptions(**options), keep_models=True)

    return run
