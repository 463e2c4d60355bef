"""Claude Code's user records, as FileParser reads them: prompts (a sub-agent's are its
lead's orders), harness context riding along, tool results, interrupts, and the
notifications of work that ran in the background."""

from __future__ import annotations

from huddle.model import events as ev
from huddle.model.events import Event, cap
from huddle.model.session import Session

from .emitter import Emitter
from .records import (
    INTERRUPT,
    RESULT_TAG,
    STATUS_TAG,
    SUMMARY_TAG,
    TASK_ID_TAG,
    TOOL_USE_ID_TAG,
    WARMUP,
    Block,
    Record,
    agent_result,
    background_task,
    first_match,
    harness_blocks,
    report_of,
    typed_command,
)
from .skips import UsageFilter
from .state import SessionState


class UserRecords(Emitter):
    """FileParser's part that reads user records (its other attributes are the parser's)."""

    session: Session
    shared: SessionState
    is_sub: bool
    usage_only: bool
    filter: UsageFilter | None
    prompted: set[str]

    def _user(self, r: Record, off: int, n: int) -> None:
        m = r.message
        if m is None:
            return
        c = m.content
        if isinstance(c, str):
            self._user_text(r, self._unwrap(c, off, n), off, n)
            return
        if not c:
            return
        texts, images = self._user_blocks(r, c, off, n)
        if images:
            texts.append("[image]" if images == 1 else f"[{images} images]")
        if texts:
            self._user_text(r, "\n\n".join(texts), off, n, name="image" if images and len(texts) == 1 else "")

    def _user_blocks(self, r: Record, blocks: list[Block], off: int, n: int) -> tuple[list[str], int]:
        """One user record is one prompt: its text blocks and images together, minus the
        harness context riding along (IDE blocks, reminders); its tool results and
        interrupts are said here. (Its texts, how many images.)"""
        texts: list[str] = []
        images = 0
        for b in blocks:
            if b.type == "tool_result":
                self._tool_result(r, b, off, n)
            elif b.type == "text" and b.text:
                if INTERRUPT.match(b.text):
                    self.emit(ev.INTERRUPT, off, n, text=b.text)
                    continue
                rest = self._unwrap(b.text, off, n)
                if rest.strip():
                    texts.append(rest)
            elif b.type == "image":
                images += 1
        return texts, images

    def _sub_prompt(self, r: Record, t: str, cut: bool, off: int, n: int) -> None:
        """A sub-agent's prompts come from its lead, not from the human: its first is the
        order its lead's call already carries; a later one, an order of its own."""
        first = self.agent not in self.prompted and r.parentUuid is None
        self.prompted.add(self.agent)
        if first:
            self.shared.sub_orders.setdefault(self.agent, t)
            if t.strip() == WARMUP:
                self.shared.warmups.add(self.agent)
            return
        self.emit(ev.ORDER, off, n, text=t, truncated=cut, target=self.agent)

    def _unwrap(self, text: str, off: int, n: int) -> str:
        """Harness wrappers at the start of a user text (`<ide_opened_file>`,
        `<ide_selection>`, `<system-reminder>`...) go to the context lane; the rest is returned."""
        if not text.startswith("<") and not text.lstrip().startswith("<"):
            return text
        for tag, inner, rest in harness_blocks(text):
            t, cut = cap(inner)
            self.emit(ev.CONTEXT, off, n, name=tag, text=t, truncated=cut)
            text = rest
        return text

    def _user_text(self, r: Record, text: str, off: int, n: int, name: str = "") -> None:
        if not text.strip():
            return
        if r.isCompactSummary:
            t, cut = cap(text)
            self.emit(ev.CONTEXT, off, n, name="compact_summary", text=t, truncated=cut)
            return
        stripped = text.lstrip()
        if (r.origin and r.origin.kind == "task-notification") or stripped.startswith("<task-notification>"):
            self._notification(stripped, off, n)
            return
        if r.isMeta or stripped.startswith(("<local-command", "<system-reminder>", "<command-", "<bash-")):
            name = "meta"
            cmd = typed_command(stripped)
            if cmd:
                name, text = "command", cmd
            t, cut = cap(text)
            self.emit(ev.CONTEXT, off, n, name=name, text=t, truncated=cut)
            return
        if INTERRUPT.match(stripped):
            self.emit(ev.INTERRUPT, off, n, text=stripped)
            return
        t, cut = cap(text)
        if self.is_sub:
            self._sub_prompt(r, t, cut, off, n)
            return
        agent, at, path = self.agent, self.last_t, self.path  # (emit's event without a **kw: ~8k instructions)
        self.out.append(
            Event(kind=ev.PROMPT, agent=agent, t=at, file=path, offset=off, length=n, name=name, text=t, truncated=cut)
        )
        if self.filter is not None:
            self.filter.prompted = True  # the title is a prompt's now: a last-prompt record cannot change it

    def _tool_result(self, r: Record, b: Block, off: int, n: int) -> None:
        cid = b.tool_use_id or ""
        ok = not b.is_error
        size = len(b.content)
        lead = self.shared.agent_calls.get(cid)
        detail = ""
        if lead is None and self.usage_only:
            return
        if lead is not None:
            res = agent_result(r.toolUseResult)
            if res is not None and res.agentId:  # the link before meta.json existed (2.0.x, 2.1.50)
                self.shared.agent_by_call.setdefault(cid, res.agentId)
            if res is not None and (res.isAsync or res.status == "async_launched"):
                detail = "background"
                if res.agentId:
                    self.shared.background_agents.add(res.agentId)
            self.emit(ev.TOOL_RESULT, off, n, id=cid, name="Agent", ok=ok, size=size, detail=detail)
            if detail != "background":
                report = report_of(res, b.content)
                text, cut = cap(report)
                target = (res.agentId if res and res.agentId else "") or self.shared.agent_by_call.get(cid, "")
                self.emit(ev.REPORT, off, n, id=cid, text=text, truncated=cut, ok=ok, target=target)
            return
        task = background_task(r.toolUseResult) if ok else ""
        if task:
            detail = "background"
            self.shared.background_shells[task] = cid
        self.out.append(  # (emit's event, made here: one per tool result)
            Event(
                kind=ev.TOOL_RESULT, agent=self.agent, t=self.last_t, file=self.path, offset=off, length=n,
                id=cid, ok=ok, size=size, detail=detail,
            )
        )  # fmt: skip

    def _notification(self, text: str, off: int, n: int) -> None:
        task = first_match(TASK_ID_TAG, text)
        call = first_match(TOOL_USE_ID_TAG, text) or self.shared.background_shells.get(task, "")
        status = first_match(STATUS_TAG, text)
        ok = status in ("completed", "")
        result = first_match(RESULT_TAG, text) or first_match(SUMMARY_TAG, text)
        t, cut = cap(result)
        if call in self.shared.agent_calls or task in self.shared.background_agents:
            target = task or self.shared.agent_by_call.get(call, "")
            self.emit(ev.REPORT, off, n, id=call, text=t, truncated=cut, ok=ok, target=target, name="task-notification")
        else:
            self.emit(ev.TOOL_RESULT, off, n, id=call, ok=ok, size=len(result), detail="notified")
