"""Text made safe for the report's HTML and SVG: markup escaped, control characters visible.

Model text is hostile input: an ESC or NUL byte passed through raw is invisible in a browser
(and NUL is not even allowed in XML, so an SVG holding one breaks), a lone surrogate cannot be
written as UTF-8, and bidi overrides reorder what a reader sees. Each is shown as a visible
stand-in instead: C0 controls and DEL as their Unicode control pictures (ESC as U+241B "␛"),
the rest as ``\\xNN`` / ``\\uNNNN`` escapes. Newlines and tabs stay: they are layout.
"""

from __future__ import annotations

import html
import re

__all__ = ["escape", "visible"]

# C0 controls but tab and newline (CR too: a Windows line end renders as one), DEL, C1
# controls, lone surrogates, and the bidi embeddings, overrides and isolates
_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff"
                     "\u202a-\u202e\u2066-\u2069]")


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures block: U+2400 NUL .. U+241F US
    if code == 0x7F:
        return "\u2421"  # DEL
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every hidden character replaced by a visible stand-in."""
    return _HIDDEN.sub(_stand_in, text)


def escape(value: object) -> str:
    """``str(value)`` as HTML/SVG text or attribute value: visible, then markup-escaped."""
    return html.escape(visible(str(value)), quote=True)
