"""The typed API (PEP 561): the wheel ships ``py.typed`` in both packages, and mypy run in a user's
project (a folder of its own, the wheel installed in a fresh environment) sees ``check()``'s types."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools", reason="building the wheel needs setuptools")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in ("invariants", "inspector"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("dsh_inspector-*.whl")
    return built


def test_the_wheel_ships_py_typed_in_both_packages(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"invariants/py.typed", "inspector/py.typed"} <= names
    assert "invariants/gate/pipeline.py" in names


def test_mypy_in_a_user_project_sees_the_types_of_check(wheel, tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    zipfile.ZipFile(wheel).extractall(purelib)  # a pure wheel unpacked into site-packages is installed
    project = tmp_path / "project"
    project.mkdir()
    (project / "user.py").write_text(
        "from invariants import check\n"
        "\n"
        'result = check("logs")\n'
        "reveal_type(result)\n"
        "findings: int = result.findings  # a deliberate type error\n"
        "ok: bool = result.ok\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-incremental", "user.py"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    out = run.stdout
    assert run.returncode == 1, out
    assert "import-untyped" not in out and "import-not-found" not in out, out
    assert 'Revealed type is "invariants.gate.result.CheckResult"' in out, out
    assert 'user.py:5: error: Incompatible types in assignment (expression has type "list[Finding]"' in out, out
    assert out.count(": error:") == 1, out
    assert sysconfig.get_paths()["purelib"] != purelib  # the user's environment, not ours
