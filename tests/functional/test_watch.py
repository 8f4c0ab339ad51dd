"""``inspector check --watch``: rounds over growing logs that replay only the appended events and print only
new findings; driven by hand-made change batches, and once through real ``watchfiles`` and a real Ctrl-C."""

from __future__ import annotations

import io
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import invariants.replay.checkpoint as checkpoint_mod
from inspector.cli import build_parser
from inspector.commands.check import configuration
from inspector.commands.check_watch import watch
from invariants import Config, check
from invariants.gate.follow import END_OF_LOG_RULES, Follow, Watch, finding_key
from invariants.gate.report import report_json, summary_line
from tests.conftest import ROOT, SAMPLES
from tests.support.logs import story_header, story_session, write_capture
from tests.support.readme import commands, fenced_blocks, section

CHECK_DOC = ROOT / "docs" / "CHECK.md"


def diverge(request: dict) -> None:
    request["messages"].append({"role": "user", "content": "not in the log"})


class Session:
    """A log of 60 steps (past the era sniff's window) and its capture, grown by the test as a harness would."""

    def __init__(self, folder: Path, name: str = "grow", edits: dict | None = None) -> None:
        self.b = story_session(f"{name}-session")
        self.b.user_turn("q")
        self.b.streamed_step("a", header_reason="initial", header=story_header())
        for i in range(59):
            self.b.streamed_step(f"reply {i}")
        self.b.end_turn()
        self.log = self.b.write(folder / f"{name}.jsonl")
        self.capture = folder / f"{name}.requests.jsonl"
        self.edits = dict(edits or {})
        write_capture(self.log, self.capture, self.edits)

    def append(self, lines: list[bytes], tail: bytes = b"\n") -> int:
        with open(self.log, "ab") as fh:
            fh.write(b"\n".join(lines) + tail)
        return len(lines)

    def turn(self, steps: int, edits: dict | None = None, end: bool = True) -> int:
        """Append a turn of ``steps`` steps (open when not ``end``); record its requests; the events appended."""
        before = len(self.b.lines())
        self.b.user_turn("more")
        for i in range(steps):
            self.b.streamed_step(f"more {i}")
        if end:
            self.b.end_turn()
        n = self.append(self.b.lines()[before:])
        self.edits.update(edits or {})
        write_capture(self.log, self.capture, self.edits)
        return n


def keys(findings) -> set:
    return {finding_key(f) for f in findings}


def gate_now(path, config: Config | None = None):
    return check(path, config=config)


def same_as_gate(result, path) -> None:
    """The round's result is the gate's for the logs now: the JSON report and every request verdict."""
    now = gate_now(path)
    assert report_json(result) == report_json(now)
    assert [r.to_json() for r in result.requests] == [r.to_json() for r in now.requests]


@pytest.fixture
def calls(monkeypatch):
    """How many full replays and resumes the rounds ran (a check() beside them resumes nothing)."""
    import invariants.gate.follow as follow_mod

    counted = {"replay": 0, "resume": 0}
    real_replay, real_resume = follow_mod.replay_source, checkpoint_mod.resume

    def replay(*a, **k):
        counted["replay"] += 1
        return real_replay(*a, **k)

    def resume(*a, **k):
        counted["resume"] += 1
        return real_resume(*a, **k)

    monkeypatch.setattr(follow_mod, "replay_source", replay)
    monkeypatch.setattr(checkpoint_mod, "resume", resume)
    return counted


def test_each_round_replays_only_the_appended_events_and_reports_only_new_findings(tmp_path, calls):
    s = Session(tmp_path, edits={2: diverge})
    follow = Follow(tmp_path)
    w = Watch(follow)
    log = str(s.log)

    first = w.round()
    before = gate_now(tmp_path)
    assert keys(first) == keys(before.findings) and any(f.rule == "DIV001" for f in first)
    assert follow.modes == {log: "full"} and follow.stats.last_events_replayed == s.b.seq
    assert calls == {"replay": 1, "resume": 0}

    appended = s.turn(3, edits={61: lambda r: r.update(temperature=0.9)})  # a header divergence at a new step
    second = w.round()
    after = gate_now(tmp_path)
    assert keys(second) == keys(after.findings) - keys(before.findings)
    assert [f.rule for f in second] == ["DIV010"] and second[0].turn == 2
    assert keys(w.result.findings) == keys(after.findings) and w.result.summary() == after.summary()
    assert follow.modes == {log: "resume"} and follow.stats.last_events_replayed == appended
    assert calls == {"replay": 1, "resume": 1}

    last = w.result
    assert w.round() == [] and follow.modes == {log: "kept"} and follow.stats.last_events_replayed == 0
    assert w.result is last  # nothing changed: the last result stands

    # half a line: the complete lines before it are read (no torn-tail finding), then, completed, the
    # appended lines are resumed over from the last checkpoint that ended on a whole line
    before_half = len(s.b.lines())
    s.b.user_turn("half")
    half = s.b.lines()[before_half:]
    s.append(half[:-1] + [half[-1][:20]], tail=b"")
    assert w.round() == [] and follow.modes == {log: "held"} and follow.stats.last_events_replayed == len(half) - 1
    assert w.result.sessions[0].events == s.b.seq - 1  # every complete line is in this round's result
    with open(s.log, "ab") as fh:
        fh.write(half[-1][20:] + b"\n")
    assert w.round() == [] and follow.modes == {log: "resume"} and follow.stats.last_events_replayed == len(half)

    # the log now ends inside a turn: LOG006 waits for the final round
    assert any(f.rule == "LOG006" for f in gate_now(tmp_path).findings)
    assert w.round() == [] and follow.modes == {log: "kept"}
    final = w.round(final=True)
    assert [f.rule for f in final] == ["LOG006"] and set(END_OF_LOG_RULES) >= {"LOG006"}
    now = gate_now(tmp_path)
    assert keys(w.result.findings) == keys(now.findings) and w.result.summary() == now.summary()
    # every event was folded once, and the complete lines before a partial one once more
    assert follow.stats.events_replayed == s.b.seq + len(half) - 1
    assert calls == {"replay": 1, "resume": 3}


def test_a_folder_a_new_log_is_replayed_alone_and_the_others_are_kept(tmp_path, calls):
    Session(tmp_path, "one")
    follow = Follow(tmp_path)
    w = Watch(follow)
    assert w.round() == []
    (tmp_path / "sub").mkdir()
    two = Session(tmp_path / "sub", "two", edits={5: diverge})
    new = w.round()
    assert [(f.rule, f.file) for f in new] == [("DIV001", str(two.log))]
    assert follow.modes == {str(tmp_path / "one.jsonl"): "kept", str(two.log): "full"}
    assert follow.stats.last_events_replayed == two.b.seq and calls["replay"] == 2
    same_as_gate(w.result, tmp_path)  # the kept log's requests are matched afresh, not twice
    two.log.unlink()
    two.capture.unlink()
    assert w.round() == [] and list(follow.modes) == [str(tmp_path / "one.jsonl")]
    same_as_gate(w.result, tmp_path)
    edited = (tmp_path / "one.requests.jsonl").read_text().replace('"loopBuilt":true', '"loopBuilt":false', 1)
    (tmp_path / "one.requests.jsonl").write_text(edited)  # only the capture changes: matched again
    assert w.round() == [] and follow.modes == {str(tmp_path / "one.jsonl"): "kept"}
    same_as_gate(w.result, tmp_path)
    assert any(r.status == "one-shot" for r in w.result.requests)


def test_zstd_and_database_logs_are_read_again_only_when_they_change(tmp_path, calls):
    shutil.copytree(SAMPLES / "late", tmp_path / "late")
    follow = Follow(tmp_path / "late")
    w = Watch(follow)
    w.round()
    first = calls["replay"]
    assert w.round() == [] and set(follow.modes.values()) == {"kept"} and calls["replay"] == first
    same_as_gate(w.result, tmp_path / "late")


def parse(argv: list[str]):
    args = build_parser().parse_args(["check", *argv])
    return args, configuration(args)


def test_the_cli_prints_new_findings_once_and_ctrl_c_ends_with_the_gates_summary_and_exit_code(tmp_path, monkeypatch):
    s = Session(tmp_path, edits={2: diverge})
    monkeypatch.chdir(tmp_path)

    def batches():
        s.turn(2, edits={61: diverge})
        yield {"changed"}
        s.turn(1, end=False)
        yield {"changed"}
        raise KeyboardInterrupt

    out, err = io.StringIO(), io.StringIO()
    args, cfg = parse([".", "--watch", "--isolated"])
    code, w = watch(args, cfg, batches(), out=out, err=err)
    now = gate_now(".")
    assert code == 1 and now.failed("error")
    lines = out.getvalue().splitlines()
    assert lines[-1] == summary_line(now)
    listed = [x.split()[1] for x in lines if x.startswith("  ")]
    assert sorted(listed) == sorted(f.rule for f in now.findings)  # each finding printed once
    assert listed[-1] == "LOG006"  # the end-of-log finding, printed at the end
    assert "round 2: " in err.getvalue() and "watched 4 round(s)" in err.getvalue()
    assert w.follow.stats.events_replayed == s.b.seq

    args, cfg = parse([".", "--watch", "--isolated", "--ignore", "DIV", "--format", "jsonl", "--exit-zero", "-q"])
    out, err = io.StringIO(), io.StringIO()
    code, _ = watch(args, cfg, [], out=out, err=err)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert code == 0 and err.getvalue() == ""
    assert [r["rule"] for r in rows] == [f.rule for f in gate_now(".", Config(ignore=["DIV"])).findings] == ["LOG006"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--format", "json"],
            "--watch prints findings as they come: use --format text, jsonl, github, concise, not json",
        ),
        (["--output", "x.txt"], "cannot be combined with --output"),
        (["--write-baseline", "b.json"], "cannot be combined with --write-baseline"),
    ],
)
def test_what_cannot_be_watched_is_a_usage_error(tmp_path, capsys, flags, message):
    from inspector.cli import main

    assert main(["check", str(SAMPLES / "clean-multi-turn.jsonl"), "--watch", *flags]) == 2
    assert message in capsys.readouterr().err


# -- real watchfiles, real Ctrl-C ----------------------------------------------------------------------------
class Running:
    """``inspector ...`` in a subprocess, its output lines gathered as they come."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        env["PYTHONFAULTHANDLER"] = "1"  # a process that does not stop dumps its threads' stacks on SIGABRT
        # The command's own entry point, as the README's `inspector` runs it from a terminal: with
        # Ctrl-C's default handler, which a test run started in the background (`... &`, where
        # SIGINT is ignored and Python keeps it so) would otherwise pass down.
        code = (
            "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from inspector.cli import run\nrun()\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *argv],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, name in ((self.proc.stdout, "out"), (self.proc.stderr, "err")):
            threading.Thread(target=self._pump, args=(stream, name), daemon=True).start()

    def _pump(self, stream, name: str) -> None:
        for line in stream:
            self.lines.put((name, line.rstrip("\n")))
        self.lines.put((name, None))

    def wait_for(self, predicate, timeout: float = 60) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                name, line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                continue
            (self.out if name == "out" else self.err).append(line)
            if predicate(name, line):
                return True
        return False

    def interrupt(self, timeout: float = 60) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # where it hangs, for the failure message
            self.proc.wait(10)
            self.wait_for(lambda *_: False, timeout=1)
            raise AssertionError("no exit after Ctrl-C:\n" + "\n".join(self.out + self.err)) from None
        self.wait_for(lambda *_: False, timeout=1)  # drain
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def watch_commands() -> list[str]:
    text = section(CHECK_DOC.read_text(encoding="utf-8"), "## Watch a session being written")
    return [c for block in fenced_blocks(text, "sh") for c in commands(block)]


@pytest.mark.parametrize("command", watch_commands())
def test_the_documented_commands_through_watchfiles_and_ctrl_c(tmp_path, command):
    """The documented command, on recordings/ while a test appends to a log in it: the new finding appears
    once, and Ctrl-C prints the summary and exits as the gate would."""
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    s = Session(recordings, edits={2: diverge})
    argv = shlex.split(command)
    assert argv[:2] == ["inspector", "check"] and "--watch" in argv
    run = Running(argv[1:], tmp_path)
    try:
        assert run.wait_for(lambda name, line: name == "err" and "watching recordings/" in line), run.err
        time.sleep(0.5)  # the watcher starts as the first round ends
        s.append([s.b.lines()[-1]])  # the last event again: its seq does not increase (LOG003)
        assert run.wait_for(lambda name, line: name == "out" and "LOG003" in line), (run.out, run.err)
        code = run.interrupt()
    finally:
        run.kill()
    now = gate_now(recordings)
    assert code == 1 and now.failed("error")
    printed = [line for line in run.out if "LOG003" in line]
    assert len(printed) == 1
    if "jsonl" in argv:
        rows = [json.loads(x) for x in run.out]
        assert sorted(r["rule"] for r in rows) == sorted(f.rule for f in now.findings)
    else:
        assert run.out[-1] == summary_line(now)
    assert any("watched" in line for line in run.err)


def test_complete_lines_before_a_partial_last_line_are_read_in_that_round(tmp_path):
    """Issue 34, item 8: a round in which the log ends mid-line reports the findings of the complete lines
    before that line (only the partial line waits), with the gate's verdicts for them."""
    s = Session(tmp_path)
    w = Watch(Follow(tmp_path))
    assert w.round() == []
    s.turn(2, edits={61: lambda r: r.update(temperature=0.9)})  # a divergence in complete lines
    with open(s.log, "ab") as fh:
        fh.write(b'{"type":"turn/start","seq":')  # the next line, being written
    new = w.round()
    assert [f.rule for f in new] == ["DIV010"]
    assert w.follow.modes == {str(s.log): "held"}
    with open(s.log, "ab") as fh:
        fh.write(b"%d}\n" % s.b.seq)
    assert "DIV010" not in [f.rule for f in w.round()]  # reported once
