"""Cache economics on a session whose every breaker is known in advance."""

from __future__ import annotations

import json
import re

import pytest

from invariants.analysis.cache_report import est_tokens, provider_prompt, session_cache, volatile_change
from invariants.read.source import LogSource
from invariants.replay.session import replay
from tests.conftest import corpus_dir
from tests.support.logs import Log

TOOLS = [
    {"name": "read", "description": "read a file", "parameters": {"type": "object"}},
    {"name": "bash", "description": "run a command", "parameters": {"type": "object"}},
]
GREP = {"name": "grep", "description": "search", "parameters": {"type": "object"}}
PREFIX = [{"role": "user", "content": [{"type": "text", "text": "skills: a, b"}]}]


def _turn(
    log: Log, surface: list[int], header: dict | None, reason: str | None, compact: bool, cache_read: int
) -> None:
    """One turn of one step with the header it names (and a compaction of the turns before it)."""
    t = log.turn + 1
    log.turn_start(t)
    surface.append(log.user(f"question {t}"))
    if compact:
        first, last = surface[0], surface[-2]
        shadowed = surface[:-1]
        start = log.add("compact/start", {"turn": t})
        summary = log.add(
            "compact/summary",
            {
                "summary": "s",
                "shadowedRange": {"start": first, "end": last},
                "shadowedSeqs": shadowed,
                "shadowedTokenCount": 10,
                "model": "m",
            },
        )
        seq = log.add(
            "user/message",
            {
                "content": [{"type": "text", "text": "summary of earlier turns"}],
                "source": {"kind": "plugin", "plugin": "compact"},
            },
            surfaceOp={"op": "replace", "start": first, "end": last},
            sourceEventSeqs=[start, summary, *shadowed],
        )
        surface[:] = [seq, surface[-1]]
        log.add("compact/end", {"turn": t})
    log.step_start(t, 1)
    if header is not None:
        log.snapshot(reason, header)
    c = log.chunk(t, 1, "ok")
    usage = {"inputTokens": 100 * t, "outputTokens": 5, "cacheReadTokens": cache_read}
    surface.append(log.assistant(t, 1, [{"type": "text", "text": f"answer {t}"}], [c], usage=usage))
    log.step_end(t, 1)
    log.turn_end(t)


def H(system="You are a coding agent.", tools=TOOLS, model="m1", prefix=PREFIX, **config):
    h = {"config": {"model": model, **config}}
    if system:
        h["system"] = system
    if tools:
        h["tools"] = tools
    if prefix:
        h["messagePrefix"] = prefix
    return h


# (header written at this step, reason, compaction?, expected breaker kind or None)
SCRIPT = [
    (H(), "initial", False, None),  # 1 first request
    (None, None, False, None),  # 2 append only
    (H(system="You are a careful coding agent."), "fallback", False, "system"),  # 3
    (
        H(system="You are a careful coding agent. Now: 2026-07-13T10:00:00Z"),
        "fallback",
        False,
        "system",
    ),  # 4 (text appended)
    (H(system="You are a careful coding agent. Now: 2026-07-13T10:05:00Z"), "fallback", False, "volatile"),  # 5
    (
        H(system="You are a careful coding agent. Now: 2026-07-13T10:05:00Z", tools=[*TOOLS, GREP]),
        "fallback",
        False,
        "tools-changed",
    ),  # 6
    (
        H(system="You are a careful coding agent. Now: 2026-07-13T10:05:00Z", tools=[GREP, *TOOLS]),
        "fallback",
        False,
        "tools-reordered",
    ),  # 7
    (
        H(
            system="You are a careful coding agent. Now: 2026-07-13T10:05:00Z",
            tools=[
                {"description": t["description"], "name": t["name"], "parameters": t["parameters"]}
                for t in [GREP, *TOOLS]
            ],
        ),
        "fallback",
        False,
        "key-order",
    ),  # 8
    ("same+model", "fallback", False, "config"),  # 9
    ("same+temperature", "fallback", False, None),  # 10 temperature is not in the prompt
    ("resume+prefix", "resume", False, "prefix-drift"),  # 11
    (None, None, True, "compaction"),  # 12
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    log, surface = Log("cache", created=1), []
    last = None
    for header, reason, compact, _ in SCRIPT:
        if header == "same+model":
            header = {**last, "config": {**last["config"], "model": "m2"}}
        elif header == "same+temperature":
            header = {**last, "config": {**last["config"], "temperature": 0.3}}
        elif header == "resume+prefix":
            header = {
                **last,
                "messagePrefix": [{"role": "user", "content": [{"type": "text", "text": "skills: a, b, c"}]}],
            }
        if header is not None:
            last = header
        _turn(log, surface, header, reason, compact, cache_read=64)
    path = log.write(tmp_path_factory.mktemp("cache") / "cache.jsonl")
    model = replay(LogSource(path, path.parent))
    return model, session_cache(model)


def test_each_breaker_class_is_detected(report):
    _, sc = report
    assert len(sc.steps) == len(SCRIPT)
    got = [s.breaker["kind"] if s.breaker else None for s in sc.steps]
    assert got == [expected for *_, expected in SCRIPT]
    assert "2026-07-13T10:00:00Z -> 2026-07-13T10:05:00Z" in sc.steps[4].breaker["detail"]
    assert sc.steps[5].breaker["detail"] == "tools added ['grep']"
    assert sc.steps[8].breaker["detail"] == "model 'm1' -> 'm2'" and sc.steps[8].reused_bytes == 0
    assert sc.steps[9].config_changes == ["temperature"]
    assert sc.steps[10].breaker["message_index"] == 0


def _render(req: dict) -> list[bytes]:
    dumps = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()  # noqa: E731
    parts = [dumps({k: req[k] for k in ("provider", "model", "reasoningEffort") if k in req})]
    parts += [dumps(req[k]) for k in ("system", "tools") if k in req]
    return parts + [dumps(m) for m in req["messages"]]


def test_bytes_reuse_and_repaid_match_an_independent_rendering(report):
    model, sc = report
    prev = None
    for st, row in zip(model.steps, sc.steps):
        cur = b"".join(_render(model.rebuild_request(st).request))
        assert row.bytes == len(cur)
        if prev is not None and row.breaker is None:
            assert cur.startswith(prev) and row.reused_bytes == len(prev) and row.repaid_bytes == 0
        elif prev is not None and row.breaker["kind"] != "config":
            n = 0
            while n < min(len(prev), len(cur)) and prev[n] == cur[n]:
                n += 1
            assert row.reused_bytes == n and row.repaid_bytes == min(len(prev), len(cur)) - n
        prev = cur


def test_usage_and_summary(report):
    _, sc = report
    j = sc.to_json()
    assert j["steps"][2]["cache_read_tokens"] == 64 and j["steps"][2]["input_tokens"] == 300
    s = j["summary"]
    assert s["input_tokens"] == sum(100 * t for t in range(1, len(SCRIPT) + 1)) and s["cache_read_tokens"] == 64 * len(
        SCRIPT
    )
    assert s["repaid_tokens_est"] == est_tokens(sum(x.repaid_bytes for x in sc.steps))
    assert s["breakers"]["system"] == 2 and sum(s["breakers"].values()) == sum(1 for *_, k in SCRIPT if k)
    assert est_tokens(8) == 2 and est_tokens(9) == 3


@pytest.mark.parametrize(
    "a, b, kind",
    [
        ("today 2026-07-13 ok", "today 2026-07-14 ok", "timestamp"),
        ("at 10:00:01.", "at 10:00:02.", "time"),
        ("req 3f1c9a2b7d", "req 88aa01bb22", "hex id"),
        ("id 123e4567-e89b-12d3-a456-426614174000", "id 123e4567-e89b-12d3-a456-426614174999", "uuid"),
        ("budget 4096 tokens", "budget 8192 tokens", "number"),
    ],
)
def test_volatile_values(a, b, kind):
    assert volatile_change(a, b)["value"] == kind


def test_an_edit_is_not_volatile():
    assert volatile_change("You are helpful.", "You are careful.") is None
    assert volatile_change("same", "same") is None


# --------------------------------------------------------------------------- the hit rate of disjoint usage


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
