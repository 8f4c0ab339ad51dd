"""Issue 12: what a user reads must be true (cache-report ratio, baselines, replay bytes, DIV011, DeepDiff)."""

from __future__ import annotations

import json
import os
import re

import pytest

from invariants.analysis.cache_report import provider_prompt, session_cache
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.conftest import corpus_dir
from tests.support.logs import Log

# --------------------------------------------------------------------------- 1. cache-report ratio


def _usage_log(path, usages: list[dict]):
    log = Log()
    for t, usage in enumerate(usages, 1):
        log.turn_start(t)
        log.user(f"q{t}")
        log.step_start(t, 1)
        if t == 1:
            log.snapshot()
        log.add("assistant/chunk", {"turn": t, "step": 1, "chunk": {"type": "usage", "usage": usage}})
        c = log.chunk(t, 1, f"a{t}")
        log.assistant(t, 1, [{"type": "text", "text": f"a{t}"}], [c])
        log.step_end(t, 1)
        log.turn_end(t)
    return log.write(path)


def test_cache_hit_rate_counts_cache_reads_inside_the_prompt(tmp_path):
    """The harness's usage is disjoint (inputTokens excludes cache reads): hit rate = read / (input + read)."""
    path = _usage_log(
        tmp_path / "s.jsonl",
        [{"inputTokens": 100, "outputTokens": 1}, {"inputTokens": 10, "cacheReadTokens": 90, "outputTokens": 1}],
    )
    sc = session_cache(replay(LogSource(path, path.parent)))
    summary = sc.summary()
    assert summary["prompt_tokens"] == 200 and summary["cache_read_tokens"] == 90 and summary["input_tokens"] == 110
    assert summary["cache_read_ratio"] == 0.45
    assert [s["prompt_tokens"] for s in sc.to_json()["steps"]] == [100, 100]
    assert provider_prompt({"inputTokens": 5, "cacheReadTokens": 3, "cacheWriteTokens": 2}) == (3, 10)
    assert provider_prompt({"cacheReadTokens": 3}) is None


def test_cache_report_text_on_a_real_late_era_log_never_exceeds_100_percent(capsys):
    from inspector.cli import main

    folder = corpus_dir("upstream-late-era/snapshot__acp-agent__snapshots__subagent-mixed")
    log = folder / "127bbc24-43d6-451a-8a6f-6c153ca51760.jsonl"
    assert main(["cache-report", str(log)]) == 0
    out = capsys.readouterr().out
    # step 2 recorded inputTokens 185 and cacheReadTokens 2,816: a 3,001-token prompt, 94% read from cache
    assert "2,816/3,001 (94%)" in out
    assert "9,088 of 12,279 prompt tokens read from cache (74%), 3,191 uncached" in out
    percents = [int(p) for p in re.findall(r"\((\d+)%\)", out)]
    assert percents and max(percents) <= 100


# --------------------------------------------------------------------------- 2. baseline keyed per file

INVARIANTS_TESTS = "upstream-seed-era/support__invariants__invariants"


def _check_json(capsys, *argv) -> tuple[int, dict]:
    from inspector.cli import main

    code = main(["check", *argv, "--no-cache", "--format", "json", "-q"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


def test_a_baseline_of_one_file_neither_hides_nor_expires_another_files_findings(capsys, tmp_path):
    """t53 and t54 both hold session ``req-check``: t53's baseline must not absorb t54's findings."""
    folder = corpus_dir(INVARIANTS_TESTS)
    base = tmp_path / "baseline.json"
    from inspector.cli import main

    assert main(["check", str(folder / "t53"), "--no-cache", "-q", "--write-baseline", str(base)]) == 0
    capsys.readouterr()
    entries = json.loads(base.read_text())["findings"]
    assert {e["session"] for e in entries} == {"req-check"}
    assert all(e["file"].endswith("t53/req-check.jsonl") and not e["file"].startswith("/") for e in entries)

    code, report = _check_json(capsys, str(folder / "t54"), "--baseline", str(base))
    assert code == 1
    assert sorted(f["rule"] for f in report["findings"]) == ["DIV010", "LOG006"]  # t54's own, both reported
    assert report["baseline"]["suppressed"] == 0 and report["baseline"]["stale"] == []
    assert report["baseline"]["unchecked"] == len(entries)

    code, report = _check_json(capsys, str(folder / "t53"), "--baseline", str(base))
    assert code == 0 and report["findings"] == [] and report["baseline"]["suppressed"] == len(entries)


def test_baseline_entries_are_relative_to_the_baseline_so_another_working_directory_matches(
    capsys, tmp_path, monkeypatch
):
    folder = corpus_dir(INVARIANTS_TESTS) / "t53"
    base = tmp_path / "ci" / "baseline.json"
    base.parent.mkdir()
    from inspector.cli import main

    assert main(["check", str(folder), "--no-cache", "-q", "--write-baseline", str(base)]) == 0
    monkeypatch.chdir(tmp_path)
    code, report = _check_json(capsys, os.path.relpath(folder), "--baseline", "ci/baseline.json")
    assert code == 0 and report["findings"] == [] and report["baseline"]["suppressed"] == 2


def test_a_version_1_baseline_is_rejected_with_how_to_rewrite_it(capsys, tmp_path):
    folder = corpus_dir(INVARIANTS_TESTS) / "t53"
    old = tmp_path / "old.json"
    entry = {"session": "req-check", "rule": "LOG006", "fingerprint": "0123456789abcdef", "file": "x", "line": 5}
    old.write_text(json.dumps({"version": 1, "tool": "inspector 0.1.0", "findings": [entry]}))
    from inspector.cli import main

    assert main(["check", str(folder), "--no-cache", "--baseline", str(old)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "version 1 baseline matches findings by session id alone" in err[0]
    assert f"--write-baseline {old}" in err[0]


# --------------------------------------------------------------------------- 9. fields the harness does not compare


@pytest.mark.parametrize("t", ["t00", "t01", "t02", "t03", "t05", "t06", "t07"])
def test_no_div011_for_provider_on_the_harness_invariant_tests(t):
    """The agent-loop invariant compares model, system, temperature, maxTokens, stop, tools and messages,
    never provider or reasoningEffort: a hand-built request without them (or with another provider) is no
    divergence."""
    from invariants import check

    folder = corpus_dir(f"upstream-late-era/core__agent-loop__invariant/{t}")
    assert [f.message for f in check([folder]).findings if f.rule == "DIV011"] == []


@pytest.mark.parametrize(
    "overrides", [{"provider": None}, {"provider": "other"}, {"reasoningEffort": "high"}, {"topP": 0.9}]
)
def test_spread_config_fields_are_not_compared_but_unknown_fields_are(tmp_path, overrides):
    from invariants import check
    from tests.support.logs import one_turn

    log = one_turn()
    request = log.requests[0]["request"]
    for key, value in overrides.items():
        if value is None:
            request.pop(key)
        else:
            request[key] = value
    log.write(tmp_path / "late-1.jsonl")
    log.write_requests(tmp_path / "requests.jsonl")
    rules = [f.rule for f in check([tmp_path]).findings]
    assert rules == (["DIV011"] if "topP" in overrides else [])


# --------------------------------------------------------------------------- 11. deepdiff's limit warning


def test_a_truncated_deepdiff_says_so_in_the_detail_not_on_stderr(tmp_path, capfd):
    """A recorded message with 400 extra content parts: deepdiff stops at its limit, silently, and the
    finding's detail says where."""
    from invariants import check
    from invariants.replay.compare import DEEP_MAX_DIFFS

    log = Log()
    log.clean_turn(1, "hi", header_reason="initial")
    path = log.write(tmp_path / "s1.jsonl")
    model = replay(LogSource(path, path.parent))
    request = json.loads(json.dumps(model.rebuild_request(model.steps[0]).request))
    request["messages"][0]["content"] = [{"type": "text", "text": f"part {i}"} for i in range(400)]
    line = {"sessionId": "s1", "logLength": model.steps[0].first_chunk_seq, "turn": 1, "step": 1, "request": request}
    log.write_requests(tmp_path / "requests.jsonl", [line])
    capfd.readouterr()
    (div,) = [f for f in check([path]).findings if f.rule == "DIV001"]
    out, err = capfd.readouterr()
    assert err == "" and out == ""
    assert div.detail["deepdiff"]["truncated_after"] == DEEP_MAX_DIFFS == 200
    assert sum(v["count"] for k, v in div.detail["deepdiff"].items() if isinstance(v, dict)) <= DEEP_MAX_DIFFS + 1


def test_an_untruncated_deepdiff_has_no_truncation_mark(tmp_path):
    from invariants import check

    log = Log()
    log.clean_turn(1, "hi", header_reason="initial")
    path = log.write(tmp_path / "s1.jsonl")
    model = replay(LogSource(path, path.parent))
    request = json.loads(json.dumps(model.rebuild_request(model.steps[0]).request))
    request["messages"][0]["content"][0]["text"] = "edited"
    line = {"sessionId": "s1", "logLength": model.steps[0].first_chunk_seq, "turn": 1, "step": 1, "request": request}
    log.write_requests(tmp_path / "requests.jsonl", [line])
    (div,) = [f for f in check([path]).findings if f.rule == "DIV001"]
    assert "truncated_after" not in div.detail["deepdiff"] and div.detail["deepdiff"]["values_changed"]["count"] == 1
