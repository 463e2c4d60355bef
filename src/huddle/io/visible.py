"""Text from agents' files on its way to a terminal: the one sanitiser.

A session title, an agent's name, a command, a folder: any of them may hold bytes a
terminal obeys rather than shows (an OSC 52 write to the clipboard, a screen clear,
an OSC 8 hyperlink, a cursor move, an 8-bit CSI, a right-to-left override that makes
`txt.exe` read `exe.txt`). Every one is written as a visible escape (`\\x1b`, `\\x9b`,
`\\u202e`), so what is on the screen is what is in the file, and the terminal obeys
only huddle's own styles. Standard library only (the status line prints through it).
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls; the Arabic letter mark, the left-to-right and
# right-to-left marks, the line and paragraph separators and the bidi embeddings,
# overrides and isolates (text that reorders what follows it on the line)
_MARKS = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_ONE_LINE = re.compile(f"[\x00-\x1f{_MARKS}]")
_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_MARKS}]")  # newline and tab kept
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\x1b"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def visible(text: object, lines: bool = False) -> str:
    """`text` with every control character and escape sequence shown, not obeyed. One
    line unless `lines` (then newlines and tabs stay as they are)."""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.isprintable():
        return s  # (the common case: nothing to look for)
    return (_LINES if lines else _ONE_LINE).sub(_escape, s)
