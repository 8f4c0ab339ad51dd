"""One generated sample: its files and the findings the checker must report on them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Sample:
    name: str
    description: str
    files: dict[str, bytes]
    expected: dict[str, list]
