"""Secrets out of text before it leaves the machine (exports, telemetry with content).

A table of rules. Each rule's expression starts with a literal (`ghp_`, `AKIA`,
`-----BEGIN`, `password`...), so the regex engine skips through text at memchr
speed and tries a match only where that literal stands; the context rules
(`password: ...`, `Authorization: Bearer ...`) run on a lowered copy, so they stay
literal-led while matching any case. A small check per rule looks at the match
(a boundary, a name, "looks generated") before anything is replaced. Rules err on
the side of replacing: a false hit costs a word of a shared transcript, a miss a
credential.

    r = Redactor()                        # the built-in rules
    r = Redactor(user_patterns(path))     # plus a user's own, one regex per line
    clean = r.text(s)                     # or r.value(obj): every string of a JSON-like value
    r.replaced, r.counts                  # how many, by rule

A secret becomes `[REDACTED:<rule>]`; where a rule knows which part of a match is
the secret (the value of `API_KEY=...`, a URL's password) only that part goes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .rules import RULES, Rule

__all__ = ["MARK", "RULES", "RedactFileError", "Redactor", "Rule", "redact", "strings_of", "user_patterns"]

from huddle.errors import InputError

MARK = "[REDACTED:{}]"
SHORTEST = 8  # no secret the rules know is shorter: shorter strings are passed over
_SEP = "\x00\n"  # joins many strings into one text for one pass (no built-in pattern crosses \x00)

# -- user patterns ---------------------------------------------------------------------------


class RedactFileError(InputError, ValueError):
    """A user pattern file that cannot be used: one line naming the file and the line."""


def user_patterns(path: str) -> list[re.Pattern[str]]:
    """A user's own patterns: one regular expression per line; blank lines and lines
    starting with # are skipped. A pattern with a group replaces only its first group."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise RedactFileError(f"{path}: cannot read the pattern file ({exc})") from None
    out = []
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            p = re.compile(s)
        except re.error as exc:
            raise RedactFileError(f"{path}:{n}: not a regular expression ({exc})") from None
        if p.search(""):
            raise RedactFileError(f"{path}:{n}: the pattern matches empty text")
        out.append(p)
    return out


# -- the redactor ------------------------------------------------------------------------------


def _lowered(s: str) -> str:
    """A lower-case copy with the same positions (non-ASCII characters become '?',
    which no secret contains)."""
    if not s.isascii():
        s = s.encode("ascii", "replace").decode("ascii")
    return s.lower()


class Redactor:
    """Replaces secrets, counting what it replaced over every call."""

    def __init__(self, extra: Iterable[re.Pattern[str]] = (), rules: Sequence[Rule] = RULES):
        self.rules = tuple(rules)
        self.user = tuple(Rule("user-pattern", p, group=1 if p.groups else 0) for p in extra)
        self.counts: dict[str, int] = {}
        self.seen: set[str] = set()  # the secrets replaced so far (in memory only), for cut_tail

    @property
    def replaced(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> dict[str, object]:
        return {"replaced": self.replaced, "by_rule": dict(sorted(self.counts.items()))}

    def text(self, s: str) -> str:
        """`s` with every secret replaced."""
        if len(s) < SHORTEST:
            return s
        out = self._apply(s, self._spans(s, self.rules))
        if self.user:
            out = self._apply(out, self._spans(out, self.user))
        return out

    def value(self, v: object, in_place: bool = False) -> object:
        """Every string of a JSON-like value (dict keys too), redacted: a new value, or
        `v` itself changed where it must be (`in_place`, for data just built). Each
        distinct string goes through the rules once, all of them joined in one pass;
        then a string cut short by a summary loses a last word that begins a secret
        (see `cut_tail`). Counts are of places, so a secret said twice counts twice."""
        strings = strings_of(v, [])
        if not strings:
            return v
        seen_n: dict[str, int] = {}
        for x in strings:
            seen_n[x] = seen_n.get(x, 0) + 1
        uniq = list(seen_n)
        changed: dict[str, str] = {}
        for a, b in zip(uniq, self.texts(uniq)):
            if b.endswith(("…", "...")):
                b = self.cut_tail(b)
            if b != a:
                changed[a] = b
                extra = seen_n[a] - 1
                if extra:
                    for name in _MARKS.findall(b):
                        self.counts[name] = self.counts.get(name, 0) + extra
        if not changed:
            return v
        return _replace(v, changed) if in_place else _rebuild_with(v, changed)

    def cut_tail(self, s: str) -> str:
        return _cut_tail(self, s) if s.endswith(("…", "...")) else s

    def texts(self, strings: list[str]) -> list[str]:
        """Many strings at once: joined, so the cost per string is a few bytes, not a pass."""
        todo = [i for i, s in enumerate(strings) if len(s) >= SHORTEST and "\x00" not in s]
        out = list(strings)
        if todo:
            joined = _SEP.join(strings[i] for i in todo)
            clean = self._apply(joined, self._spans(joined, self.rules))
            parts = clean.split(_SEP)
            if len(parts) != len(todo):  # cannot happen with the built-in rules; stay safe anyway
                parts = [self._apply(strings[i], self._spans(strings[i], self.rules)) for i in todo]
            for i, p in zip(todo, parts):
                out[i] = p
        for i, s in enumerate(out):
            if "\x00" in s and len(s) >= SHORTEST:
                out[i] = self._apply(s, self._spans(s, self.rules))
            if self.user and len(out[i]) >= 1:
                out[i] = self._apply(out[i], self._spans(out[i], self.user))
        return out

    def _spans(self, s: str, rules: Sequence[Rule]) -> list[tuple[int, int, str]]:
        low: str | None = None
        spans: list[tuple[int, int, str]] = []
        for rule in rules:
            if rule.lower:
                if low is None:
                    low = _lowered(s)
                hay = low
            else:
                hay = s
            g = rule.group
            for m in rule.pattern.finditer(hay):
                if rule.check is not None:
                    got = rule.check(m, g)
                    if got is None:
                        continue
                    a, b = got
                else:
                    a, b = m.start(g), m.end(g)
                if b > a:
                    spans.append((a, b, rule.name))
        return spans

    def _apply(self, s: str, spans: list[tuple[int, int, str]]) -> str:
        if not spans:
            return s
        spans.sort(key=lambda x: (x[0], -x[1]))
        pieces: list[str] = []
        pos = 0
        cur_a, cur_b, cur_name = spans[0]
        merged: list[tuple[int, int, str]] = []
        for a, b, name in spans[1:]:
            if a < cur_b:  # overlapping: one replacement, named by the first rule that saw it
                cur_b = max(cur_b, b)
                continue
            merged.append((cur_a, cur_b, cur_name))
            cur_a, cur_b, cur_name = a, b, name
        merged.append((cur_a, cur_b, cur_name))
        for a, b, name in merged:
            if "\x00" in s[a:b]:
                continue  # never across two joined strings
            pieces.append(s[pos:a])
            pieces.append(MARK.format(name))
            if b - a >= 6:
                self.seen.add(s[a:b])
            pos = b
            self.counts[name] = self.counts.get(name, 0) + 1
        pieces.append(s[pos:])
        return "".join(pieces)


_TAIL = re.compile(r"([^\s\"'`=:,;(){}\[\]<>]{4,})(…|\.\.\.)$")


def _cut_tail(r: Redactor, s: str) -> str:
    """A summary cut short (ending in an ellipsis) may end in the first part of a
    secret, too short for any rule: its last word goes when it starts a secret seen
    whole elsewhere, or looks generated (long, with digits and letters)."""
    m = _TAIL.search(s)
    if m is None:
        return s
    word = m.group(1)
    known = any(sec.startswith(word) for sec in r.seen)
    generated = len(word) >= 12 and any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
    if not (known or generated) or word.startswith("[REDACTED"):
        return s
    r.counts["cut-secret"] = r.counts.get("cut-secret", 0) + 1
    return s[: m.start(1)] + MARK.format("cut-secret") + m.group(2)


def strings_of(v: object, out: list[str]) -> list[str]:
    """Every string of a JSON-like value, dict keys included, depth first (into `out`)."""
    t = type(v)
    if t is str:
        out.append(v)  # type: ignore[arg-type]
    elif t is dict:
        _dict_strings(v, out)  # type: ignore[arg-type]
    elif t is list or t is tuple:
        _items_strings(v, out)  # type: ignore[arg-type]
    elif isinstance(v, str):  # a str subclass
        out.append(str(v))
    elif isinstance(v, dict):
        strings_of(dict(v), out)
    elif isinstance(v, (list, tuple)):
        strings_of(list(v), out)
    return out


def _dict_strings(d: dict[Any, Any], out: list[str]) -> None:
    for k, x in d.items():
        if type(k) is str:
            out.append(k)
        tx = type(x)
        if tx is str:
            out.append(x)
        elif tx is dict or tx is list or tx is tuple:
            strings_of(x, out)


def _items_strings(items: list[Any] | tuple[Any, ...], out: list[str]) -> None:
    for x in items:
        tx = type(x)
        if tx is str:
            out.append(x)
        elif tx is dict or tx is list or tx is tuple:
            strings_of(x, out)


_MARKS = re.compile(r"\[REDACTED:([a-z-]+)\]")


def _rebuild_with(v: object, changed: dict[str, str]) -> object:
    """A copy of `v` with the strings in `changed` replaced."""
    if isinstance(v, str):
        return changed.get(v, v)
    if isinstance(v, dict):
        return {(changed.get(k, k) if isinstance(k, str) else k): _rebuild_with(x, changed) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_rebuild_with(x, changed) for x in v]
    return v


def _replace(v: object, changed: dict[str, str]) -> object:
    """`v` with the strings in `changed` replaced where they stand (containers kept)."""
    t = type(v)
    if t is str:
        return changed.get(v, v)  # type: ignore[call-overload]
    if t is dict:
        return _replace_in_dict(v, changed)  # type: ignore[arg-type]
    if t is list:
        return _replace_in_list(v, changed)  # type: ignore[arg-type]
    return _rebuild_with(v, changed)


def _replace_in_dict(d: dict[Any, Any], changed: dict[str, str]) -> dict[Any, Any]:
    if any(type(k) is str and k in changed for k in d):
        items = list(d.items())
        d.clear()
        for k, x in items:
            d[changed.get(k, k) if type(k) is str else k] = x
    for k, x in d.items():
        tx = type(x)
        if tx is str:
            if x in changed:
                d[k] = changed[x]
        elif tx is dict or tx is list:
            _replace(x, changed)
        elif tx is tuple:
            d[k] = _replace(list(x), changed)
    return d


def _replace_in_list(lst: list[Any], changed: dict[str, str]) -> list[Any]:
    for i, x in enumerate(lst):
        tx = type(x)
        if tx is str:
            if x in changed:
                lst[i] = changed[x]
        elif tx is dict or tx is list:
            _replace(x, changed)
        elif tx is tuple:
            lst[i] = _replace(list(x), changed)
    return lst


def redact(text: str) -> tuple[str, int]:
    """One text through the built-in rules: (clean text, how many were replaced)."""
    r = Redactor()
    return r.text(text), r.replaced
