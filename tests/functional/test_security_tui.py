"""The TUI on hostile logs: text from a log is never a terminal escape and never markup,
in every tab, the status line, the session list and an exported request; and a damaged
log never takes the app down.

The screen is rendered the way ``App.export_screenshot`` does, into a recording
console: ``terminal`` is the byte stream a real terminal would get (its only
escape sequences must be the SGR colours and cursor moves the renderer writes
itself), ``plain`` is what a person reads.
"""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.fuzz_cases import random_case, write_case
from tests.support.fuzz_inputs import sample_seeds
from tests.support.fuzz_structured import structured_case
from tests.support.logs import SEED_HEADER, Log
from tests.support.tui_helpers import create_app, settle

HOSTILE = (
    "clip \x1b]52;c;ZXZpbA==\x07 clear \x1b[2J\x1b[H [bold]loud[/bold] [link=https://evil.example]click[/link] "
    "bell\x07 c1\x9b31m"
    " rtl\u202eevil\u202c"
)
SIZE = (160, 48)

# What the renderer itself may write: SGR (colours, styles) and cursor positioning.
_OWN_ESCAPES = re.compile(r"\x1b\[[0-9;]*[mH]")
_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # controls, C1, bidi overrides


def screen_text(app) -> tuple[str, str]:
    """(terminal stream, plain text) of the current screen."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.file.getvalue(), console.export_text()


def assert_inert(terminal: str, where: str) -> None:
    rest = _OWN_ESCAPES.sub("", terminal)
    bad = sorted({c for c in _FORBIDDEN.findall(rest.replace("\n", "").replace("\r", ""))})
    assert not bad, f"{where}: raw control character(s) {bad!r} reach the terminal"
    assert "\x1b]8;" not in terminal, f"{where}: a hyperlink (OSC 8) was rendered from log text"


def hostile_log(folder: Path) -> Path:
    """A session where every place a log string can show holds escapes and markup."""
    tools = [{**SEED_HEADER["tools"][0], "name": "read" + HOSTILE, "description": HOSTILE}, SEED_HEADER["tools"][1]]
    header = {
        **SEED_HEADER,
        "system": "line A\n" + HOSTILE + "\nline C",
        "tools": tools,
        "messagePrefix": [{"role": "user", "content": [{"type": "text", "text": "prefix " + HOSTILE}]}],
    }
    log = Log("sid" + HOSTILE, cwd="/home/" + HOSTILE)
    log.turn_start(1)
    log.user("question " + HOSTILE)
    log.step_start(1, 1)
    log.snapshot("initial", header)
    c = log.chunk(1, 1, "chunk " + HOSTILE)
    log.assistant(1, 1, [{"type": "text", "text": "answer " + HOSTILE}], [c])
    log.tool_call(1, 1, "call" + HOSTILE, name="read" + HOSTILE)
    log.tool_result(
        1, 1, "call" + HOSTILE, call_seq=log.seq - 1, content=[{"type": "text", "text": "result " + HOSTILE}]
    )
    log.step_end(1, 1)
    log.step_start(1, 2)
    log.delta({"system": {"keepStart": 1, "keepEnd": 1, "insert": ["delta " + HOSTILE]}})
    c = log.chunk(1, 2)
    log.assistant(1, 2, [{"type": "text", "text": "ok"}], [c])
    log.step_end(1, 2)
    log.add("x/" + HOSTILE, {"turn": 1})  # an unknown event type: a finding quoting it
    log.turn_end(1)
    name = "evil\x1b[2J[bold]name"
    path = log.write(folder / f"{name}.jsonl")
    # a capture whose second request diverges with hostile text (Diff tab)
    from invariants.read.source import LogSource
    from invariants.replay.session import replay

    model = replay(LogSource(path, folder))
    lines = []
    for st in model.steps:
        req = model.rebuild_request(st).request
        if st.step == 2:
            req = json.loads(json.dumps(req))
            req["messages"][0]["content"][0]["text"] += " edited " + HOSTILE
            req["temperature"] = HOSTILE
        lines.append(
            json.dumps(
                {
                    "sessionId": model.id,
                    "logLength": st.first_chunk_seq,
                    "turn": st.turn,
                    "step": st.step,
                    "request": req,
                }
            )
        )
    (folder / f"{name}.requests.jsonl").write_text("\n".join(lines) + "\n")
    return path


async def test_every_tab_of_a_hostile_session_is_inert(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = hostile_log(tmp_path)
    app = create_app(path)
    seen_plain = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for step_keys in ([], ["j"]):  # step 1.1, then 1.2 (the delta, the diverging request)
            await pilot.press(*step_keys)
            await settle(pilot)
            for tab in "123456":
                await pilot.press(tab)
                await settle(pilot)
                terminal, plain = screen_text(app)
                assert_inert(terminal, f"tab {tab}")
                seen_plain.append(plain)
        await pilot.press("n")  # next finding: its message goes to the status line
        await settle(pilot)
        terminal, plain = screen_text(app)
        assert_inert(terminal, "status line")
        seen_plain.append(plain)
        assert "\x1b" not in app.export_screenshot()
    text = "\n".join(seen_plain)
    assert "[bold]loud[/bold]" in text  # markup shown literally, not interpreted
    assert "[link=https://evil.example]click[/link]" in text
    assert "\\x1b]52;c;ZXZpbA==\\x07" in text or "\\u001b]52;c;ZXZpbA==\\u0007" in text  # escapes made visible


async def test_session_list_of_hostile_logs_is_inert(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    hostile_log(root)
    other = Log("second" + HOSTILE)
    other.clean_turn(1, header_reason="initial")
    other.write(root / "\x1b]0;title\x07other.jsonl")
    app = create_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        terminal, plain = screen_text(app)
        assert_inert(terminal, "session list")
        assert "[bold]" in plain


async def test_export_of_a_hostile_request_is_inert_json(tmp_path, monkeypatch):
    """The exported file escapes C1 controls too, so `cat`-ing it is safe; it parses back to the request."""
    from inspector.screens.session import SessionScreen

    monkeypatch.chdir(tmp_path)
    path = hostile_log(tmp_path)
    app = create_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        out = tmp_path / "out.json"
        screen.export_request(out)
        await settle(pilot)
        raw = out.read_text(encoding="utf-8")
        assert not _FORBIDDEN.search(raw.replace("\n", ""))
        assert json.loads(raw) == screen.state.rebuilt(screen.step_index).request


# -- damaged logs: the app never goes down -------------------------------------------------


def _fuzz_paths(tmp_path: Path, n: int) -> list[Path]:
    seeds = sorted(sample_seeds(), key=lambda s: len(s.log))[:6]
    out = []
    for i in range(n):
        rng = random.Random(1000 + i)
        case, _ = structured_case(rng) if i % 2 else random_case(rng, seeds)
        target = write_case(case, tmp_path / f"c{i}")
        out.append(target if case.target != "." else tmp_path / f"c{i}")
    return out


@pytest.mark.parametrize("i", range(3))
async def test_tui_survives_damaged_logs(tmp_path, monkeypatch, i):
    monkeypatch.chdir(tmp_path)
    path = _fuzz_paths(tmp_path, i + 1)[i]
    app = create_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for keys in (["enter"], ["j"], ["1"], ["2"], ["3"], ["4"], ["5"], ["6"], ["n"], ["k"], ["e"], ["w"]):
            await pilot.press(*keys)
            await settle(pilot, rounds=1)
            terminal, _ = screen_text(app)
            assert_inert(terminal, f"case {i} after {keys}")
    assert app.return_code in (None, 0), f"the app stopped with {app.return_code}"
