"""Structure-preserving pseudonymisation: one mapping for a whole repro, so equal strings stay equal and
different ones stay different; words keep their lengths, a system prompt keeps its lines, a path its slashes,
JSON inside a string is redacted inside.  Values the rules read (types, roles, ops, models, providers...) stay."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from invariants.rules import values as vocabulary

# Values under these keys are read by the rules or the replay, so they stay verbatim.
KEEP_KEYS = {
    "type": "event and content types drive the replay",
    "role": "message roles are compared",
    "op": "surface ops drive the replay",
    "surfaceOp": "surface ops drive the replay",
    "kind": "trigger and source kinds drive the contract rules",
    "reason": "header reasons are checked",
    "blockType": "chunk block types drive the stream rules",
    "model": "the model is compared as a call setting",
    "provider": "the provider is compared as a call setting",
    "finishReason": "finish reasons drive the step rules",
    "reasoningEffort": "a call setting that is compared",
    "plugin": "the compaction user message is recognised by its plugin",
    "code": "error codes exempt results from pairing",
    "origin": "the header origin is checked (HEAD accepts only subagent)",
}
# Values of the enumerations the contract rules check (chunk types, finish and turn-end kinds, inbox targets...):
# kept under any key, so a redacted log raises no value finding the original did not have.
ENUMERATED = frozenset().union(
    *(v for v in vars(vocabulary).values() if isinstance(v, frozenset) and all(isinstance(x, str) for x in v))
)
_WORD = re.compile(r"\w+", re.UNICODE)
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


class Redactor:
    def __init__(self, salt: str = "inspector-reduce") -> None:
        self.salt = salt
        self.mapping: dict[str, str] = {}
        self._taken: dict[str, str] = {}
        self.kept: dict[str, str] = {}  # verbatim string -> why

    def _word(self, word: str) -> str:
        if word.isdigit():
            return word
        digest = hashlib.sha256((self.salt + word).encode()).digest()
        return "".join(_ALPHABET[digest[k % len(digest)] % 26] for k in range(len(word)))

    def text(self, s: str) -> str:
        if s in self.mapping:
            return self.mapping[s]
        if s.startswith("/"):
            out = "/".join(self.text(part) if part else part for part in s.split("/"))
        elif "\n" in s:
            out = "\n".join(self.text(line) if line else line for line in s.split("\n"))
        else:
            out = _WORD.sub(lambda m: self._word(m.group()), s)
        while out in self._taken and self._taken[out] != s:
            out += "x"
        self._taken[out] = s
        self.mapping[s] = out
        return out

    def string(self, s: str, key: str | None) -> str:
        if key in KEEP_KEYS:
            if s:
                self.kept.setdefault(s, f"{key}: {KEEP_KEYS[key]}")
            return s
        if s in ENUMERATED:
            self.kept.setdefault(s, "an enumerated value the contract rules check")
            return s
        stripped = s.strip()
        if stripped[:1] in ("{", "[") and len(stripped) > 1:
            try:
                inner = json.loads(s)
            except ValueError:
                inner = None
            if isinstance(inner, (dict, list)):
                return json.dumps(self.value(inner), ensure_ascii=False)
        return self.text(s)

    def value(self, v: Any, key: str | None = None) -> Any:
        if isinstance(v, str):
            return self.string(v, key)
        if isinstance(v, list):
            return [self.value(x, key) for x in v]
        if isinstance(v, dict):
            return {k: self.value(x, k) for k, x in v.items()}
        return v
