"""Time to first screen and step-move latency of the TUI on a generated 50,000-event log.

    python benchmarks/tui_first_screen.py [--events 50000] [--steps 300] [--tmux]
    python benchmarks/tui_first_screen.py --gb 1     # the first screen of a generated 1 GB log
    python benchmarks/tui_first_screen.py --gb 1 --keep /tmp/gb1   # ... kept there, re-used by the next run

With ``--gb`` the log is generated to that size (events scaled from the
default log's bytes per event) and only the first screen is timed: a log over
``PREVIEW_FROM`` shows its first steps, replayed from its head, while the
whole log is checked in the background; the script exits as soon as that
screen is up (the whole check of a gigabyte takes minutes).  Each of the
``--runs`` timings is a new interpreter, timed from its launch (as a user
starts ``inspector``), with its CPU time and where the time went: the
interpreter's start, the import of ``inspector.app``, and ``create_app`` to
the first frame drawn.  ``--keep DIR`` keeps the generated log (about 3.5 GB
with its capture) for the next run.  The timed runs import a compiled copy
of ``inspector/`` and ``invariants/`` (as installed: pip writes the bytecode),
``--source`` the worktree's sources as they are.

The log (and its capture) come from ``invariants.simulate.large.generate_large``.
Three numbers:

* headless first screen: from ``create_app`` (with ``--gb``: from launch) to
  the first frame rendered with the session screen showing the timeline and
  the rebuilt request of the first step (Textual's ``run_test``, the app
  users run, without a terminal);
* step move (not with ``--gb``): ``j`` pressed 200 times, the screen redrawn after each; both the
  screen's own work per move (handler + tab redraw) and the full round trip
  through Pilot are reported;
* with ``--tmux``: the same log opened by the ``inspector`` command in a real
  tmux pane, timed from launch until the pane shows the timeline (with
  ``--gb``: only that, ``--runs`` times, the compiled copy run as the
  command runs it).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_log(folder: Path, events: int, steps: int) -> Path:
    from invariants.simulate.large import generate_large

    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "big.jsonl"
    if (folder / "complete").exists():  # a --keep folder from an earlier run
        print(f"log: re-used {log} ({log.stat().st_size / 1e6:.1f} MB)")
        return log
    counts = generate_large(log, folder / "big.requests.jsonl", events=events, steps=steps)
    print(
        f"log: {counts['events']} events, {counts['steps']} steps, {counts['instances']} instances, "
        f"{counts['requests']} captured requests, {log.stat().st_size / 1e6:.1f} MB"
    )
    (folder / "complete").touch()
    return log


def watch_first_screen(app) -> list[tuple[float, float]]:
    """Hook ``app``'s display: the returned list gets the time of the first frame rendered with the session
    screen showing the timeline and the first step's request, whether from a preview of the head or the
    whole check, and the process's CPU time then (headless, a frame is rendered, not written; ``--tmux``
    times a real terminal)."""
    from inspector.screens.session import SessionScreen
    from inspector.widgets.request_view import RequestView

    shown: list[tuple[float, float]] = []
    display = app._display

    def timed(screen, renderable) -> None:
        display(screen, renderable)
        if (
            not shown
            and renderable is not None
            and not app._batch_count  # a frame rendered in a batch (as during the app's start) is dropped
            and isinstance(screen, SessionScreen)
            and screen.state is not None
            and screen.query_one(RequestView).blocks
        ):
            shown.append((time.perf_counter(), time.process_time()))

    app._display = timed
    return shown


async def first_paint(pilot, shown: list[tuple[float, float]], started: float) -> float:
    """Seconds from ``started`` to that frame.  Not ``pilot.pause()``: that waits for the app to be idle,
    i.e. for the whole check too."""
    while not shown:
        await pilot.pause(0.005)
    return shown[0][0] - started


async def headless(log: Path, moves: int) -> None:
    from inspector.app import create_app

    started = time.perf_counter()
    app = create_app(log)
    shown = watch_first_screen(app)
    async with app.run_test(size=(160, 45)) as pilot:
        first = await first_paint(pilot, shown, started)
        screen = app.screen
        how = "a preview of the log's head" if screen.previewing else "the whole check"
        while screen.previewing or screen.load_elapsed is None:  # the step moves below need the whole check
            await pilot.pause(0.01)
        print(
            f"headless first screen: {first * 1000:.0f} ms ({how}; the whole check in the worker: "
            f"{screen.load_elapsed * 1000:.0f} ms, then on screen)"
        )

        work: list[float] = []
        original = screen._draw_active

        def timed(force: bool = False) -> None:
            t = time.perf_counter()
            original(force)
            work.append(time.perf_counter() - t)

        screen._draw_active = timed  # type: ignore[method-assign]
        trips: list[float] = []
        for _ in range(moves):
            t = time.perf_counter()
            await pilot.press("j")
            trips.append(time.perf_counter() - t)
        for tab in ("2", "3", "4"):
            await pilot.press(tab)
            for _ in range(20):
                t = time.perf_counter()
                await pilot.press("j")
                trips.append(time.perf_counter() - t)
        print(
            f"step move, screen work (handler + redraw of the shown tab): median {statistics.median(work) * 1000:.1f} "
            "ms, "
            f"p95 {sorted(work)[int(len(work) * 0.95)] * 1000:.1f} ms, max {max(work) * 1000:.1f} ms over {len(work)} "
            "moves"
        )
        print(
            f"step move, Pilot round trip (key in → screen refreshed): median {statistics.median(trips) * 1000:.1f} "
            "ms, "
            f"p95 {sorted(trips)[int(len(trips) * 0.95)] * 1000:.1f} ms"
        )


async def first_screen_only(log: Path, launched: float) -> None:
    """The first screen of ``log`` in this (fresh) process, timed from ``launched`` (the parent's clock when it
    started this process: ``perf_counter`` is the system's monotonic clock, shared by processes), so the
    figure includes the interpreter, the imports and Textual's start-up as a user's launch does."""
    imported = time.perf_counter()
    from inspector.app import create_app

    started = time.perf_counter()
    app = create_app(log)
    shown = watch_first_screen(app)
    async with app.run_test(size=(160, 45)) as pilot:
        first = await first_paint(pilot, shown, started)
        cpu = shown[0][1]  # every thread's
        screen = app.screen
        how = "a preview of the log's head, the whole check still running" if screen.previewing else "the whole check"
        print(
            f"headless first screen of {log.stat().st_size / 1e9:.2f} GB: {(started - launched + first) * 1000:.0f} ms "
            f"from launch, CPU {cpu * 1000:.0f} ms ({how}; {len(screen.state.steps)} steps shown); of which "
            f"interpreter start {(imported - launched) * 1000:.0f} ms, import of inspector.app "
            f"{(started - imported) * 1000:.0f} ms, create_app → first frame drawn {first * 1000:.0f} ms"
        )
        sys.stdout.flush()
        os._exit(0)  # the check of the whole log would run on for minutes in its worker thread


def compiled_copy(folder: Path) -> Path:
    """``inspector/`` and ``invariants/`` copied to ``folder`` with their bytecode, as an installed package has it
    (pip compiles on install); run from the worktree with PYTHONDONTWRITEBYTECODE set, every start would
    compile them from source (~0.2 s here)."""
    for package in ("inspector", "invariants"):
        shutil.copytree(ROOT / package, folder / package, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(folder, quiet=1)
    return folder


def first_screen_in_child(log: Path, runs: int, code: Path | None) -> None:
    """Each run in a new interpreter: nothing imported or cached in memory from an earlier one."""
    for _ in range(runs):
        launched = time.perf_counter()
        argv = [sys.executable, __file__, "--first-screen-of", str(log), "--launched", repr(launched)]
        subprocess.run(argv + (["--code", str(code)] if code else []), check=True)


def in_tmux(log: Path, code: Path | None = None, moves: bool = True) -> None:
    """``inspector LOG`` in a real tmux pane (with ``code``: that compiled copy, run as the command does)."""
    if shutil.which("tmux") is None or (code is None and shutil.which("inspector") is None):
        print("tmux run skipped: tmux or the inspector command is not on PATH")
        return
    log = log.resolve()
    command = f"inspector {log}" if code is None else f"env PYTHONPATH={code} {sys.executable} -m inspector.cli {log}"
    # ``-m`` puts the working directory first on sys.path: from a checkout, that checkout's code would
    # run whatever PYTHONPATH says, so the pane starts in ``code`` itself.
    where = ["-c", str(code)] if code is not None else []
    name = f"tui-bench-{time.time_ns()}"
    started = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, *where, "-x", "160", "-y", "45", command], check=True)
    try:
        while time.perf_counter() - started < 30:
            pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
            if "turn 1" in pane and "Rebuilt request" in pane:
                print(
                    f"tmux first screen (launch of `inspector` → timeline and request on screen): "
                    f"{(time.perf_counter() - started) * 1000:.0f} ms"
                )
                break
            time.sleep(0.02)
        else:
            print("tmux: first screen not seen within 30 s")
            return
        if not moves:
            return
        time.sleep(0.5)
        lags = []
        for _ in range(40):
            before = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
            t = time.perf_counter()
            subprocess.run(["tmux", "send-keys", "-t", name, "j"], check=True)
            while time.perf_counter() - t < 5:
                now = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
                if now != before and "step/start at seq" in now:
                    lags.append(time.perf_counter() - t)
                    break
            time.sleep(0.05)
        if lags:
            print(
                f"tmux step move (send-keys j → pane shows the next step's request; includes ~5 ms of tmux polling): "
                f"median {statistics.median(lags) * 1000:.0f} ms, max {max(lags) * 1000:.0f} ms"
            )
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=50_000)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--moves", type=int, default=200)
    p.add_argument("--tmux", action="store_true", help="also time the real command in a tmux pane")
    p.add_argument("--log", type=Path, help="use this log instead of generating one")
    p.add_argument("--gb", type=float, help="generate a log of this many GB and time only its first screen")
    p.add_argument("--keep", type=Path, help="generate the log into this folder and keep it; re-use it if it is there")
    p.add_argument("--runs", type=int, default=3, help="with --gb: time the first screen this many times")
    p.add_argument("--first-screen-of", type=Path, help=argparse.SUPPRESS)  # the child process of --gb
    p.add_argument("--launched", type=float, help=argparse.SUPPRESS)
    p.add_argument("--code", type=Path, help=argparse.SUPPRESS)  # where the child imports inspector from
    p.add_argument(
        "--source", action="store_true", help="with --gb: import the worktree's sources, not a compiled copy of them"
    )
    args = p.parse_args()
    if args.first_screen_of is not None:
        if args.code is not None:
            sys.path.insert(0, str(args.code))
        asyncio.run(first_screen_only(args.first_screen_of, args.launched))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        if args.gb:
            log = args.log
            if log is None and (folder / "complete").exists():
                log = make_log(folder, 0, 0)
            if log is None:
                sizing = make_log(Path(tmp) / "sizing", 5_000, 30)
                per_event = sizing.stat().st_size / 5_000
                events = int(args.gb * 1e9 / per_event)
                log = make_log(folder, events, max(args.steps, events // 170))
            code = None if args.source else compiled_copy(Path(tmp) / "code")
            print(f"code: {'the worktree, compiled on each start' if code is None else 'compiled (as installed)'}")
            first_screen_in_child(log, args.runs, code)
            if args.tmux:
                for _ in range(args.runs):
                    in_tmux(log, code, moves=False)
            return 0
        log = args.log or make_log(folder, args.events, args.steps)
        asyncio.run(headless(log, args.moves))
        if args.tmux:
            in_tmux(log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
