"""The query language people type, turned into an FTS5 expression that cannot fail.

    login test          both words (AND)
    "fix the login"     a phrase
    log*                a prefix
    -flaky              without this word (or -"a phrase")
    tool: npm  /  tool:npm
                        include tool inputs and outputs (outside the default scope)
    登录                a word of a script written without spaces: its characters in a row

Each term is looked for as typed and, beside that, stemmed (`tests` finds "test",
`reinstal` finds "reinstall": search/stem.py); the index says which way a hit matched.

Every user string reaches FTS5 only inside double quotes (quotes in it doubled), so a
hyphen, a colon, a bracket or a word like NEAR or OR is just text: no input gives a
syntax error. A term with no word characters in it ("---", "*") is dropped and said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .text import spaced, word_list


@dataclass(frozen=True)
class Term:
    text: str  # as typed, without quotes, minus or star
    words: tuple[str, ...]  # folded, as the index holds them
    phrase: bool = False
    prefix: bool = False
    negate: bool = False

    def fts(self) -> str:
        return '"' + spaced(self.text).replace('"', '""') + '"' + ("*" if self.prefix else "")

    def to_dict(self) -> dict:
        return {"text": self.text, "words": list(self.words), "phrase": self.phrase, "prefix": self.prefix}


@dataclass
class Query:
    text: str
    terms: list[Term] = field(default_factory=list)
    tool: bool = False  # `tool:` was typed: include tool pieces
    dropped: list[str] = field(default_factory=list)  # terms without a word to look for

    @property
    def positive(self) -> list[Term]:
        return [t for t in self.terms if not t.negate]

    @property
    def negative(self) -> list[Term]:
        return [t for t in self.terms if t.negate]

    def fts(self, columns: tuple[str, ...]) -> str | None:
        """The MATCH expression over `columns`, or None when nothing is looked for."""
        pos = self.positive
        if not pos:
            return None
        expr = " AND ".join(t.fts() for t in pos)
        neg = self.negative
        if neg:
            expr = f"({expr}) NOT ({' OR '.join(t.fts() for t in neg)})"
        return "{" + " ".join(columns) + "} : (" + expr + ")"


def _pieces(text: str) -> list[tuple[str, bool, bool, bool]]:
    """(text, phrase, prefix, negate) for each term, by a small scanner (a quote left
    open runs to the end)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        neg = False
        if c == "-" and i + 1 < n and not text[i + 1].isspace():
            neg = True
            i += 1
        if i < n and text[i] == '"':
            j = text.find('"', i + 1)
            j = n if j < 0 else j
            body = text[i + 1 : j]
            i = j + 1
            prefix = i < n and text[i] == "*"
            if prefix:
                i += 1
            out.append((body, True, prefix, neg))
            continue
        j = i
        while j < n and not text[j].isspace():
            j += 1
        word = text[i:j]
        i = j
        prefix = word.endswith("*")
        out.append((word.rstrip("*"), False, prefix, neg))
    return out


def parse(text: str) -> Query:
    q = Query(text=text)
    for body, phrase, prefix, neg in _pieces(text[:2000]):
        if not phrase and body.lower() == "tool:":
            q.tool = True
            continue
        if not phrase and body.lower().startswith("tool:"):
            q.tool = True
            body = body[5:]
        ws = tuple(word_list(body))
        if not ws:
            if body or prefix:
                q.dropped.append(("-" if neg else "") + body + ("*" if prefix else ""))
            continue
        q.terms.append(Term(body, ws, phrase=phrase or len(ws) > 1, prefix=prefix, negate=neg))
    return q


def matches(q: Query, words: list[str]) -> bool:
    """Whether a text (its folded words) matches `q`: the brute-force meaning of a query,
    for the tests and for checking an index against a scan."""

    def has(t: Term) -> bool:
        n = len(t.words)
        for i in range(len(words) - n + 1):
            if words[i : i + n - 1] == list(t.words[:-1]):
                last = words[i + n - 1]
                if last == t.words[-1] or (t.prefix and last.startswith(t.words[-1])):
                    return True
        return False

    pos = q.positive
    return bool(pos) and all(has(t) for t in pos) and not any(has(t) for t in q.negative)
