"""Replay is byte-exact: every request the harness accepted is rebuilt to the very bytes it recorded.

Run as a script for the figures: ``python3 -m tests.corpus.test_replay_bytes``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import orjson

from tests.conftest import corpus_dir

# Accepted requests that the log cannot rebuild byte for byte, and why.  The harness's own
# invariant tests hand-built these three (origin "waterfall") without the provider the real
# loop spreads from the header config; the invariant does not compare provider, so it accepted
# them, and so do we (no DIV011: see test_request_compare), but a replay sends what the loop sends.
HAND_BUILT_WITHOUT_PROVIDER = {
    f"upstream-late-era/core__agent-loop__invariant/{t}/requests.jsonl:1" for t in ("t00", "t01", "t02")
}


def accepted(rec) -> bool:
    verdict, shadow = rec.extra.get("verdict"), rec.extra.get("shadowVerdict")
    return verdict == "ok" or (verdict == "unchecked" and shadow == "ok")


def byte_identity(root: Path) -> tuple[Counter, list[str]]:
    """Per origin: accepted loop-built requests and how many rebuild byte-identical; the others by capture line."""
    from invariants import CheckOptions, check

    result = check([root], CheckOptions(), keep_models=True)
    counts: Counter = Counter()
    different: list[str] = []
    for model in result.models:
        for rc in model.requests:
            rec = rc.recorded
            if not rec.loop_built or rc.step is None or not accepted(rec):
                continue
            origin = rec.extra.get("origin")
            rebuilt = model.rebuild_request(model.steps[rc.step], rec.log_length)
            counts[origin, "accepted"] += 1
            if rebuilt is not None and orjson.dumps(rebuilt.request) == orjson.dumps(rec.request):
                counts[origin, "identical"] += 1
            else:
                rel = Path(rec.file).resolve().relative_to(root.resolve().parent).as_posix()
                different.append(f"{rel}:{rec.line}")
    return counts, different


def test_seed_era_every_accepted_request_is_rebuilt_byte_identical():
    counts, different = byte_identity(corpus_dir("upstream-seed-era"))
    assert counts["loop", "accepted"] == 798 and different == []


def test_late_era_every_accepted_loop_request_is_rebuilt_byte_identical():
    counts, different = byte_identity(corpus_dir("upstream-late-era"))
    assert counts["loop", "accepted"] == counts["loop", "identical"] == 1161
    assert set(different) == HAND_BUILT_WITHOUT_PROVIDER


def test_replay_output_carries_the_recorded_bytes(capsys):
    """`inspector replay LOG` prints each step's request with the keys in the recorded order (provider last)."""
    from inspector.cli import main

    folder = corpus_dir("upstream-late-era/llm__llm-retry__transport-recovery/t01")
    assert main(["replay", str(folder / "wire-stream_disconnect.jsonl")]) == 0
    out = capsys.readouterr().out.encode()
    first = json.loads((folder / "requests.jsonl").read_text().splitlines()[0])
    assert list(first["request"])[-2:] == ["provider", "reasoningEffort"]
    assert b'"request":' + orjson.dumps(first["request"]) + b"}" in out


def test_replay_attempt_picks_a_retry_of_the_step(capsys):
    """A step retried twice (no retry events: the loop's own recovery after an error finish) has 3 attempts."""
    from inspector.cli import main

    log = corpus_dir("upstream-late-era/core__agent-loop__request-error/t01") / "request-error-retry.jsonl"
    recorded = [json.loads(x) for x in (log.parent / "requests.jsonl").read_text().splitlines()]
    assert [r["logLength"] for r in recorded] == [7, 8, 9]
    for k, rec in enumerate(recorded, 1):
        assert main(["replay", str(log), "--turn", "1", "--attempt", str(k)]) == 0
        assert json.loads(capsys.readouterr().out) == rec["request"]
    assert main(["replay", str(log), "--turn", "1"]) == 0
    assert "has 3 attempts; showing attempt 1" in capsys.readouterr().err
    assert main(["replay", str(log), "--turn", "1", "--attempt", "4"]) == 2
    assert "has 3 attempt(s)" in capsys.readouterr().err


def test_replay_attempt_follows_the_log_between_attempts(capsys):
    """Compaction ran between two attempts of one step: attempt 2 is derived from the compacted history."""
    from inspector.cli import main

    folder = corpus_dir("upstream-late-era/compaction__compaction-basic__compaction-loop-repro/t03")
    log = folder / "overflow-thrown.jsonl"
    recorded = [json.loads(x) for x in (folder / "requests.jsonl").read_text().splitlines()]
    retried = [r for r in recorded if (r["turn"], r["step"], r["origin"]) == (3, 1, "loop")]  # and a summarize call
    assert len(retried) == 2 and retried[0]["request"]["messages"] != retried[1]["request"]["messages"]
    for k, rec in enumerate(retried, 1):
        assert main(["replay", str(log), "--turn", "3", "--attempt", str(k)]) == 0
        assert json.loads(capsys.readouterr().out) == rec["request"]


if __name__ == "__main__":
    for era in ("upstream-seed-era", "upstream-late-era"):
        counts, different = byte_identity(corpus_dir(era))
        for origin in sorted({o for o, _ in counts}, key=str):
            print(
                f"{era:18} {str(origin):10} {counts[origin, 'identical']:5} of "
                f"{counts[origin, 'accepted']:5} byte-identical"
            )
        for d in different:
            print(f"  not identical: {d}")
