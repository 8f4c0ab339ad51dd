"""The fuzz run's other commands and fault kinds (issue 34): ``reduce`` and the TUI on every input the
checker reads, and the faults of the hostile audit around an input (a FIFO or a device named like a log,
a symlink loop, an --output hard-linked to the log, a full disk, a kill -9 mid-write).

Each runner writes its case under a folder and returns ``(Outcome, failure or None)`` like
:func:`tests.support.fuzz_cases.run_case`, judged by the same :func:`verdict` plus what the fault
promises (the input unchanged, an output complete or absent, the old output kept)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fuzz_cases import Case, Outcome, check_flags, random_case, run_cli, time_budget, verdict, write_case
from tests.support.fuzz_inputs import Seed

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ("fifo", "device", "symlink-loop", "hardlink-output", "full-disk", "kill")


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def run_reduce(case: Case, folder: Path) -> tuple[Outcome, str | None]:
    """``reduce`` on the case's log, for its first finding's rule (or one it does not have): no traceback,
    the input unchanged, and the repro folder complete (repro.json) on success or absent otherwise."""
    target = write_case(case, folder / "in")
    log = target if target.is_file() else next((p for p in sorted(target.rglob("*.jsonl*")) if p.is_file()), target)
    budget = time_budget(case.size) * 3
    found = run_cli(["check", str(log), "--format", "json", *check_flags()], budget)
    rule = "LOG001"
    with contextlib.suppress(ValueError, AttributeError, IndexError, KeyError):
        rule = json.loads(found.out)["findings"][0]["rule"]
    before = _digest(folder / "in")
    out = folder / "repro"
    outcome = run_cli(["reduce", str(log), "--rule", rule, "--output", str(out), "--max-seconds", "5"], budget)
    bad = verdict(outcome, "reduce", [log, out], budget + 10)
    if bad is None and _digest(folder / "in") != before:
        bad = "an input changed"
    if bad is None and outcome.code == 0 and not (out / "repro.json").is_file():
        bad = "exit 0 without a complete repro"
    if bad is None and outcome.code != 0 and out.exists():
        bad = f"exit {outcome.code} left a repro folder"
    if bad is None and [p.name for p in folder.iterdir() if p.name.startswith(".repro.")]:
        bad = "a temporary folder was left behind"
    return outcome, None if bad is None else f"reduce: {bad}"


def run_tui(target: Path, budget: float) -> tuple[Outcome, str | None]:
    """The app opened headless on ``target``: it comes up, its first screen renders, ``q`` quits it in time."""
    from tests.support.tui_helpers import create_app

    async def drive() -> None:
        app = create_app(str(target))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.3)
            app.export_screenshot()
            await pilot.press("q")
            await pilot.pause(0.2)
        if app.is_running:
            raise AssertionError("the app did not quit on q")

    t0 = time.perf_counter()
    exc, tb = None, ""
    try:
        asyncio.run(asyncio.wait_for(drive(), budget))
    except BaseException as e:  # every escape is a failure mode
        if isinstance(e, KeyboardInterrupt):
            raise
        import traceback

        exc, tb = e, traceback.format_exc()
    outcome = Outcome(0, "", "", time.perf_counter() - t0, exc, tb)
    if exc is not None:
        from tests.support.fuzz_cases import failure_mode

        return outcome, f"tui: {failure_mode(exc)}"
    return outcome, None


def fault_case(rng: random.Random, seeds: list[Seed]) -> tuple[Case, list[str]]:
    """A case from the long run's generator with one of :data:`FAULTS` around it (``case.extra`` names it)."""
    case, names = random_case(rng, seeds)
    case.command = "check"
    case.fmt = "json"
    fault = rng.choice(FAULTS)
    case.extra = [f"fault:{fault}"]
    return case, [*names, f"fault-{fault}"]


def run_fault_case(case: Case, folder: Path) -> tuple[Outcome, str | None]:
    fault = case.extra[0].split(":", 1)[1]
    case = Case(dict(case.files), case.target, case.fmt, case.command, [])
    target = write_case(case, folder / "in")
    log = target if target.is_file() else next((p for p in sorted(target.rglob("*.jsonl*")) if p.is_file()), None)
    budget = time_budget(case.size)
    flags = check_flags()
    if fault in ("fifo", "device"):
        special = folder / "in" / "zz-special.jsonl"
        if fault == "fifo":
            os.mkfifo(special)
        else:
            try:
                os.mknod(special, 0o600 | 0o020000, os.makedev(1, 5))  # a character device (/dev/zero)
            except (PermissionError, AttributeError):
                os.mkfifo(special)
        outcome = run_cli(["check", str(folder / "in"), "--format", "json", *flags], budget * 1.5)
        bad = verdict(outcome, "json", [folder / "in"], budget)
        if bad is None and "zz-special.jsonl: not a regular file; skipped" not in outcome.err:
            bad = "no note for the special file"
        named = run_cli(["check", str(special), *flags], budget)
        if bad is None and (named.code != 2 or "Traceback" in named.err):
            bad = f"a special file named directly: exit {named.code}"
        return outcome, None if bad is None else f"fault {fault}: {bad}"
    if fault == "symlink-loop":
        (folder / "a.jsonl").symlink_to(folder / "b.jsonl")
        (folder / "b.jsonl").symlink_to(folder / "a.jsonl")
        worst = None
        for argv in (["check", str(folder / "a.jsonl"), "--exit-zero", *flags], ["replay", str(folder / "a.jsonl")]):
            outcome = run_cli(argv, budget)
            if outcome.code != 2 or "Traceback" in outcome.err or outcome.exc is not None:
                worst = f"{argv[0]} exit {outcome.code}"
        return outcome, None if worst is None else f"fault symlink-loop: {worst}"
    if log is None:
        return run_cli(["check", str(target), *flags], budget), None
    before = _digest(folder / "in")
    if fault == "hardlink-output":
        out = folder / "report.json"
        os.link(log, out)
        outcome = run_cli(["check", str(target), "--format", "json", "--output", str(out), *flags], budget * 1.5)
        bad = None if _digest(folder / "in") == before else "the log changed through a hard link"
        if bad is None and outcome.code != 2:
            bad = f"exit {outcome.code}, not a refusal"
        return outcome, None if bad is None else f"fault hardlink-output: {bad}"
    if fault == "full-disk":
        return _full_disk(target, folder, budget, flags, before)
    return _kill(target, folder, budget, flags, before, random.Random(case.size))


def _full_disk(target: Path, folder: Path, budget: float, flags: list[str], before: dict) -> tuple[Outcome, str | None]:
    disk = folder / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(disk)]).returncode:
        return run_cli(["check", str(target), *flags], budget), None  # no mount here: the ENOSPC unit tests cover it
    try:
        (disk / "report.json").write_text("previous\n")
        with contextlib.suppress(OSError), open(disk / ".fill", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        outcome = run_cli(
            ["check", str(target), "--format", "json", "--output", str(disk / "report.json"), *flags], budget * 1.5
        )
        bad = None
        if "Traceback" in outcome.err or outcome.exc is not None:
            bad = "traceback"
        elif (disk / "report.json").read_text() != "previous\n" and outcome.code == 2:
            bad = "the previous report was damaged"
        elif outcome.code == 2 and "No space left" not in outcome.err:
            bad = "exit 2 without saying the disk is full"
        elif sorted(p.name for p in disk.iterdir()) != [".fill", "report.json"]:
            bad = "a temporary file was left behind"
        elif _digest(folder / "in") != before:
            bad = "an input changed"
        return outcome, None if bad is None else f"fault full-disk: {bad}"
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def _kill(target: Path, folder: Path, budget: float, flags: list[str], before: dict, rng: random.Random):
    """``check --output`` in its own process, killed with SIGKILL after a random moment: the report is the old
    one or a complete new one, never a torn one, and no temporary file is left but the one the kill cut."""
    out = folder / "report.json"
    out.write_text('{"previous": true}\n')
    code = "import sys; from inspector.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "check", str(target), "--format", "json", "--output", str(out), *flags]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(rng.uniform(0.05, 1.5))
    proc.send_signal(signal.SIGKILL)
    err = proc.communicate()[1].decode(errors="replace")
    outcome = Outcome(proc.returncode, "", err, time.perf_counter() - t0)
    bad = None
    try:
        json.loads(out.read_text())
    except ValueError:
        bad = "a torn report"
    if bad is None and _digest(folder / "in") != before:
        bad = "an input changed"
    return outcome, None if bad is None else f"fault kill: {bad}"
