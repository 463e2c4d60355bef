"""The Markdown export: the lead's conversation, each sub-agent's inlined (as a quote,
one level deeper per generation) under the call that started it, tokens and cost per
turn. Made from the export's data (already redacted and trimmed).

Text from the transcript is never markup: code and tool pieces sit in fences longer
than any run of backticks inside them, and an HTML tag in prose is written as text
(`&lt;script>`), so a Markdown viewer that renders HTML renders none of the agent's.
"""

from __future__ import annotations

import json
import re

from huddle.model.events import one_line
from huddle.model.times import iso
from huddle.views.numbers import short_tokens

_TAG = re.compile(r"<(?=[A-Za-z/!?])")
QUIET = frozenset({"usage", "title", "turn_end", "tool_result"})


def _prose(text: str) -> str:
    return _TAG.sub("&lt;", text or "").rstrip()


def _heading(text: str) -> str:
    """A heading's words: one line (a newline would end the heading and start a block of
    its own), no raw HTML."""
    return _prose(" ".join((text or "").split()))


def _code(text: str) -> str:
    """An inline code span around any text: fenced by a run of backticks longer than
    any inside it (a backtick in a project's name ended a one-backtick span, and what
    followed was markup)."""
    text = " ".join((text or "").split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{bar}{pad}{text}{pad}{bar}"


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{lang}\n{text.rstrip()}\n{bar}"


_tokens = short_tokens


def _usd(v: float | None) -> str:
    if v is None:
        return "—"
    return "<$0.01" if 0 < v < 0.01 else f"${v:,.2f}"


def _name(a: dict | None, lead: str) -> str:
    if a is None:
        return "a sub-agent"
    if a["id"] == lead:
        return "Lead"
    return a.get("label") or a.get("description") or a.get("name") or a["id"]


def markdown(data: dict) -> str:
    return _Markdown(data).write()


# what an event kind says on a line of its own, with no words of the event's
_MARKS = {"interrupt": "*Interrupted*", "compaction": "*Conversation compacted*"}


class _Markdown:
    """One export written: the lead's lane, each sub-agent's inlined under its order."""

    def __init__(self, data: dict) -> None:
        self.data = data
        self.lead = data["session"]["lead"]
        self.agents = {a["id"]: a for a in data["agents"]}
        self.lanes: dict[str, list[dict]] = {}
        self.results: dict[tuple[str, str], dict] = {}
        for e in data["events"]:
            if e["kind"] == "tool_result":
                self.results[(e["agent"], e.get("id", ""))] = e
            if e["kind"] not in QUIET:
                self.lanes.setdefault(e["agent"], []).append(e)
        self.turns = {t["start_seq"]: t for t in data["turns"]}
        self.out: list[str] = []
        self.shown: set[str] = set()

    def write(self) -> str:
        data, lead = self.data, self.lead
        s = data["session"]
        self.out.append(f"# {_heading(s['title'] or s['id'])}\n")
        self.out.append("\n".join(self._meta()) + "\n")
        first = (self.lanes.get(lead) or [{}])[0].get("seq")
        if data["turns"] and first not in self.turns:
            t = data["turns"][0]
            self.out.append(f"## Turn {t['n']} · {_tokens(t['tokens'])} tokens · {_usd(t['cost_usd'])}\n")
        self.lane(lead, 0)
        rest = [a for a in self.agents if a not in self.shown and a in self.lanes]
        if rest:
            self.out.append("## Other agents\n")
            for a in rest:
                self.emit([f"### {_heading(_name(self.agents[a], lead))}"], 1)
                self.lane(a, 1)
        return "\n".join(self.out).rstrip() + "\n"

    def _meta(self) -> list[str]:
        data = self.data
        s, r, n = data["session"], data["redaction"], len(self.agents)
        meta = [
            f"- Session {_code(s['id'])} · {_prose(s['source'])}"
            + (f" · project {_code(s['project'])}" if s["project"] else ""),
            f"- {s['started_at'] or '?'} to {s['updated_at'] or '?'}",
            f"- {_tokens(s['tokens'])} tokens · {_usd((s.get('cost') or {}).get('usd'))}",
            f"- {n} agent{'s' if n != 1 else ''} · exported {data['exported_at']} by huddle {data['huddle']}",
            (
                f"- Redaction: {r['replaced']} secret{'s' if r['replaced'] != 1 else ''} replaced"
                if r["enabled"]
                else "- Not redacted"
            ),
        ]
        if data["trimmed"]["pieces"]:
            meta.append(
                f"- {data['trimmed']['pieces']} heavy tool outputs trimmed (their full size is stated where they stand)"
            )
        return meta

    def emit(self, lines: list[str], depth: int) -> None:
        prefix = "> " * depth
        for block in lines:
            for line in block.split("\n"):
                self.out.append((prefix + line).rstrip() if line else prefix.rstrip())
            self.out.append(prefix.rstrip())

    def who(self, e: dict) -> str:
        return "You" if e["kind"] == "prompt" else _prose(_name(self.agents.get(e["agent"]), self.lead))

    @staticmethod
    def when(e: dict) -> str:
        t = e.get("t")
        return f" · {(iso(t) or '')[11:19]}" if t is not None else ""

    def lane(self, agent: str, depth: int) -> None:
        self.shown.add(agent)
        for e in self.lanes.get(agent, []):
            if depth == 0 and e["seq"] in self.turns:
                t = self.turns[e["seq"]]
                unpriced = " (+ unpriced)" if t["unpriced"] else ""
                self.emit(
                    [f"## Turn {t['n']} · {_tokens(t['tokens'])} tokens · {_usd(t['cost_usd'])}{unpriced}"], depth
                )
            if e["kind"] == "order":
                if e["agent"] != e.get("target") and depth < 12:
                    self._order(e, depth)
                continue
            lines = self._lines(e)
            if lines:
                self.emit(lines, depth)

    def _lines(self, e: dict) -> list[str]:
        """What one event says (but an order: its sub-agent's lane follows it)."""
        k = e["kind"]
        if k == "prompt":
            return [f"**You**{self.when(e)}", _prose(e.get("text", ""))]
        if k == "say":
            return [f"**{self.who(e)}**{self.when(e)}", _prose(e.get("text", ""))]
        if k == "think":
            return [f"*{self.who(e)} thought:*", _prose(e.get("text", ""))]
        if k == "tool_call":
            return self.tool(e)
        if k == "report":
            sub = _prose(_name(self.agents.get(e.get("target", "")), self.lead))
            return [f"*Report from {sub}:*", _prose(e.get("text", ""))]
        if k == "waiting":
            return [f"*Waiting for you: {_prose(e.get('detail') or e.get('name') or '')}*"]
        if k == "error":
            return [f"*Error: {_prose(e.get('text', ''))}*"]
        return [_MARKS[k]] if k in _MARKS else []

    def _order(self, e: dict, depth: int) -> None:
        sub = self.agents.get(e.get("target", ""))
        u = (sub or {}).get("usage") or {}
        tokens = sum(u.get(x, 0) for x in ("input", "output", "cache_read", "cache_write"))
        kind = f" ({sub['type']})" if sub and sub.get("type") else ""
        self.emit(
            [
                f"### ↳ {_heading(_name(sub, self.lead) + kind)} · {_tokens(tokens)} tokens",
                f"*Asked by {self.who(e)}:*",
                _prose(e.get("text") or e.get("detail") or ""),
            ],
            depth,
        )
        if e.get("target"):
            self.lane(e["target"], depth + 1)

    def tool(self, e: dict) -> list[str]:
        res = self.results.get((e["agent"], e.get("id", "")))
        what = one_line(e.get("doing") or e.get("name") or "a tool", 100).replace("`", "")
        blocks = [f"**{self.who(e)}** ran `{what}`{self.when(e)}"]
        if e.get("input") is not None:
            blocks.append(_fence(json.dumps(e["input"], indent=2, ensure_ascii=False), "json"))
        if res is not None:
            head = "Error:" if res.get("ok") is False or res.get("is_error") else "Result:"
            info = res.get("output_trimmed")
            if info:
                head = f"{head[:-1]} ({info['bytes']:,} bytes, {info['lines']:,} lines in all; trimmed):"
            blocks.append(head)
            blocks.append(_fence(res.get("output") or "(empty)"))
            if res.get("images"):
                blocks.append(f"*{len(res['images'])} image(s) not shown in Markdown*")
        return blocks
