"""`reduce` on real corpus logs of both eras with injected faults: for each fault kind the repro shows the same
rule, is 1-minimal over the units, has at most half the original's events, adds no log-integrity or
event-contract finding, and, redacted, holds none of the original's content strings of 12+ characters
outside ``kept``.  The inputs are never written."""

from __future__ import annotations

import json

import pytest

from invariants import check
from invariants.reduce import reduce_log, write_repro
from invariants.reduce.shorten import WINDOW
from tests.support.faults import (
    FAULTS,
    SEED_PREFIX,
    assert_one_minimal,
    changed_system,
    header_after_first_chunk,
    leaked,
)

STRUCTURAL = ("log-integrity", "event-contract")


@pytest.mark.parametrize("fault", FAULTS, ids=[f.kind for f in FAULTS])
def test_fault_reduces_to_a_minimal_redacted_repro(tmp_path, fault):
    log = fault.inject(fault.log, tmp_path)
    original = check(log).findings
    assert fault.rule in {f.rule for f in original}, f"the injected fault shows no {fault.rule}"
    inputs = {p.name: p.read_bytes() for p in log.parent.iterdir()}

    plain = reduce_log(log, fault.rule)
    out = tmp_path / "plain"
    write_repro(plain, out)
    assert {p.name: p.read_bytes() for p in log.parent.iterdir()} == inputs  # inputs untouched
    found = check(out / log.name).findings
    assert fault.rule in {f.rule for f in found}
    before = {f.rule for f in check(log.parent).findings if f.category in STRUCTURAL}
    assert {f.rule for f in check(out).findings if f.category in STRUCTURAL} <= before  # the parent too
    if fault.rule.startswith("FRK"):
        assert (out / plain.manifest["parent"]["name"]).is_file()  # the child brought its parent along
    events = plain.manifest["events"]
    assert events["after"] * 2 <= events["before"], events
    assert_one_minimal(out / log.name, fault.rule)

    shown = reduce_log(log, fault.rule, redact=True)
    red = tmp_path / "redacted"
    written = write_repro(shown, red)
    manifest = json.loads((red / "repro.json").read_text())
    assert manifest["redacted"] is True
    assert fault.rule in {f.rule for f in check(red / log.name).findings}
    files = [p for p in written if p.name != "repro.json"]
    assert not leaked(sorted(log.parent.iterdir()), files, {k["string"] for k in manifest["kept"]})


def test_a_changed_system_prompt_is_cut_to_a_window_around_the_change(tmp_path):
    log = changed_system(SEED_PREFIX, tmp_path)
    out = tmp_path / "out"
    write_repro(reduce_log(log, "DIV010"), out)
    header = next(json.loads(x) for x in log.read_text().splitlines() if '"request/header"' in x)
    system = header["data"]["header"]["system"]
    cut = next(json.loads(x) for x in (out / log.name).read_text().splitlines() if '"request/header"' in x)
    recorded = json.loads((out / "requests.jsonl").read_text().splitlines()[0])["request"]["system"]
    assert cut["data"]["header"]["system"] == system[-WINDOW:]
    assert recorded == system[-WINDOW:] + "\nA line of the system prompt that no header delta ever wrote."


def test_a_chunk_run_the_finding_needs_collapses_into_one_chunk(tmp_path):
    log = header_after_first_chunk(SEED_PREFIX, tmp_path)
    reduction = reduce_log(log, "HDR010")
    write_repro(reduction, tmp_path / "out")
    assert reduction.manifest["chunk_runs_collapsed"] == 1
    events = [json.loads(x) for x in (tmp_path / "out" / log.name).read_text().splitlines()[1:]]
    deltas = [e["data"]["chunk"] for e in events if e["data"].get("chunk", {}).get("type") == "tool-call-delta"]
    assert [d["argumentsDelta"] for d in deltas] == ['{"text":"y"}']  # two deltas joined into one
