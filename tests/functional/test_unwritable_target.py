"""A command that cannot write where it was told to says so in one line and exits 2.

Tests run as root, which may write anywhere: the unwritable place is a path under an existing *file*
(or a folder where a file must go), which no user can create."""

from __future__ import annotations

import pytest

from inspector.cli import main
from tests.conftest import SAMPLES

LOG = str(SAMPLES / "clean-multi-turn.jsonl")


@pytest.mark.parametrize(
    "argv, what",
    [
        (["index", LOG, "--db", "{bad}/index.db"], "cannot write the index"),
        (["index", LOG, "--db", "{dir}"], "cannot write the index"),
        (["check", LOG, "--no-cache", "--output", "{bad}/report.txt"], "cannot write report"),
        (["check", LOG, "--no-cache", "--write-baseline", "{bad}/baseline.json"], "cannot write baseline"),
        (["check", LOG, "--cache-dir", "{bad}/cache"], "cannot write the result cache"),
        (["check", LOG, "--no-cache", "--ledger", "{bad}/ledger.json"], "cannot write ledger"),
        (["cache-report", LOG, "--output", "{bad}/cache.txt"], "cannot write report"),
    ],
)
def test_an_unwritable_target_is_one_line_naming_the_path_and_exit_2(tmp_path, capsys, argv, what):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    argv = [a.format(bad=blocker, dir=folder) for a in argv]
    target = next(a for a in argv if str(blocker) in a or a == str(folder))
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"inspector: error: {target}: {what} (")
    assert "Traceback" not in err and blocker.read_text() == "not a folder"
