"""One Pi session file -> events: the lead's, and its extension sub-agents' (subagents.py).

What the file says, and what a reader must get right:
- One model response is one `assistant` message with its final `usage`: counted once
  (its `responseId`, else the entry's id and time, names it). A failed request (1.6.0)
  leaves an `assistant` message with `stopReason: "error"`, all-zero usage and no
  response id: an error, not a response. A `context_edit` that drops it right after
  says Pi retries; without one, the turn ended there (said when the next entry comes,
  or by the live signals while it is the last).
- The summaries Pi asks the model for (`branch_summary` after `/tree`, `compaction`
  after `/compact`) carry that call's usage in 1.6.0: spent, so counted.
- `pi --fork` (and `/fork`) starts a file with a copy of the parent's entries, their
  ids, times and usage unchanged, then the fork's own: the copies (dated before the
  header) are shown and marked copied, never counted again.
- The entries form a tree; a jump back (`/tree`) is said where it happens (branches.py).
- A turn ends with a response that calls no tool (`stop`, `length`), or is interrupted
  (`aborted`); tool calls are answered by `toolResult` messages (`isError` for every
  failure, a non-zero exit included).
"""

from __future__ import annotations

from typing import Any

import msgspec

from huddle.model import events as ev
from huddle.model import times
from huddle.model.doing import input_summary
from huddle.model.events import Event, cap, one_line
from huddle.model.session import Session

from . import records as rec
from .branches import Tree
from .subagents import TOOL, Subagents

CONTEXT_KEEP = 600  # harness text kept per context event; the rest is read back from the file
ERROR = "error"  # a mark: the last response failed and no retry was written after it
OK = "ok"


class Parser:
    def __init__(self, session: Session, path: str, lead: str) -> None:
        self.session = session
        self.path = path
        self.lead = lead
        self.out: list[Event] = []
        self.tree = Tree()
        self.subs = Subagents(self)
        self.headed = False
        self.forked_at: float | None = None  # a fork's header time: entries dated before are copies
        self.parent_path = ""  # a fork's parent file, as its header names it
        self.parent_id = ""
        self.copying = False
        self.model = ""
        self.titled = False
        self.calls: dict[str, tuple[str, float | None]] = {}  # the lead's calls without a result: id -> (tool, t)
        self.pending: tuple[str, float | None, int, int] | None = None  # a failed response, no retry yet
        self.marks: list[tuple[float | None, str]] = []  # (time, ERROR / OK): for the live signals
        self.unknown: set[str] = set()
        self.last_t: float | None = None

    # -- helpers -------------------------------------------------------------------

    def emit(self, kind: str, t: float | None, off: int, n: int, agent: str | None = None, **kw: Any) -> Event:
        if t is None:
            t = self.last_t
        elif agent is None:
            self.last_t = t
        e = Event(kind=kind, agent=agent or self.lead, t=t, file=self.path, offset=off, length=n, **kw)
        if self.copying:
            e.copied = True
            if kind == ev.USAGE and self.parent_id:
                e.origin = self.parent_id
        self.out.append(e)
        return e

    def _end_failed(self, now: float | None) -> None:
        """The entry after a failed response is no retry of it: the turn ended there."""
        if self.pending is not None:
            eid, t, off, n = self.pending
            self.pending = None
            self.emit(ev.TURN_END, t, off, n, id=eid)
            self._mark(now, OK)

    def _mark(self, t: float | None, what: str) -> None:
        if not self.marks or self.marks[-1][1] != what:
            self.marks.append((t if t is not None else self.last_t, what))

    # -- lines ---------------------------------------------------------------------

    def feed(self, off: int, line: bytes) -> None:
        try:
            r = rec.decode_entry(line)
        except msgspec.ValidationError as exc:  # (a subclass of DecodeError: first)
            self.session.problem(self.path, off, f"unexpected record ({exc})")
            return
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        self._entry(r, off, len(line))

    def _entry(self, r: rec.Entry, off: int, n: int) -> None:
        t = rec.when(r.timestamp)
        if t is None and times.out_of_range(r.timestamp):  # year 9999: kept out of the times, and said
            self.session.note(self.path, off, times.odd(r.timestamp))
        kind = r.type or ""
        if kind == "session":
            self._header(r, t, off, n)
            return
        if kind not in rec.KNOWN:
            if kind not in self.unknown:
                self.unknown.add(kind)
                self.session.note(self.path, off, f"entry type {kind!r} is not one huddle knows: passed over")
            return
        if self.forked_at is not None and self.copying and (t is None or t >= self.forked_at):
            self.copying = False  # the fork's own entries begin
        if self.pending is not None and not (kind == "context_edit" and r.targetId == self.pending[0]):
            self._end_failed(t)
        jump = self.tree.add(r.id, r.parentId)
        if jump is not None:
            text = jump.words()
            if kind == "branch_summary" and r.summary:
                text += "\n\nPi's summary of the branch left:\n" + r.summary
            self.emit(ev.CONTEXT, t, off, n, id=r.id or "", name="branch", text=cap(text)[0], detail="another branch")
            self.calls.clear()
        self._kind(r, kind, jump is not None, t, off, n)

    def _kind(self, r: rec.Entry, kind: str, branched: bool, t: float | None, off: int, n: int) -> None:
        """An entry of the tree, by its type."""
        if kind == "message":
            if r.message is not None:
                self._message(r, r.message, t, off, n)
        elif kind == "model_change":
            self.model = r.modelId or self.model
        elif kind == "session_info":
            name = (r.name or "").strip()
            if name or self.titled:
                self.titled = True
                self.emit(ev.TITLE, t, off, n, text=one_line(name, 200))
        elif kind in ("branch_summary", "compaction"):
            self._summary(r, kind, branched, t, off, n)
        elif kind == "context_edit":
            self._context_edit(r, t, off, n)
        elif kind in ("custom_message", "usage"):
            self._extension(r, kind, t, off, n)

    def _extension(self, r: rec.Entry, kind: str, t: float | None, off: int, n: int) -> None:
        """What an extension wrote: a message of its own, a call's usage (cache warming)."""
        if kind == "custom_message":
            text = rec.texts(rec.parts(r.content) or [])
            if text:
                name = r.customType or "extension"
                self.emit(ev.CONTEXT, t, off, n, id=r.id or "", name=name, text=text[:CONTEXT_KEEP])
        elif r.usage is not None and rec.spent(r.usage):
            u = rec.usage_of(r.usage)
            self.emit(ev.USAGE, t, off, n, id=f"usage:{r.id}@{r.timestamp}", name=r.model or self.model, usage=u)

    def _header(self, r: rec.Entry, t: float | None, off: int, n: int) -> None:
        if self.headed:
            self.session.note(self.path, off, "a second session header: passed over")
            return
        self.headed = True
        if isinstance(r.version, (int, float)) and r.version > rec.VERSION:
            self.session.note(self.path, off, f"session format {r.version} is newer than huddle knows: read as 3")
        if r.cwd and not self.session.cwd:
            self.session.cwd = r.cwd
        if r.modelId:  # (version 1 headers name the model)
            self.model = r.modelId
        parent = r.parentSession or r.branchedFrom
        if parent:
            self.parent_path = parent
            self.parent_id = parent_id(parent)
            self.session.continues = self.parent_id or None
            self.forked_at = t
            self.copying = t is not None
            words = f"Forked from session {self.parent_id or parent}: its history is copied here, counted there"
            self.emit(ev.CONTEXT, t, off, n, name="fork", text=words)

    # -- messages ------------------------------------------------------------------

    def _message(self, r: rec.Entry, m: rec.Message, t: float | None, off: int, n: int) -> None:
        role = m.role
        if role == "assistant":
            self._response(r, m, t, off, n)
            return
        ps = rec.parts(m.content)
        if ps is None:  # the whole line costs itself (drain says it)
            raise ValueError(f"{role} message: content of an unexpected shape")
        if role == "user":
            text = rec.texts(ps)
            if rec.has_image(ps):
                text = (text + "\n[image]").strip()
            if text:
                self.tree.prompt(r.id, text)
                self.calls.clear()  # calls left without a result: the human has moved on
                body, cut = cap(text)
                self.emit(ev.PROMPT, t, off, n, id=r.id or "", text=body, truncated=cut)
        elif role == "toolResult":
            self._tool_result(m, t, off, n)
        elif role == "bashExecution":  # `!command`: the human ran it, Pi only kept its output
            text = f"$ {m.command or ''}\n{m.output or ''}".strip()
            self.emit(ev.CONTEXT, t, off, n, id=r.id or "", name="user_shell", text=text[:CONTEXT_KEEP])
        elif role in ("custom", "hookMessage", "branchSummary", "compactionSummary"):
            text = rec.texts(ps) or m.summary or ""
            if text:
                self.emit(ev.CONTEXT, t, off, n, id=r.id or "", name=m.customType or role, text=text[:CONTEXT_KEEP])
        # `system` (1.6.0): the system prompt Pi sends, no turn of anyone's

    def _tool_result(self, m: rec.Message, t: float | None, off: int, n: int) -> None:
        cid = m.toolCallId or ""
        if not cid:
            raise ValueError("a tool result that names no call")
        name = self.calls.pop(cid, (m.toolName or "", None))[0]
        if name == TOOL and self.subs.result(cid, m, t, off, n):
            return
        size = rec.size_of(m.content)
        self.emit(ev.TOOL_RESULT, t, off, n, id=cid, name=m.toolName or name, ok=not m.isError, size=size)

    def _response(self, r: rec.Entry, m: rec.Message, t: float | None, off: int, n: int) -> None:
        ps = rec.parts(m.content)
        if ps is None:  # the whole line costs itself (drain says it)
            raise ValueError("assistant message: content of an unexpected shape")
        if m.model:
            self.model = m.model
        thought = rec.thinking(ps)
        if thought:
            body, cut = cap(thought)
            self.emit(ev.THINK, t, off, n, id=r.id or "", text=body, truncated=cut)
        text = rec.texts(ps)
        if text:
            body, cut = cap(text)
            self.emit(ev.SAY, t, off, n, id=r.id or "", text=body, truncated=cut)
        calls = [p for p in ps if p.type == "toolCall"]
        for c in calls:
            self._call(c, t, off, n)
        stop = m.stopReason or ""
        if m.usage is not None and (stop != "error" or rec.spent(m.usage)):
            rid = m.responseId or f"{r.id}@{r.timestamp}"
            self.emit(ev.USAGE, t, off, n, id=rid, name=m.model or self.model, usage=rec.usage_of(m.usage))
        if stop == "error":
            self.emit(ev.ERROR, t, off, n, id=r.id or "", text=cap(m.errorMessage or "the request failed")[0])
            self.pending = (r.id or "", t, off, n)
            self._mark(t, ERROR)
            return
        self._mark(t, OK)
        if stop == "aborted":
            self.emit(ev.INTERRUPT, t, off, n, id=r.id or "", text=m.errorMessage or "")
            self.calls.clear()
        elif not calls:
            self.emit(ev.TURN_END, t, off, n, id=r.id or "")

    def _call(self, c: rec.Part, t: float | None, off: int, n: int) -> None:
        """A tool call (the extension's `subagent` call: an order to its children)."""
        cid, name = c.id or "", c.name or ""
        args = rec.loose(c.arguments)
        if name == TOOL and self.subs.order(cid, args, t, off, n):
            self.calls[cid] = (name, t)
            return
        if cid:
            self.calls[cid] = (name, t)
        self.emit(ev.TOOL_CALL, t, off, n, id=cid, name=name, detail=input_summary(args))

    # -- other entries -------------------------------------------------------------

    def _summary(self, r: rec.Entry, kind: str, said: bool, t: float | None, off: int, n: int) -> None:
        """A summary Pi asked the model for: its words, and that call's usage (1.6.0)."""
        if kind == "compaction":
            self.emit(ev.COMPACTION, t, off, n, id=r.id or "", text=cap(r.summary or "")[0])
        elif not said and r.summary:  # a summary not at a jump (an extension's): said on its own
            self.emit(ev.CONTEXT, t, off, n, id=r.id or "", name="branch", text=cap(r.summary)[0])
        if r.usage is not None and rec.spent(r.usage):
            rid = f"{kind}:{r.id}@{r.timestamp}"
            self.emit(ev.USAGE, t, off, n, id=rid, name=self.model, usage=rec.usage_of(r.usage))

    def _context_edit(self, r: rec.Entry, t: float | None, off: int, n: int) -> None:
        if self.pending is not None and r.targetId == self.pending[0]:
            self.pending = None
            self._mark(t, OK)
            self.emit(ev.CONTEXT, t, off, n, id=r.id or "", name="retry", text="The request failed: Pi tries it again")
            return
        what = "taken out of" if rec.loose(r.replacement) is None else "rewritten in"
        self.emit(
            ev.CONTEXT,
            t,
            off,
            n,
            id=r.id or "",
            name="context_edit",
            text=f"An earlier entry was {what} the model's context",
        )

    def failed_at(self, at: float | None) -> float | None:
        """When the last response failed with no retry after it (as of `at`), else None."""
        for mt, what in reversed(self.marks):
            if at is not None and mt is not None and mt > at:
                continue
            return mt if what == ERROR else None
        return None


def parent_id(path: str) -> str:
    """The session id a fork's `parentSession` path names: `<time>_<id>.jsonl`."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if name.endswith(".jsonl"):
        name = name[: -len(".jsonl")]
    return name.rsplit("_", 1)[-1] if "_" in name else name
