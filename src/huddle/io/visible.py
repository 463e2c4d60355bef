"""Text from agents' files on its way to a terminal: the one sanitiser.

A session title, an agent's name, a command, a folder: any of them may hold bytes a
terminal obeys rather than shows (an OSC 52 write to the clipboard, a screen clear,
an OSC 8 hyperlink, a cursor move, an 8-bit CSI, a right-to-left override that makes
`txt.exe` read `exe.txt`). Every one is written as a visible escape (`\\x1b`, `\\x9b`,
`\\u202e`), so what is on the screen is what is in the file, and the terminal obeys
only huddle's own styles. Standard library only (the status line prints through it).
"""

from __future__ import annotations

# C0 controls, DEL, C1 controls; the Arabic letter mark, the left-to-right and
# right-to-left marks, the line and paragraph separators and the bidi embeddings,
# overrides and isolates (text that reorders what follows it on the line)
_MARKS = [*range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x2028, 0x202F), *range(0x2066, 0x206A)]
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\x1b"}


def _escape(n: int) -> str:
    named = _NAMED.get(chr(n))
    if named is not None:
        return named
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


# (str.translate, not re: the status line prints through this and re costs it ~3 ms)
_ONE_LINE = {n: _escape(n) for n in [*range(0x20), *_MARKS]}
_LINES = {n: e for n, e in _ONE_LINE.items() if n not in (0x0A, 0x09)}  # newline and tab kept


def visible(text: object, lines: bool = False) -> str:
    """`text` with every control character and escape sequence shown, not obeyed. One
    line unless `lines` (then newlines and tabs stay as they are)."""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.isprintable():
        return s  # (the common case: nothing to look for)
    return s.translate(_LINES if lines else _ONE_LINE)
