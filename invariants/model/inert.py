"""Make untrusted log text safe to print.

Log content may hold terminal escape sequences (a CSI that clears the
screen, an OSC 52 clipboard write, a bell), bidirectional overrides that make
a terminal show text in another order than it is (U+202E, "Trojan Source"),
or lone surrogates that break encoders.  Everything we print from a log goes through :func:`inert`, which
shows every control character as a visible escape.  Markup safety (Rich,
Textual) is the renderer's job: it must treat this text as plain text.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(m: re.Match) -> str:
    c = m.group()
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def inert(text: str, keep_newlines: bool = False) -> str:
    """Replace control characters (and, unless kept, newlines/tabs) by visible escapes."""
    out = _CONTROL.sub(_escape, text)
    if not keep_newlines:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    return out
