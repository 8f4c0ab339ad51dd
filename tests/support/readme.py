"""Fenced code blocks of the README files, for tests that run what the documentation says."""

from __future__ import annotations

import re
from pathlib import Path

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced_blocks(text: str, lang: str) -> list[str]:
    """The bodies of every ```lang block, in order."""
    return [body for tag, body in _FENCE.findall(text) if tag == lang]


def section(text: str, heading: str) -> str:
    """The text under a Markdown heading line (e.g. ``## Use in CI``), up to the next heading of that level."""
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    end = re.search(rf"^{re.escape(level)} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def block_named(path: Path, lang: str, first_line: str) -> str:
    """The one ```lang block of ``path`` whose first line is ``first_line`` (a comment naming the file it shows)."""
    blocks = [b for b in fenced_blocks(path.read_text(encoding="utf-8"), lang) if b.split("\n", 1)[0] == first_line]
    assert len(blocks) == 1, (
        f"{path.name}: expected one ```{lang} block starting with {first_line!r}, found {len(blocks)}"
    )
    return blocks[0]


def commands(block: str) -> list[str]:
    """The command lines of a ```sh block: comments after two spaces and `#` dropped, blank lines skipped."""
    lines = []
    for raw in block.splitlines():
        line = re.split(r"\s{2,}#", raw, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines
