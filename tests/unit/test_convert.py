"""``convert`` refuses a line nested deeper than the reader's limit, with one clear line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from invariants.model.jsonvalue import MAX_DEPTH
from invariants.simulate.convert import ConvertError, convert_log
from tests.conftest import ROOT
from tests.support.logs import Log

DEEP = b'{"a":' * 100_000 + b"1" + b"}" * 100_000  # orjson would recurse until the C stack overflows


def _log_with(tmp_path, line: bytes, at: int):
    log = Log()
    log.clean_turn(1, header_reason="initial")
    lines = log.lines()
    lines.insert(at, line)
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(
    ("line", "at", "number"),
    [
        (b'{"type":"todo/write","seq":1,"time":1,"data":' + DEEP + b"}", 2, 3),
        (
            b'{"type":"todo/write","seq":1,"time":1,"data":' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}",
            2,
            3,
        ),
    ],
)
def test_a_deep_line_is_a_clear_error_naming_file_and_line(tmp_path, line, at, number):
    src = _log_with(tmp_path, line, at)
    with pytest.raises(ConvertError, match=rf"deep\.jsonl: line {number}: nesting deeper than {MAX_DEPTH} levels"):
        convert_log(src, tmp_path / "out" / "deep.jsonl.zstd")
    assert not (tmp_path / "out").exists()


def test_a_deep_header_is_a_clear_error(tmp_path):
    log = Log()
    path = tmp_path / "deep.jsonl"
    path.write_bytes(log.lines()[0][:-1] + b',"x":' + DEEP + b"}\n")
    with pytest.raises(ConvertError, match="line 1: nesting deeper"):
        convert_log(path, tmp_path / "out.jsonl.zstd")


def test_the_command_prints_one_line_and_exits_2_and_converts_the_rest(tmp_path):
    src = _log_with(tmp_path, b'{"type":"todo/write","seq":1,"time":1,"data":' + DEEP + b"}", 2)
    good = Log("s2")
    good.clean_turn(1, header_reason="initial")
    good.write(tmp_path / "good.jsonl")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "invariants.simulate.convert",
            str(src),
            str(tmp_path / "good.jsonl"),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"convert: {src}: line 3: nesting deeper than {MAX_DEPTH} levels; the log was not converted"
    ]
    assert "1 log(s) written" in run.stdout and (tmp_path / "out" / "good.jsonl.zstd").is_file()
