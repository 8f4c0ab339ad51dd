"""Damage one line of a log in the ways real logs get damaged, and check the checker reports it once.

One root cause, one finding (issue 12 item 4): a damaged line is lost, and what
it held (a boundary, a header, a call) must not cascade into later findings.
"""

from __future__ import annotations

import orjson

from invariants.read.source import LogSource
from invariants.replay.session import replay


def damage(line: bytes, kind: str) -> bytes:
    if kind == "utf8":
        return line.replace(b'"type":"', b'"type":"\xff', 1)
    if kind == "nul":
        return line.replace(b'"time":', b'"t\x00ime":', 1)
    if kind == "deep":
        return line[:-1] + b',"x":' + b"[" * 600 + b"]" * 600 + b"}"
    if kind == "dupseq":  # JSON's last key wins: the event claims a seq far ahead
        return line[:-1] + b',"seq":' + str(orjson.loads(line)["seq"] + 100).encode() + b"}"
    raise AssertionError(kind)


DAMAGE = ("utf8", "nul", "deep", "dupseq")


def damaged_variants(lines: list[bytes], kinds=DAMAGE):
    """(line number, kind, lines) for every event line damaged in every way."""
    for i in range(1, len(lines)):
        for kind in kinds:
            yield i + 1, kind, [*lines[:i], damage(lines[i], kind), *lines[i + 1 :]]


def one_finding_per_defect(lines: list[bytes], tmp_path, kinds=DAMAGE) -> list:
    """Every damaged variant that does not give exactly one error at the damaged line (or a torn tail)."""
    path = tmp_path / "damaged.jsonl"
    bad = []
    last_turn_end = max(i for i, line in enumerate(lines) if b'"turn/end"' in line) + 1
    for number, kind, variant in damaged_variants(lines, kinds):
        path.write_bytes(b"\n".join(variant) + b"\n")
        model = replay(LogSource(path, tmp_path))
        errors = [f for f in model.findings if f.severity == "error"]
        if number >= last_turn_end:  # no committed turn/end after it: a crash-truncated tail, cut by the harness
            ok = errors == [] and [f.line for f in model.findings if f.rule == "LOG004"] == [number]
        else:
            ok = len(errors) == 1 and errors[0].line == number and errors[0].category == "log-integrity"
        if not ok:
            bad.append((number, kind, [(f.rule, f.line, f.message[:120]) for f in errors]))
    return bad
