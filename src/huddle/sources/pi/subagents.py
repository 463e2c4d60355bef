"""Sub-agents of Pi's example `subagent` extension (`examples/extensions/subagent/`, the one
users copy into `~/.pi/agent/extensions/`).

Pi has no sub-agents of its own. The extension's `subagent` tool runs each task as a
child `pi --mode json -p --no-session` process, which writes no file: the child's whole
transcript comes back in the lead's tool result, `details.results[i].messages`, with its
own usage per response. Its arguments name the tasks: `{agent, task}` (one),
`{tasks: [...]}` (in parallel) or `{chain: [...]}` (in turn, `{previous}` standing for
the step before's answer). No file holds a child's id: a child is named
`<the lead's call id>#<its task's index>`.

While the tool runs, the lead's orders are open (it waits on them) and nothing else is
known of the children; the result brings their events, then their reports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from huddle.model import events as ev
from huddle.model.doing import input_summary
from huddle.model.events import cap, one_line

from . import records as rec

if TYPE_CHECKING:
    from .parser import Parser

TOOL = "subagent"


def tasks_of(args: object) -> list[tuple[str, str]] | None:
    """(agent, task) per task the call's arguments name; None when they name none."""
    if not isinstance(args, dict):
        return None
    for key in ("tasks", "chain"):
        items = args.get(key)
        if isinstance(items, list) and items:
            out = []
            for it in items:
                if not isinstance(it, dict):
                    return None
                agent, task = it.get("agent"), it.get("task")
                out.append((agent if isinstance(agent, str) else "", task if isinstance(task, str) else ""))
            return out
    agent, task = args.get("agent"), args.get("task")
    if isinstance(agent, str) or isinstance(task, str):
        return [(agent if isinstance(agent, str) else "", task if isinstance(task, str) else "")]
    return None


class Subagents:
    def __init__(self, parser: Parser) -> None:
        self.p = parser
        self.orders: dict[str, list[str]] = {}  # the lead's call id -> its children's ids

    def order(self, cid: str, args: object, t: float | None, off: int, n: int) -> bool:
        """The lead's call: one order per task. False when its arguments name no task
        (then it is an ordinary tool call)."""
        tasks = tasks_of(args)
        if tasks is None or not cid:
            return False
        kids = []
        for i, (agent, task) in enumerate(tasks):
            child = f"{cid}#{i}"
            kids.append(child)
            self._agent(child, cid, agent, task)
            body, cut = cap(task)
            self.p.emit(
                ev.ORDER,
                t,
                off,
                n,
                id=child,
                name=agent or "sub-agent",
                detail=one_line(task, 100),
                text=body,
                truncated=cut,
                target=child,
            )
        self.orders[cid] = kids
        return True

    def _agent(self, child: str, cid: str, agent: str, task: str) -> None:
        s = self.p.session
        a = s.agent(child, parent=self.p.lead)
        a.parent = self.p.lead
        a.kind = agent or "sub-agent"
        a.name = agent or "sub-agent"
        a.description = one_line(task, 60)
        a.tool_use_id = cid
        if not a.order:
            a.order = task
        s.version += 1

    def result(self, cid: str, m: rec.Message, t: float | None, off: int, n: int) -> bool:
        """The tool's result: each child's transcript, then its report to the lead."""
        kids = self.orders.pop(cid, None)
        details = None
        if m.details:
            try:
                details = rec.decode_details(m.details)
            except msgspec.DecodeError:
                details = None
        results = (details.results if details is not None else None) or []
        if kids is None:
            if not results:
                return False  # neither an order nor a run of the extension: an ordinary result
            kids = [f"{cid}#{i}" for i in range(len(results))]
            for child, r in zip(kids, results, strict=True):
                self._agent(child, cid, r.agent or "", r.task or "")
        said = rec.texts(rec.parts(m.content) or [])
        for i, child in enumerate(kids):
            if i >= len(results):
                why = said if m.isError and said else "did not run"
                self.p.emit(ev.REPORT, t, off, n, id=child, target=child, text=cap(why)[0], ok=False)
                continue
            r = results[i]
            final = self._child(child, r, t, off, n)
            ok = r.status == "completed" if r.status else not m.isError
            words = final if ok or not (r.errorMessage or r.stderr) else (r.errorMessage or r.stderr or "")
            body, cut = cap(words or said)
            self.p.emit(ev.REPORT, t, off, n, id=child, target=child, text=body, truncated=cut, ok=ok)
        return True

    def _child(self, child: str, r: rec.SubResult, t: float | None, off: int, n: int) -> str:
        """A child's own events, at its records' times; its final answer."""
        p = self.p
        final = ""
        for k, m in enumerate(r.messages or ()):
            mt = rec.when_ms(m.timestamp) or t
            ps = rec.parts(m.content) or []
            if m.role == "assistant":
                thought = rec.thinking(ps)
                if thought:
                    body, cut = cap(thought)
                    p.emit(ev.THINK, mt, off, n, agent=child, text=body, truncated=cut)
                text = rec.texts(ps)
                if text:
                    final = text
                    body, cut = cap(text)
                    p.emit(ev.SAY, mt, off, n, agent=child, text=body, truncated=cut)
                calls = [c for c in ps if c.type == "toolCall"]
                for c in calls:
                    p.emit(
                        ev.TOOL_CALL,
                        mt,
                        off,
                        n,
                        agent=child,
                        id=c.id or "",
                        name=c.name or "",
                        detail=input_summary(rec.loose(c.arguments)),
                    )
                if m.usage is not None and (m.stopReason != "error" or rec.spent(m.usage)):
                    rid = m.responseId or f"{child}:{k}"
                    p.emit(ev.USAGE, mt, off, n, agent=child, id=rid, name=m.model or "", usage=rec.usage_of(m.usage))
                if m.stopReason == "error":
                    p.emit(ev.ERROR, mt, off, n, agent=child, text=cap(m.errorMessage or "the request failed")[0])
                if not calls:
                    p.emit(ev.TURN_END, mt, off, n, agent=child, id=m.responseId or "")
            elif m.role == "toolResult":
                p.emit(
                    ev.TOOL_RESULT,
                    mt,
                    off,
                    n,
                    agent=child,
                    id=m.toolCallId or "",
                    name=m.toolName or "",
                    ok=not m.isError,
                    size=sum(len(x.text.encode()) for x in ps if x.text),
                )
        return final
