"""The streamed report: units completing in any order give the report a serial, in-order run gives.

``check_report`` spools each session's block as its unit leaves the reorder
window and writes the report from the spool; ``check`` + ``render`` builds the
whole result in memory.  An executor that hands results back shuffled (or in
reverse) must not change a byte of any format, with forks, a baseline and a
ledger in the run.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import pytest

from invariants.gate import assemble
from invariants.gate.baseline import write_baseline
from invariants.gate.config import Config
from invariants.gate.formats import FORMATS, ReportContext, render, write
from invariants.gate.pipeline import check, check_report
from invariants.gate.view import ReportView

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"


class Shuffled:
    """An executor whose results come back in a shuffled order (one unit after another finishing); the
    order of each ``imap`` (the units, then the fork pass's seed comparisons) is kept in ``orders``."""

    jobs = 1

    def __init__(self, seed: int, reverse: bool = False) -> None:
        self.seed = seed
        self.reverse = reverse
        self.orders: list[list[int]] = []

    def map(self, fn: Callable, items: Sequence, costs: Sequence[int] | None = None) -> list:
        return [fn(x) for x in items]

    def imap(self, fn: Callable, items: Iterable, costs: Sequence[int] | None = None) -> Iterator[tuple[int, Any]]:
        items = list(items)  # the whole run known before the first result: any order can come back
        order = list(range(len(items)))
        if self.reverse:
            order.reverse()
        else:
            random.Random(self.seed).shuffle(order)
        self.orders.append(order)
        for i in order:
            yield i, fn(items[i])


def _written(view: ReportView, fmt: str, ctx: ReportContext) -> str:
    parts: list[str] = []
    write(view, fmt, ctx, parts.append)
    return "".join(parts)


def _every_format(view: ReportView, ctx: ReportContext) -> dict[str, str]:
    return {fmt: _written(view, fmt, ctx) for fmt in FORMATS}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples (plain logs with captures, forks, the late layout) in one root: many units."""
    root = tmp_path_factory.mktemp("stream") / "logs"
    shutil.copytree(SAMPLES, root)
    return root


@pytest.mark.parametrize("window", [assemble.WINDOW, 2])
@pytest.mark.parametrize("seed", [1, 2, "reverse"])
def test_a_report_written_while_units_complete_out_of_order_equals_the_in_order_one(
    tree: Path, seed: Any, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the window as it is, and with a window of two blocks (the rest parked on disk)."""
    monkeypatch.setattr(assemble, "WINDOW", window)
    monkeypatch.setattr(assemble, "AUTO_BYTES", 0)  # the fork pass's few small comparisons go to the executor
    monkeypatch.setattr(assemble, "FORK_BYTES", 0)
    held: list[int] = []
    parked: list[int] = []
    add = assemble.Assembler.add

    def watched(self: assemble.Assembler, *args: Any) -> None:
        add(self, *args)
        if self.spooled:
            held.append(len(self.window))
            parked.append(self.parking.parked)

    monkeypatch.setattr(assemble.Assembler, "add", watched)
    ctx = ReportContext(verbose=True, statistics=False)
    whole = check([tree])
    expected = {fmt: render(whole, fmt, ctx) + "\n" for fmt in FORMATS}
    executor = Shuffled(0 if seed == "reverse" else seed, reverse=seed == "reverse")
    view = check_report([tree], executor=executor)
    try:
        units = executor.orders[0]
        assert units != sorted(units)  # the units really came back out of order
        assert len(units) >= 4
        assert len(executor.orders) == 2  # and the fork pass's comparisons went through it too
        got = _every_format(view, ctx)
    finally:
        view.close()
    for fmt in FORMATS:
        assert got[fmt] == expected[fmt], fmt
    assert view.summary() == whole.summary()
    assert max(held) <= window
    assert (parked[-1] > 0) is (window == 2)  # the small window really parked (the large one did not)


def test_out_of_order_with_a_baseline_and_a_ledger(tree: Path, tmp_path: Path) -> None:
    """Baseline matching (first equal finding absorbed, stale entries) and the ledger follow report order."""
    first = check([tree])
    baseline = tmp_path / "baseline.json"
    write_baseline(baseline, first.findings[::2], "test")  # half of them known: the rest are new
    config = Config(baseline=str(baseline))
    ledger_a, ledger_b = tmp_path / "a.ledger", tmp_path / "b.ledger"
    whole = check([tree], config=config, ledger=ledger_a)
    view = check_report([tree], config=config, ledger=ledger_b, executor=Shuffled(7))
    try:
        assert view.baseline is not None and whole.baseline is not None
        assert view.baseline.to_json() == whole.baseline.to_json()
        ctx_whole = ReportContext(statistics=True, baseline=whole.baseline)
        ctx_view = ReportContext(statistics=True, baseline=view.baseline)
        for fmt in FORMATS:
            assert _written(view, fmt, ctx_view) == render(whole, fmt, ctx_whole) + "\n", fmt
    finally:
        view.close()
    assert ledger_a.read_bytes() == ledger_b.read_bytes()


def test_the_window_holds_what_is_out_of_order_not_the_run(tree: Path) -> None:
    """In order, every session leaves the window as its unit arrives; the spool is on disk."""
    seen: list[int] = []
    found: list[Any] = []

    class Watch:
        def found(self, source: Any) -> None:
            found.append(source)

        def session(self, summary: Any) -> None:
            seen.append(1)

    view = check_report([tree], observer=Watch())
    try:
        assert view.blocks.on_disk
        assert len(seen) == view.session_count == len(found) > 0
    finally:
        view.close()
