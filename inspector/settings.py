"""What the TUI remembers between runs (the theme), in the user's configuration folder.

``$INSPECTOR_CONFIG_DIR`` if set (the tests point it at a temporary folder),
else the platform's place for configuration as :mod:`platformdirs` knows it
(``user_config_dir``): ``$XDG_CONFIG_HOME/inspector`` (``~/.config/inspector``)
on Linux and other Unixes, ``~/Library/Application Support/inspector`` on
macOS, ``%APPDATA%\\inspector`` on Windows (roaming, no author folder).
A missing, unreadable or malformed file means the defaults; a file that
cannot be written is not an error (the choice lasts for the run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from invariants.model.atomic import write_atomic
from invariants.model.userfile import read_text

ENV = "INSPECTOR_CONFIG_DIR"
FILE = "settings.json"


def config_dir() -> Path:
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    from platformdirs import user_config_dir

    return Path(user_config_dir("inspector", appauthor=False, roaming=True))


def load() -> dict[str, Any]:
    try:
        data = json.loads(read_text(config_dir() / FILE))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(**changes: Any) -> bool:
    """Merge ``changes`` into the settings file (written whole, atomically); False when it cannot be written."""
    folder = config_dir()
    data = {**load(), **changes}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / FILE, json.dumps(data, indent=2, sort_keys=True) + "\n")
    except OSError:
        return False
    return True
