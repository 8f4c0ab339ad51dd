"""Helpers for tests that a run's cut into units changes nothing: its report in every format, and
a plan with every folder one unit to compare it with."""

from __future__ import annotations

import pytest

from invariants.gate.formats import ReportContext, render

FORMATS = ("text", "json", "sarif", "junit", "github")


def reports(result) -> list[str]:
    """The result rendered in each of :data:`FORMATS`, verbose."""
    return [render(result, fmt, ReportContext(verbose=True)) for fmt in FORMATS]


def whole_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan as before any cut: one unit a folder, whatever it holds."""
    from invariants.gate.unit import Unit

    monkeypatch.setattr(
        "invariants.gate.unit._split", lambda sources, indexes, *_: [Unit(list(sources), list(indexes))]
    )
