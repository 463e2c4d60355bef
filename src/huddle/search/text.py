"""What each event puts into the search index, and how text is cut into words.

The index has one column per kind group (what `--kind` names): `prompt` (the human's
words and a lead's orders to its sub-agents), `say` (replies, reports, questions to
the human, errors), `think` (reasoning) and `tool` (tool inputs and outputs: indexed,
but outside the default scope). Long texts and tool pieces are read back from the
agent's file (the event keeps only a capped text); base64 runs are never indexed.

`words()` cuts text the way SQLite's unicode61 tokenizer does (letters, digits and
private-use characters are word characters; case and diacritics folded), so the
highlights a page draws and the brute-force check in the tests agree with the index.
Chinese and Japanese characters (and Korean syllables) are words of their own
(`spaced()` sets them apart before the tokenizer sees them): a word of theirs is
looked for as a phrase of characters.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

from huddle.model import events as ev
from huddle.model.events import Event

COLUMNS = ("prompt", "say", "think", "tool")
DEFAULT_SCOPE = ("prompt", "say", "think")
KIND_GROUP: dict[str, str] = {
    ev.PROMPT: "prompt",
    ev.ORDER: "prompt",
    ev.SAY: "say",
    ev.REPORT: "say",
    ev.WAITING: "say",
    ev.ERROR: "say",
    ev.THINK: "think",
    ev.TOOL_CALL: "tool",
    ev.TOOL_RESULT: "tool",
}
KIND_CODE = {k: i for i, k in enumerate(sorted(KIND_GROUP))}  # the kind as a small integer in the index
CODE_KIND = {i: k for k, i in KIND_CODE.items()}
TOOL_MAX = 256 << 10  # characters of one tool input or output that are indexed (the head)
TEXT_MAX = 1 << 20  # ... of one text

# Runs of the base64 alphabet this long are data (images, archives, keys), not words.
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{100,}={0,2}")
# Whether a text holds such a run at all, told in C: its UTF-8 with each byte of the
# alphabet made "a" and any other a space (a byte of a multi-byte character is none of
# the alphabet). Few texts hold one, and the pattern alone reads ~60 MB/s: a first
# index build of a long history spent ~3 s of its 31 in it.
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_RUNS = bytes(0x61 if i in _ALPHABET else 0x20 for i in range(256))
_RUN = b"a" * 100


def indexed(e: Event) -> bool:
    return e.kind in KIND_GROUP and e.offset >= 0 and e.length > 0 and not e.copied


def needs_record(e: Event) -> bool:
    """The event's own fields do not hold all its text: its record must be read back."""
    return e.kind in (ev.TOOL_CALL, ev.TOOL_RESULT) or e.truncated


def strip_base64(s: str) -> str:
    if len(s) < 100 or _RUN not in s.encode("utf-8", "surrogatepass").translate(_RUNS):
        return s
    return _BASE64.sub(" ", s)


def string_values(value: object, out: list[str], depth: int = 0, limit: int = 5000) -> list[str]:
    """The string (and number) values of a decoded record or tool input, depth first;
    keys are the format's words, not the user's, and stay out."""
    if depth > 40 or len(out) >= limit:
        return out
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            string_values(v, out, depth + 1, limit)
    elif isinstance(value, list):
        for v in value:
            string_values(v, out, depth + 1, limit)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append(str(value))
    return out


def event_text(e: Event, piece: dict | None = None) -> str:
    """The text the index holds for `e`. `piece` is its record read back
    (`huddle.model.pieces.piece`) when `needs_record(e)`."""
    k = e.kind
    if k == ev.TOOL_CALL:
        parts = [e.name]
        if piece is not None and "input" in piece:
            string_values(piece["input"], parts)
        elif e.detail:
            parts.append(e.detail)
        text = "\n".join(p for p in parts if p)
        limit = TOOL_MAX
    elif k == ev.TOOL_RESULT:
        text = str(piece.get("text") or "") if piece is not None else ""
        limit = TOOL_MAX
    else:
        text = e.text
        if e.truncated and piece is not None and isinstance(piece.get("text"), str):
            text = piece["text"]
        if k == ev.WAITING and not text:
            text = e.detail or e.name
        elif k == ev.ORDER and e.detail and e.detail not in text:
            text = e.detail + "\n" + text
        limit = TEXT_MAX
    return spaced(strip_base64(text[:limit]))


# -- words, as unicode61 cuts them ----------------------------------------------------------


def fold(word: str) -> str:
    """Lower case without diacritics (unicode61 remove_diacritics 2, for the scripts people type)."""
    w = word.lower()
    if w.isascii():
        return w
    if _HANGUL.search(w):  # (a syllable stays one character, as SQLite keeps it: NFD would take it apart)
        return "".join(c if _HANGUL.match(c) else fold(c) for c in w)
    return "".join(c for c in unicodedata.normalize("NFD", w) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=8192)
def fold_char(c: str) -> str:
    """One character folded to one character (positions stay where they were)."""
    f = fold(c)
    return f[0] if f else c


def _word_char(c: str) -> bool:
    return c.isalnum() or (not c.isascii() and unicodedata.category(c) == "Co")


# Scripts written without spaces between words (Chinese, Japanese) and Korean's syllables
# (its words carry their particles): each character is a word of its own, so a word of
# any length is found as a phrase of characters inside a run ("登录" in "修复登录错误").
ALONE = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_ALONE = re.compile(f"[{ALONE}]")
_HANGUL = re.compile("[\uac00-\ud7a3]")
_ALONE_RUN = re.compile(f"([{ALONE}])")


def alone(c: str) -> bool:
    """Whether `c` is a word by itself (see ALONE)."""
    return not c.isascii() and _ALONE.match(c) is not None


def spaced(text: str) -> str:
    """The text as the index takes it: each ALONE character set apart by spaces (SQLite's
    unicode61 tokenizer would take a whole run of them for one word)."""
    if text.isascii() or not _ALONE.search(text):
        return text
    return _ALONE_RUN.sub(r" \1 ", text)


def words(text: str) -> Iterator[tuple[str, int, int]]:
    """(folded word, start, end) for every word of `text` (an ALONE character is one)."""
    start = -1
    for i, c in enumerate(text):
        if _word_char(c):
            if not c.isascii() and alone(c):
                if start >= 0:
                    yield fold(text[start:i]), start, i
                    start = -1
                yield fold(c), i, i + 1
            elif start < 0:
                start = i
        elif start >= 0:
            yield fold(text[start:i]), start, i
            start = -1
    if start >= 0:
        yield fold(text[start:]), start, len(text)


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def word_list(text: str) -> list[str]:
    """Only the folded words (a fast path for ASCII text)."""
    if text.isascii():
        return [m.group(0).lower() for m in _ASCII_WORD.finditer(text)]
    return [w for w, _, _ in words(text)]
