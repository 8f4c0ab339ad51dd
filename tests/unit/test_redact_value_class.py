"""Issue 34, item 10: redaction decides by what a value is, never by its key's name alone.

Over every content-bearing field of logs of both eras (message text, tool sources and schemas, arguments,
results, error messages and codes, the header's system prompt, capture requests), no original string of 12 or
more characters survives a redaction unless the redactor says why it kept it, and what it keeps is of a kept
value class.  Then the same logs with every string replaced by content (a sentence, a plugin's source): none
of it survives, whatever key it sits under (``code`` included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from invariants.reduce.logfile import read_log
from invariants.reduce.redact import ENUMERATED, KEEP_KEYS, Redactor
from tests.conftest import SAMPLES

SEED = sorted(p for p in SAMPLES.glob("*.jsonl") if not p.name.endswith(".requests.jsonl"))
LATE = sorted(p for p in (SAMPLES / "late").rglob("session.jsonl*") if "torn" not in p.parts)
SOURCE = (
    "function plugin(api) {\n  api.on('turn', async (ctx) => { return ctx.secret + ' from the plugin'; });\n}\n" * 5
)


def _strings(v: Any, key: str | None = None):
    """(key, string) of every string value (object keys are the log's structure and are kept)."""
    if isinstance(v, str):
        yield key, v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x, key)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _strings(x, k)


def _records(path: Path) -> list[Any]:
    log = read_log(path, None)
    return [log.header, *log.events, *log.captures]


def _hostile(v: Any, key: str | None = None, counter: list[int] | None = None) -> Any:
    """Every string leaf that is not an enumerated value becomes content: a plugin's source under ``code`` and
    ``plugin``, a sentence elsewhere (ids stay equal to themselves: one sentence per distinct string)."""
    counter = counter if counter is not None else [0]
    if isinstance(v, str):
        if v in ENUMERATED:
            return v
        counter[0] += 1
        return (
            SOURCE + str(counter[0])
            if key in ("code", "plugin", "source")
            else f"private words {v!r} number {counter[0]}"
        )
    if isinstance(v, list):
        return [_hostile(x, key, counter) for x in v]
    if isinstance(v, dict):
        return {k: _hostile(x, k, counter) for k, x in v.items()}
    return v


@pytest.mark.parametrize("path", SEED + LATE, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_no_original_string_of_12_or_more_characters_survives_outside_kept(path):
    records = _records(path)
    r = Redactor()
    out = json.dumps([r.value(x) for x in records], ensure_ascii=False)
    survived = {s for _, s in _strings(records) if len(s) >= 12 and s in out and s not in r.kept}
    assert not survived, sorted(survived)[:5]
    for s, why in r.kept.items():  # every kept value is of a kept class, and says why
        assert s in ENUMERATED or KEEP_KEYS[why.split(":")[0]][0](s), (s, why)


@pytest.mark.parametrize("path", SEED + LATE, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_content_under_any_key_is_redacted(path):
    records = _hostile(_records(path))
    records.append({"type": "tool/result", "data": {"error": {"name": "E", "code": SOURCE}, "code": SOURCE}})
    r = Redactor()
    out = json.dumps([r.value(x) for x in records], ensure_ascii=False)
    assert "private" not in out and "secret" not in out and "plugin(api)" not in out
    assert not [s for s in r.kept if len(s) >= 12 and s not in ENUMERATED]


def test_error_codes_and_identifiers_are_kept_as_what_they_are():
    r = Redactor()
    ev = {"error": {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}, "model": "deepseek-v4-flash"}
    assert r.value(ev)["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert r.value(ev)["model"] == "deepseek-v4-flash"
    assert r.value({"code": "RATE_LIMITED"})["code"] == "RATE_LIMITED"  # an error code's form
    assert r.value({"code": "print('hello world')"})["code"] != "print('hello world')"
    assert r.value({"model": "a model with spaces in it"})["model"] != "a model with spaces in it"
    assert r.value({"type": "Some Sentence Here"})["type"] != "Some Sentence Here"
