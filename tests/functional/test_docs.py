"""What a newcomer reads: a short README that names each command once and gives two set-up commands,
a command-line reference generated from the parsers, and links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inspector.cli import COMMANDS
from inspector.cli_reference import cli_markdown
from tests.conftest import ROOT
from tests.support.readme import fenced_blocks, section

README = ROOT / "README.md"
DOCS = [
    README,
    ROOT / "CONTRIBUTING.md",
    ROOT / "SECURITY.md",
    ROOT / "benchmarks" / "RESULTS.md",
    ROOT / "inspector" / "index" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def test_the_readme_is_at_most_300_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def test_the_readme_names_each_subcommand_once_in_its_command_table():
    table = section(README.read_text(encoding="utf-8"), "## Commands")
    first_cells = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `")]
    rows = {name: [c for c in first_cells if re.search(rf"`inspector {re.escape(name)}[` ]", c)] for name in COMMANDS}
    assert {name: len(found) for name, found in rows.items()} == dict.fromkeys(COMMANDS, 1), rows
    assert len(first_cells) == len(COMMANDS)


def test_the_readme_gives_exactly_two_set_up_commands():
    blocks = fenced_blocks(README.read_text(encoding="utf-8"), "sh")
    assert len(blocks) == 2, blocks
    run, tests = (b.strip() for b in blocks)
    assert run.startswith("python3 -m pip install -e . && ") and "inspector check sample_logs/" in run
    assert tests == "python3 -m pip install -e '.[test]' && python3 -m pytest -q"


def test_the_cli_reference_is_generated_from_the_parsers():
    doc = (ROOT / "docs" / "CLI.md").read_text(encoding="utf-8")
    assert doc == cli_markdown() + "\n", "regenerate with: python3 -m inspector.cli_reference > docs/CLI.md"
    for name in COMMANDS:
        assert f"\n## inspector {name}\n" in doc


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading(doc):
    broken = []
    for target in _LINK.findall(_FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert not broken, f"{doc.name}: links to nothing: {broken}"
