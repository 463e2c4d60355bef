"""What a translation must never touch: code, commands, paths, links.

`shield(text)` puts each such piece aside behind a marker (⟦1⟧, ⟦2⟧, ...) that the
model is told to keep; `unshield(translated, pieces)` puts them back, and says None
when a marker went missing or doubled (the original is shown then, never a mangled
command). A text with nothing but such pieces is not sent at all (`worth`).
"""

from __future__ import annotations

import re

_PIECES = re.compile(
    r"```.*?(?:```|$)"  # a fenced block, to its end (or the text's)
    r"|`[^`\n]+`"  # inline code
    r"|\bhttps?://[^\s)>\]]+"  # a link
    r"|(?m:^[ \t]*\$ [^\n]*)"  # a command line ("$ make test")
    r"|(?m:^(?: {4}|\t)[^\n]*)"  # an indented code line
    r"|(?<![\w/.])(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?"  # a path (/etc/hosts, ./src/app.py, ~/x)
    r"|\b[\w.-]+\.(?:py|js|ts|tsx|jsx|json|md|toml|yaml|yml|rs|go|java|c|h|cpp|sh|txt|html|css|lock|cfg|ini)\b"
    r"|\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\(\)"  # a call: fn(), obj.method()
    r"|(?<![\w-])--?[A-Za-z][\w-]*",  # an option (--translate, -p)
    re.S,
)
_MARK = re.compile(r"⟦(\d+)⟧")
_WORD = re.compile(r"[^\W\d_]{2,}")


def shield(text: str) -> tuple[str, list[str]]:
    pieces: list[str] = []

    def put(m: re.Match[str]) -> str:
        pieces.append(m.group(0))
        return f"⟦{len(pieces)}⟧"

    return _PIECES.sub(put, _MARK.sub(lambda m: m.group(0).replace("⟦", "⟦\u2060"), text)), pieces


def unshield(text: str, pieces: list[str]) -> str | None:
    found = [int(n) for n in _MARK.findall(text)]
    if sorted(found) != list(range(1, len(pieces) + 1)):
        return None
    return _MARK.sub(lambda m: pieces[int(m.group(1)) - 1], text).replace("⟦\u2060", "⟦")


def worth(shielded: str) -> bool:
    """Whether any words are left to translate once the pieces are set aside."""
    return bool(_WORD.search(_MARK.sub(" ", shielded)))
