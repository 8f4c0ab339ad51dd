"""Structure-preserving pseudonymisation: one mapping for a whole repro, so equal strings stay equal and
different ones stay different; words keep their lengths, a system prompt keeps its lines, a path its slashes,
JSON inside a string is redacted inside.  Values the rules read (types, roles, ops, models, providers, error
codes...) stay, each only when it is a value of its class (see ``KEEP_KEYS``): redaction is by what a value
is, never by its key's name alone, so content under a key like ``code`` is redacted like any other."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from invariants.rules import values as vocabulary
from invariants.rules.contract import HEAD_LEGACY_REFUSED, HEAD_MIGRATED_TYPES, KNOWN_SESSION_EVENT_TYPES

# Redaction decides by what a value is, never by its key alone: a string is kept verbatim only when it is
#  - a value of an enumeration the replay or the contract rules read (event, content and chunk types, roles,
#    finish and turn-end kinds, trigger and source kinds, the crash-repair error codes...), under any key; or
#  - under one of the keys below, of that key's value class: an enumeration-like token (a slug: lowercase
#    words joined by - _ / . or :), an identifier (a model or provider name: no space, at most 64 characters)
#    or an error code (UPPER_SNAKE, at most 48 characters).
# Anything else under those keys (a sentence, a plugin's source, a long blob) is content and is redacted.
_SLUG = re.compile(r"[a-z][a-z0-9]*(?:[-_/.:][a-z0-9]+)*\Z")
_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*\Z")
_ERROR_CODE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\Z")


def _slug(s: str) -> bool:
    return len(s) <= 48 and _SLUG.match(s) is not None


def _ident(s: str) -> bool:
    return len(s) <= 64 and _IDENT.match(s) is not None


def _error_code(s: str) -> bool:
    return len(s) <= 48 and _ERROR_CODE.match(s) is not None


KEEP_KEYS = {
    "type": (_slug, "event and content types drive the replay"),
    "role": (_slug, "message roles are compared"),
    "op": (_slug, "surface ops drive the replay"),
    "surfaceOp": (_slug, "surface ops drive the replay"),
    "kind": (_slug, "trigger and source kinds drive the contract rules"),
    "reason": (_slug, "header reasons are checked"),
    "blockType": (_slug, "chunk block types drive the stream rules"),
    "finishReason": (_slug, "finish reasons drive the step rules"),
    "reasoningEffort": (_slug, "a call setting that is compared"),
    "origin": (_slug, "the header origin is checked (HEAD accepts only subagent)"),
    "model": (_ident, "the model is compared as a call setting"),
    "provider": (_ident, "the provider is compared as a call setting"),
    "plugin": (_ident, "the compaction user message is recognised by its plugin"),
    "code": (_error_code, "an error code (crash-repair results are exempt from pairing by it)"),
}
# Error codes the harness writes that the rules read (LOG-FORMAT.md: crash repair; the provider's failure codes).
ERROR_CODES = frozenset({"interrupted", "TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN", "CONTEXT_WINDOW_EXCEEDED"})
# Values of the enumerations the contract rules check (chunk types, finish and turn-end kinds, inbox targets...),
# the event types and the error codes: kept under any key, so a redacted log raises no value finding the
# original did not have.
ENUMERATED = (
    frozenset().union(
        *(v for v in vars(vocabulary).values() if isinstance(v, frozenset) and all(isinstance(x, str) for x in v))
    )
    | KNOWN_SESSION_EVENT_TYPES
    | HEAD_MIGRATED_TYPES
    | HEAD_LEGACY_REFUSED
    | ERROR_CODES
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
        rule = KEEP_KEYS.get(key) if key is not None else None
        if rule is not None and s and s not in ENUMERATED and rule[0](s):
            self.kept.setdefault(s, f"{key}: {rule[1]}")
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
