"""The TUI's repro key: on a selected finding, R writes the redacted repro to a new folder and shows its
absolute path; without a selected finding it says how to select one."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from inspector.screens.session import SessionScreen
from inspector.widgets.status import StatusLine
from invariants import check
from tests.support.logs import story_log
from tests.support.tui_helpers import create_app, settle, wait_for

SIZE = (120, 36)


def _status(app) -> str:
    return app.screen.query_one(StatusLine).plain


async def test_r_on_a_selected_finding_writes_a_redacted_repro_and_shows_its_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, _ = story_log(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    app = create_app(Path(log.name))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await pilot.pause()
        assert "select a finding first" in _status(app)
        await pilot.press("n")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        rule = screen.state.findings[screen.finding_pos].rule
        await pilot.press("R")
        await wait_for(pilot, lambda: "written to" in _status(app), timeout=60)
        shown = re.search(r"written to (/\S+)$", _status(app).strip())
        assert shown, _status(app)
    folder = Path(shown.group(1))
    assert folder.is_absolute() and folder.parent == (tmp_path / "tmp").resolve()
    manifest = json.loads((folder / "repro.json").read_text())
    assert manifest["rule"] == rule and manifest["redacted"] is True
    assert rule in {f.rule for f in check(folder / Path(log.name).name).findings}
