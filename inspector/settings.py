"""What the TUI remembers between runs (the theme), in the user's configuration folder.

``$INSPECTOR_CONFIG_DIR`` if set (the tests point it at a temporary folder),
else the platform's place for configuration: ``$XDG_CONFIG_HOME/inspector``
(``~/.config/inspector``) on Linux and other Unixes,
``~/Library/Application Support/inspector`` on macOS, ``%APPDATA%\\inspector``
on Windows.  A missing, unreadable or malformed file means the defaults; a
file that cannot be written is not an error (the choice lasts for the run).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ENV = "INSPECTOR_CONFIG_DIR"
FILE = "settings.json"


def config_dir() -> Path:
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "inspector"


def load() -> dict[str, Any]:
    try:
        data = json.loads((config_dir() / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(**changes: Any) -> bool:
    """Merge ``changes`` into the settings file (written whole, atomically); False when it cannot be written."""
    folder = config_dir()
    data = {**load(), **changes}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".settings-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, folder / FILE)
    except OSError:
        return False
    return True
