"""One configuration, one set of findings: the gate's JSON report, the index and the TUI agree.

The project's ``inspector.toml`` ignores one rule, baselines another, changes
a severity and ignores a rule for one file.  ``inspector check``, ``inspector
index`` (its findings table and session counts) and the TUI (each session's
findings list, which ``n``/``N`` walk, and the session list's counts, live and
from the index) must report exactly the same findings.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from inspector.cli import main
from invariants import load_config
from tests.conftest import SAMPLES
from tests.support.tui_helpers import create_app, settle, wait_for

LOGS = ("capture-divergence", "capture-key-order", "corrupt-delta", "resume-prefix-drift", "clean-multi-turn")
CONFIG = """\
ignore = ["DIV010"]
baseline = "inspector-baseline.json"
cache = false

[severity]
HDR002 = "warning"

[per-path-ignores]
"logs/capture-key-order.jsonl" = ["DIV002"]
"""


def _key(rule: str, severity: str, file: str, line, seq) -> tuple:
    return (rule, severity, Path(file).name, line, seq)


@pytest.fixture
def project(tmp_path, monkeypatch, capsys):
    """A repository whose logs/ has findings of five rules, a baseline of PFX002 and the configuration above."""
    (tmp_path / ".git").mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in LOGS:
        for suffix in (".jsonl", ".requests.jsonl"):
            if (SAMPLES / f"{name}{suffix}").exists():
                shutil.copy(SAMPLES / f"{name}{suffix}", logs / f"{name}{suffix}")
    monkeypatch.chdir(tmp_path)
    assert (
        main(["check", "logs", "--isolated", "--select", "PFX002", "--write-baseline", "inspector-baseline.json"]) == 0
    )
    (tmp_path / "inspector.toml").write_text(CONFIG)
    capsys.readouterr()
    return tmp_path


def _gate(capsys, *flags) -> list[tuple]:
    main(["check", "logs", "--format", "json", "--no-cache", *flags])
    doc = json.loads(capsys.readouterr().out)
    return sorted(_key(f["rule"], f["severity"], f["file"], f["line"], f["seq"]) for f in doc["findings"])


def test_the_configuration_changes_the_findings(project, capsys):
    """The control: without the file the ignored, baselined and per-path-ignored rules are reported."""
    everything = {k[0] for k in _gate(capsys, "--isolated")}
    configured = _gate(capsys)
    assert {"DIV010", "PFX002", "DIV002", "HDR002", "DIV001"} <= everything
    assert {k[0] for k in configured} == {"DIV001", "HDR002"}
    assert [k[1] for k in configured if k[0] == "HDR002"] == ["warning"]


async def test_gate_index_and_tui_show_the_same_findings(project, capsys):
    gate = _gate(capsys)
    per_session = Counter((k[2], k[1]) for k in gate)

    assert main(["index", "logs", "--db", "idx.db", "-q"]) == 0
    with sqlite3.connect(project / "idx.db") as conn:
        indexed = sorted(_key(*row) for row in conn.execute("SELECT rule, severity, file, line, seq FROM findings"))
        counts = {
            Path(file).name: (errors, warnings, infos)
            for file, errors, warnings, infos in conn.execute("SELECT file, errors, warnings, infos FROM sessions")
        }
    assert indexed == gate
    assert counts == {f"{n}.jsonl": _severities(per_session, f"{n}.jsonl") for n in LOGS}

    config = load_config()  # found from the working directory, as `inspector PATH` finds it
    shown = []
    for name in LOGS:
        app = create_app(project / "logs" / f"{name}.jsonl", config=config)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: getattr(app.screen, "state", None) is not None)  # noqa: B023
            shown += [_key(f.rule, f.severity, f.file, f.line, f.seq) for f in app.screen.state.findings]
    assert sorted(shown) == gate

    for db in (None, project / "idx.db"):  # the session list checks live, or reads the index kept under this config
        app = create_app(project / "logs", config=config, db=db)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await wait_for(pilot, lambda: app.screen.finished)  # noqa: B023
            await pilot.pause(0.2)
            rows = {s.path.name: (s.errors, s.warnings, s.infos) for s, _ in app.screen.query_one("#sessions").rows}
            assert (app.screen.index_used is not None) == (db is not None)
        assert rows == counts


async def test_an_index_kept_under_another_configuration_is_not_read_by_the_list_and_is_rebuilt(project, capsys):
    assert main(["index", "logs", "--db", "idx.db", "-q", "--isolated"]) == 0
    with sqlite3.connect(project / "idx.db") as conn:
        assert {r[0] for r in conn.execute("SELECT rule FROM findings")} >= {"DIV010", "PFX002"}
    app = create_app(project / "logs", config=load_config(), db=project / "idx.db")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screen.finished)
        assert app.screen.index_used is None  # its counts are another configuration's: checked live instead
    assert main(["index", "logs", "--db", "idx.db", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["unchanged"] == 0 and run["replaced"] == len(LOGS)  # every log read again under the new policy
    with sqlite3.connect(project / "idx.db") as conn:
        indexed = sorted(_key(*r) for r in conn.execute("SELECT rule, severity, file, line, seq FROM findings"))
    assert indexed == _gate(capsys)


def _severities(per_session: Counter, name: str) -> tuple[int, int, int]:
    return tuple(per_session[(name, sev)] for sev in ("error", "warning", "info"))
