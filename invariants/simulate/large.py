"""Benchmark-sized seed-era logs, streamed to disk by :func:`generate_large`."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Sequence

from invariants.simulate.content import BASH, CWD, EDIT, GREP, READ, SYSTEM, _bash, skills_prefix
from invariants.simulate.recorder import DEFAULT_MODEL, Compaction, Reply, SessionRecorder
from invariants.simulate.world import FileLines, NullLines, World

WORDS = tuple(
    (
        "the build cache test module parser config token stream request header step turn file path error "
        "result value branch merge commit review patch index schema field record event chunk delta window "
        "budget limit retry timeout worker queue session prefix summary context tool call output input"
    ).split()
)
# Text as users and models write it (half the words not ASCII: CJK, accents, typographic punctuation,
# emoji), so a benchmark does not measure only the ASCII fast paths.
WORDS_UTF8 = WORDS[::2] + tuple(
    "构建 缓存 测试 模块 解析 配置 请求 会话 上下文 工具 输出 错误 résumé café naïve Zürich "
    "“quoted” ‘single’ — … ✓ 🚀 données répertoire ошибка запрос".split()
)


def _prose(rng: random.Random, words: int, vocabulary: Sequence[str] = WORDS) -> str:
    picked = [rng.choice(vocabulary) for _ in range(words)]
    return " ".join(picked).capitalize() + "."


def _large_reply(rng: random.Random, final: bool, vocabulary: Sequence[str]) -> Reply:
    reasoning = _prose(rng, rng.randint(30, 120), vocabulary)
    if final:
        return Reply(reasoning=reasoning, text=_prose(rng, rng.randint(20, 80), vocabulary))
    calls = [
        _bash(f"./task.sh {rng.randint(0, 999)}", "Run one task", _prose(rng, rng.randint(5, 40), vocabulary) + "\n")
        for _ in range(rng.randint(1, 2))
    ]
    return Reply(reasoning=reasoning, text=_prose(rng, rng.randint(3, 12), vocabulary), calls=calls)


def _vary_header(rec: SessionRecorder, turn_index: int, every: int) -> None:
    """Every ``every`` turns change the system prompt, tool list or config (a delta each time)."""
    phase = (turn_index // every) % 4
    if turn_index == 0 or turn_index % every:
        return
    if phase == 0:
        rec.system = SYSTEM + f"\n\nReminder {turn_index}: keep answers short."
    elif phase == 1:
        rec.tools = (
            [t for t in rec.tools if t["name"] != "grep"]
            if any(t["name"] == "grep" for t in rec.tools)
            else [*rec.tools, GREP]
        )
    elif phase == 2:
        rec.config = {"model": DEFAULT_MODEL, "temperature": round(0.1 * (turn_index % 7), 1)}
    else:
        rec.config = {"model": DEFAULT_MODEL}


def generate_large(
    path_log: str | Path,
    path_capture: str | Path | None,
    *,
    events: int = 100_000,
    steps: int = 1_000,
    seed: int = 0,
    resume_every: int = 20,
    change_every: int = 8,
    compact_over: int = 40,
    compact_every: int | None = None,
    vocabulary: Sequence[str] = WORDS,
) -> dict:
    """Stream a seed-era log of at least ``events`` events and ``steps`` steps to disk.

    Many chunks per step (one per word or two), tool calls, compaction whenever
    the surface passes ``compact_over`` nodes (which also bounds the capture lines; with
    ``compact_every``, instead at the first step of every ``compact_every``-th turn), a new
    loop instance with a grown prefix every ``resume_every`` turns and a header
    change (a delta) every ``change_every`` turns.  Only the current
    conversation is held in memory.  ``path_capture=None`` skips captures.  The prose is
    drawn from ``vocabulary`` (:data:`WORDS_UTF8`: text that is not ASCII).
    Returns counts.
    """
    world = World(seed)
    log = FileLines(path_log)
    capture = FileLines(path_capture) if path_capture is not None else NullLines()
    rec = SessionRecorder(
        world,
        log,
        capture,
        session_id=world.session_id(),
        session_file=Path(path_log).name,
        cwd=CWD,
        system=SYSTEM,
        tools=[BASH, READ, EDIT],
    )
    done_steps = turns = instances = 0
    try:
        while rec.seq < events or done_steps < steps:
            if turns % resume_every == 0:
                instances += 1
                rec.start_instance(
                    prefix=skills_prefix([(f"skill-{i}", _prose(world.rng, 6)) for i in range(instances)])
                )
            _vary_header(rec, turns, change_every)
            turns += 1
            rec.user_turn(_prose(world.rng, world.rng.randint(8, 30), vocabulary))
            n = world.rng.randint(1, 4)
            for k in range(n):
                compact = None
                due = (
                    k == 0 and turns > 1 and (turns - 1) % compact_every == 0
                    if compact_every
                    else rec.surface_size() > compact_over
                )
                if due:
                    compact = Compaction(_prose(world.rng, 40, vocabulary), keep_last=6, record_request=False)
                rec.step(_large_reply(world.rng, k == n - 1, vocabulary), compact=compact)
                done_steps += 1
            rec.end_turn()
    finally:
        log.close()
        capture.close()
    return {"events": rec.seq, "steps": done_steps, "turns": turns, "instances": instances, "requests": rec.requests}
