"""A Copilot CLI session's `workspace.yaml`: its folder, and its name.

The CLI rewrites the file in place as the session changes: it is read again whenever its
stamp moves (a read that does not parse keeps what the last good one said). Only the
top-level scalars are read, by a small reader of the YAML the CLI writes (`key: value`,
quoted either way, folded or literal blocks), never by a general YAML parser.

The name is a title when the user gave it (`--name`, `/rename`: `user_named: true`); with
`user_named: false` it is the first prompt as typed (no title: the board says the prompt
anyway), unless it says something else: a name the CLI generated (a summary).
"""

from __future__ import annotations

import json
import re

from huddle.io import safefile
from huddle.model.events import one_line

CAP = 256 << 10  # a workspace.yaml is a few hundred bytes
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?:[ \t]+(.*))?$")
_ELLIPSIS = ("...", "…")


def parse(text: str) -> dict[str, object]:
    """Top-level `key: scalar` pairs (strings, booleans, numbers, nulls)."""
    out: dict[str, object] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _KEY.match(lines[i])
        i += 1
        if m is None:
            continue
        key, raw = m.group(1), (m.group(2) or "").rstrip()
        more = []  # the value's continuation lines (indented)
        while i < len(lines) and (lines[i][:1] in (" ", "\t") or not lines[i].strip()):
            more.append(lines[i])
            i += 1
        while more and not more[-1].strip():
            more.pop()
        out[key] = _value(raw, more)
    return out


def _value(raw: str, more: list[str]) -> object:
    if raw[:1] in (">", "|"):  # a block: folded (joined by spaces) or literal (by newlines)
        body = [ln.strip() for ln in more]
        return (" " if raw[0] == ">" else "\n").join(body)
    if raw[:1] == "'":
        s = " ".join([raw, *(ln.strip() for ln in more)])
        end = _closing(s)
        return s[1:end].replace("''", "'")
    if raw[:1] == '"':
        s = " ".join([raw, *(ln.strip() for ln in more)])
        try:
            return json.loads(s[: s.rfind('"') + 1])
        except ValueError:
            return s.strip('"')
    s = " ".join([raw, *(ln.strip() for ln in more)]).strip()
    if " #" in s:
        s = s.split(" #", 1)[0].rstrip()
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~", ""):
        return None
    if re.fullmatch(r"-?[0-9]+", s):
        return int(s)
    return s


def _closing(s: str) -> int:
    """Where a single-quoted scalar ends ('' is an escaped quote)."""
    i = 1
    while i < len(s):
        if s[i] == "'":
            if s[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    return len(s)


class Workspace:
    """One `workspace.yaml`, read again when its stamp moves."""

    def __init__(self, path: str):
        self.path = path
        self.stamp: tuple[int, int, int, int] | None = None
        self.fields: dict[str, object] = {}

    def refresh(self) -> bool:
        """Read it again if it changed; whether what it says changed."""
        st = safefile.stamp(self.path)
        if st == self.stamp:
            return False
        self.stamp = st
        if st is None:
            changed = bool(self.fields)
            self.fields = {}
            return changed
        try:
            text = safefile.read_small(self.path, CAP).decode("utf-8", "replace")
        except OSError as exc:  # a FIFO, a symlink out, mode 000: a note until it reads (missing: none)
            safefile.remember(self.path, exc, CAP)
            return False
        safefile.forget(self.path)
        got = parse(text)
        if got == self.fields:
            return False
        self.fields = got
        return True

    def text(self, key: str) -> str:
        v = self.fields.get(key)
        return v if isinstance(v, str) else ""

    def titles(self, first_prompt: str) -> tuple[str, str]:
        """(the user's title, a generated one): at most one is set."""
        name = one_line(self.text("name"), 200)
        if not name:
            return "", ""
        if self.fields.get("user_named") is True:
            return name, ""
        if not first_prompt or _is_prompt(name, first_prompt):
            return "", ""  # the first prompt (or not known yet): no title
        return "", name


def _is_prompt(name: str, prompt: str) -> bool:
    """Whether a name is the first prompt as typed, perhaps cut short ("... " or "…")."""
    p = " ".join(prompt.split())
    n = name
    for e in _ELLIPSIS:
        if n.endswith(e):
            n = n[: -len(e)].rstrip()
            break
    return bool(n) and p.startswith(n)
