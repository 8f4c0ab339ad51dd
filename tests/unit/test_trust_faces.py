"""Issue 12: what a user reads must be true (cache-report ratio, baselines, replay bytes, DIV011, DeepDiff)."""

from __future__ import annotations

import re

from invariants.analysis.cache_report import provider_prompt, session_cache
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.conftest import corpus_dir
from tests.support.logbuilder import Log

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
