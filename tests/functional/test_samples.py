"""The sample logs say what faults they carry (EXPECTED.json); the checker finds exactly those."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from invariants import check
from invariants.model.registry import RULES
from tests.conftest import SAMPLES

BY_NAME = {r.name: r for r in RULES.values()}
EXPECTED = json.loads((SAMPLES / "EXPECTED.json").read_text())


@pytest.fixture(scope="module")
def result():
    return check([SAMPLES])


def test_every_expected_kind_is_a_rule_name():
    kinds = {f["kind"] for faults in EXPECTED.values() for f in faults}
    assert kinds <= set(BY_NAME), kinds - set(BY_NAME)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_checker_finds_exactly_the_injected_faults(result, name):
    file = str(SAMPLES / name)
    got = Counter((f.rule, f.severity) for f in result.findings if f.file == file)
    want = Counter((BY_NAME[x["kind"]].code, x["severity"]) for x in EXPECTED[name])
    assert got == want
    for fault in EXPECTED[name]:
        if "seq" in fault:
            code = BY_NAME[fault["kind"]].code
            assert fault["seq"] in {f.seq for f in result.findings if f.file == file and f.rule == code}


def test_every_sample_log_is_listed():
    from invariants.read.discover import discover

    sources, _ = discover([SAMPLES])
    logs = {str(s.path.relative_to(SAMPLES)) + (f"#{s.member}" if s.member is not None else "") for s in sources}
    assert logs == set(EXPECTED)


def test_samples_are_reproducible_from_the_generator(tmp_path):
    import zstandard

    from invariants.simulate.samples import main
    from tests.unit.test_simulator import SAMPLES_LIBZSTD, _whole_frames

    main([str(tmp_path)])
    for path in SAMPLES.rglob("*"):
        if path.is_file():
            made = (tmp_path / path.relative_to(SAMPLES)).read_bytes()
            if path.name.endswith(".zstd") and zstandard.ZSTD_VERSION != SAMPLES_LIBZSTD:
                # another libzstd compresses the same frames to other bytes (test_simulator explains)
                assert _whole_frames(made) == _whole_frames(path.read_bytes()), path
                continue
            assert made == path.read_bytes(), path
