"""What the call says aloud: which events become spoken lines, in words fit for a voice.

Spoken: the lead's words, a sub-agent's report (in the sub-agent's voice), and a wait
for the human ("needs you: why", first and always). Not spoken: tool calls, thinking,
the harness, sub-agents' running commentary. Code is never read out: a fenced block is
"(code)", a long inline one is skipped, a path is its last part, a link is "a link".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .speaker import Line

SPOKEN_MAX = 280  # characters of one line: its first sentences

_FENCE = re.compile(r"```.*?(```|$)", re.S)
_INLINE = re.compile(r"`([^`\n]*)`")
_URL = re.compile(r"\bhttps?://\S+")
_PATH = re.compile(r"(?<![\w.])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?")
_MARKS = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)|[*_~|]+", re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def spoken(text: str, cap: int = SPOKEN_MAX) -> str:
    """Agent text (Markdown) as words to say: code out, marks out, the first sentences."""
    text = _FENCE.sub(" (code) ", text or "")
    text = _INLINE.sub(lambda m: m.group(1) if len(m.group(1)) <= 24 and "/" not in m.group(1) else "", text)
    text = _URL.sub("a link", text)
    text = _PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    text = _MARKS.sub("", text)
    text = " ".join(text.split())
    if len(text) <= cap:
        return text
    out = ""
    for s in _SENTENCE.split(text):
        if out and len(out) + 1 + len(s) > cap:
            break
        out = f"{out} {s}".strip()
    return out if len(out) <= cap else out[: cap - 1].rsplit(" ", 1)[0] + "…"


class Cast:
    """Each agent of a session its own voice: the lead the first, the others in the
    order they join (the session's tree order when known)."""

    def __init__(self, lead: str = "", order: Iterable[str] = ()) -> None:
        self.places: dict[str, int] = {}
        if lead:
            self.places[lead] = 0
        for a in order:
            self.place(a)

    def place(self, agent: str) -> int:
        if agent not in self.places:
            self.places[agent] = len(self.places)
        return self.places[agent]


def line_of(e: dict[str, Any], session: str, lead: str, cast: Cast, names: dict[str, str] | None = None) -> Line | None:
    """The spoken line of one event (as the API gives it), or None."""
    kind = e.get("kind")
    if e.get("copied"):
        return None
    agent = str(e.get("agent") or "")
    if kind == "waiting":
        why = spoken(str(e.get("detail") or e.get("name") or "a question"), 160)
        return Line(f"Needs you: {why}", session, agent, cast.place(agent), urgent=True)
    if kind == "say" and agent == lead:
        words = spoken(str(e.get("text") or ""))
        return Line(words, session, agent, cast.place(agent)) if words else None
    if kind == "report":
        who = str(e.get("target") or agent)
        words = spoken(str(e.get("text") or ""))
        if not words:
            return None
        name = (names or {}).get(who)
        return Line(f"{name} reports: {words}" if name else words, session, who, cast.place(who))
    return None


def latest_line(
    events: list[dict[str, Any]], session: str, lead: str, cast: Cast, names: dict[str, str] | None = None
) -> Line | None:
    """The last line the call would have said (`huddle say`): the latest by time (events
    come in read order: a sub-agent's file after its lead's), then by order read."""
    best: tuple[float, int, Line] | None = None
    for i, e in enumerate(events):
        line = line_of(e, session, lead, cast, names)
        t = e.get("t")
        key = (float(t) if isinstance(t, (int, float)) else float("-inf"), i)
        if line is not None and (best is None or key >= best[:2]):
            best = (*key, line)
    return best[2] if best is not None else None
