"""Where the TUI keeps its settings: ``$INSPECTOR_CONFIG_DIR``, else the platform's configuration folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inspector import settings


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG rules are the Linux/Unix ones")
def test_the_folder_follows_the_xdg_rules_when_the_environment_names_none(tmp_path, monkeypatch):
    monkeypatch.delenv(settings.ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings.config_dir() == tmp_path / "xdg" / "inspector"
    monkeypatch.setenv("XDG_CONFIG_HOME", "   ")  # blank: as if unset
    assert settings.config_dir() == tmp_path / "home" / ".config" / "inspector"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert settings.config_dir() == tmp_path / "home" / ".config" / "inspector"
    assert settings.save(theme="x") and (tmp_path / "home" / ".config" / "inspector" / settings.FILE).is_file()


def test_the_environment_variable_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.ENV, str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings.config_dir() == Path(tmp_path / "cfg")
