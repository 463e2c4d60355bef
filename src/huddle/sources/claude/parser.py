"""Claude Code transcript lines -> events: the parser of one file, and the state
that spans a session's files while they are read (see records for the
decoded shapes and the text helpers)."""

from __future__ import annotations

import msgspec

from huddle.model import events as ev
from huddle.model.events import Event, cap
from huddle.model.session import Session, parse_time
from huddle.model.tools import HANDBACK_TOOLS, SPAWN_TOOLS

from .records import (
    ATTACHMENT_KEY,
    COMMAND_NAME,
    INTERRUPT,
    QUIET_ATTACHMENTS,
    RESULT_TAG,
    SKIP_PREFIXES,
    SKIP_TYPES,
    STATUS_TAG,
    SUMMARY_TAG,
    TASK_ID_TAG,
    TOOL_USE_ID_TAG,
    Block,
    Record,
    agent_input,
    agent_result,
    compact_detail,
    decode_bash_result,
    decode_record,
    error_text,
    first_match,
    input_summary,
    report_of,
    str_of,
    summary_text,
    usage_of,
)


class FileParser:
    """Turns the lines of one transcript file into events for one agent.

    State that spans lines (which call ids are Agent calls, the last time seen,
    which message ids were counted) lives here or, where it spans files, in the
    shared `SessionState`.
    """

    def __init__(
        self, session: Session, shared: SessionState, path: str, agent: str, is_sub: bool, usage_only: bool = False
    ):
        self.session = session
        self.shared = shared
        self.path = path
        self.agent = agent
        self.is_sub = is_sub
        # Only model responses carry usage: other records are passed over unread.
        self.usage_only = usage_only
        self.last_t: float | None = None
        self.seen_first_prompt = False
        self.out: list[Event] = []

    # -- helpers -------------------------------------------------------------------

    def emit(self, kind: str, off: int, ln: int, **kw) -> Event:
        e = Event(kind=kind, agent=self.agent, t=self.last_t, file=self.path, offset=off, length=ln, **kw)
        self.out.append(e)
        return e

    def feed(self, off: int, line: bytes) -> None:
        if line.startswith(SKIP_PREFIXES):
            return
        if self.usage_only and not wanted_for_usage(line):
            return
        i = line.find(ATTACHMENT_KEY, 0, 300)
        if i >= 0:
            start = i + len(ATTACHMENT_KEY)
            end = line.find(b'"', start, start + 64)
            if end > 0 and line[start:end].decode("ascii", "replace") in QUIET_ATTACHMENTS:
                return
        try:
            r = decode_record(line)
        except msgspec.ValidationError as exc:  # a subclass of DecodeError: first
            self.session.problem(self.path, off, f"unexpected shape ({exc})")
            return
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        t = r.type
        if t in SKIP_TYPES:
            return
        if r.timestamp:
            ts = parse_time(r.timestamp)
            if ts is not None:
                self.last_t = ts
        if r.cwd and not self.session.cwd:
            self.session.cwd = r.cwd
        n = len(line)
        if t == "assistant":
            self._assistant(r, off, n)
        elif t == "user":
            self._user(r, off, n)
        elif t == "system":
            self._system(r, off, n)
        elif t == "attachment":
            a = r.attachment.type if r.attachment else ""
            if a not in QUIET_ATTACHMENTS:
                self.emit(ev.CONTEXT, off, n, name=a or "attachment", text=a)
        elif t == "custom-title" and r.customTitle:
            if r.customTitle != self.shared.custom_title:
                self.shared.custom_title = r.customTitle
                self.emit(ev.TITLE, off, n, text=r.customTitle)
        elif t in ("ai-title", "summary"):
            title = r.aiTitle or r.title or ""
            if not title and t == "summary":
                title = summary_text(line)
            if title and title != self.shared.ai_title:
                self.shared.ai_title = title
                self.emit(ev.TITLE, off, n, text=title, detail="ai")
        elif t == "last-prompt" and r.lastPrompt:
            self.session.last_prompt = r.lastPrompt
        elif t == "cost-state":
            # Interactive sessions write cost-state only at exit; -p runs at their end.
            # After the last turn it means the process is gone (a new prompt revives it).
            self.emit(ev.CONTEXT, off, n, name="session_end", text="session ended")
        elif t == "permission-mode" and r.permissionMode:
            self.shared.permission_mode = r.permissionMode

    # -- record kinds --------------------------------------------------------------

    def _assistant(self, r: Record, off: int, n: int) -> None:
        m = r.message
        if m is None:
            return
        copied = bool(r.requestSessionId) and r.requestSessionId != (r.sessionId or self.session.id)
        mid = m.id or ""
        if m.usage is not None and mid and mid not in self.shared.counted and m.model != "<synthetic>":
            self.shared.counted.add(mid)
            if not copied:
                self.emit(ev.USAGE, off, n, id=mid, name=m.model or "", usage=usage_of(m.usage))
        if self.usage_only:
            return
        blocks = m.content if isinstance(m.content, list) else []
        if isinstance(m.content, str) and m.content:
            blocks = [Block(type="text", text=m.content)]
        for b in blocks:
            bt = b.type
            if bt == "text" and b.text:
                text, cut = cap(b.text)
                kind = ev.ERROR if m.model == "<synthetic>" and "error" in b.text.lower()[:40] else ev.SAY
                self.emit(kind, off, n, text=text, truncated=cut, copied=copied, id=mid)
            elif bt == "thinking" and b.thinking:
                text, cut = cap(b.thinking)
                self.emit(ev.THINK, off, n, text=text, truncated=cut, copied=copied)
            elif bt in ("tool_use", "server_tool_use"):
                self._tool_use(b, off, n, copied)
        if m.stop_reason == "end_turn":
            # Each block record repeats stop_reason: keep one turn end, after the last block.
            recent = self.out[-8:]
            for e in recent:
                if e.kind == ev.TURN_END and e.id == mid:
                    self.out.remove(e)
            self.emit(ev.TURN_END, off, n, id=mid, copied=copied)

    def _tool_use(self, b: Block, off: int, n: int, copied: bool) -> None:
        name = b.name or ""
        cid = b.id or ""
        if name in SPAWN_TOOLS:
            inp = agent_input(b.input)
            self.shared.agent_calls[cid] = self.agent
            self.emit(
                ev.ORDER,
                off,
                n,
                id=cid,
                name=inp.get("subagent_type") or "general-purpose",
                detail=inp.get("description") or "",
                text=cap(inp.get("prompt") or "")[0],
                copied=copied,
            )
            return
        if name in HANDBACK_TOOLS:
            inp = agent_input(b.input)
            text, cut = cap(inp.get("message") or "")
            self.emit(ev.REPORT, off, n, id=cid, name=name, text=text, truncated=cut, target=self.agent, copied=copied)
            return
        self.emit(ev.TOOL_CALL, off, n, id=cid, name=name, detail=input_summary(name, b.input), copied=copied)

    def _user(self, r: Record, off: int, n: int) -> None:
        m = r.message
        if m is None:
            return
        c = m.content
        if isinstance(c, str):
            self._user_text(r, c, off, n)
            return
        if not c:
            return
        for b in c:
            if b.type == "tool_result":
                self._tool_result(r, b, off, n)
            elif b.type == "text" and b.text:
                if INTERRUPT.match(b.text):
                    self.emit(ev.INTERRUPT, off, n, text=b.text)
                else:
                    self._user_text(r, b.text, off, n)
            elif b.type == "image":
                self.emit(ev.PROMPT if not r.isMeta else ev.CONTEXT, off, n, text="[image]", name="image")

    def _user_text(self, r: Record, text: str, off: int, n: int) -> None:
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
            cm = COMMAND_NAME.search(stripped)
            if cm:
                name = "command"
                text = cm.group(1).strip()
            t, cut = cap(text)
            self.emit(ev.CONTEXT, off, n, name=name, text=t, truncated=cut)
            return
        if INTERRUPT.match(stripped):
            self.emit(ev.INTERRUPT, off, n, text=stripped)
            return
        t, cut = cap(text)
        if self.is_sub:
            # A sub-agent's prompts come from its lead, not from the human.
            first = not self.seen_first_prompt and r.parentUuid is None
            self.seen_first_prompt = True
            if first:
                self.shared.sub_orders.setdefault(self.agent, t)
                return  # the lead's ORDER event already carries this text
            self.emit(ev.ORDER, off, n, text=t, truncated=cut, target=self.agent)
            return
        self.emit(ev.PROMPT, off, n, text=t, truncated=cut)

    def _tool_result(self, r: Record, b: Block, off: int, n: int) -> None:
        cid = b.tool_use_id or ""
        ok = not b.is_error
        size = len(b.content)
        lead = self.shared.agent_calls.get(cid)
        detail = ""
        if lead is not None:
            res = agent_result(r.toolUseResult)
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
        if ok and len(r.toolUseResult) < 4096:
            try:
                bg = decode_bash_result(r.toolUseResult)
            except msgspec.MsgspecError:
                bg = None
            if bg is not None and bg.backgroundTaskId:
                detail = "background"
                self.shared.background_shells[bg.backgroundTaskId] = cid
        self.emit(ev.TOOL_RESULT, off, n, id=cid, ok=ok, size=size, detail=detail)

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

    def _system(self, r: Record, off: int, n: int) -> None:
        st = r.subtype or ""
        if st == "compact_boundary":
            self.emit(ev.COMPACTION, off, n, text="Conversation compacted", detail=compact_detail(r.compactMetadata))
        elif st == "api_error":
            self.emit(ev.ERROR, off, n, text=error_text(r.error), name="api_error")
        elif st == "turn_duration" and r.pendingBackgroundAgentCount:
            self.emit(
                ev.CONTEXT,
                off,
                n,
                name="background_agents",
                size=r.pendingBackgroundAgentCount,
                text=f"{r.pendingBackgroundAgentCount} background agent(s) still running",
            )
        elif st == "local_command":
            self.emit(ev.CONTEXT, off, n, name="command", text=str_of(r.content))


class SessionState:
    """What spans the files of one Claude session while it is read."""

    def __init__(self) -> None:
        self.counted: set[str] = set()  # message ids whose usage was counted
        self.agent_calls: dict[str, str] = {}  # Agent tool_use id -> the agent that called it
        self.agent_by_call: dict[str, str] = {}  # Agent tool_use id -> sub-agent id (from meta.json)
        self.sub_orders: dict[str, str] = {}  # sub-agent id -> its first prompt
        self.background_agents: set[str] = set()
        self.background_shells: dict[str, str] = {}  # task id -> Bash call id
        self.custom_title = ""
        self.ai_title = ""
        self.permission_mode = ""


# What `huddle usage` needs: model responses (usage) and what names a session (typed
# prompts, titles). User records say early on (within their first bytes) whether they
# hold a typed prompt or tool results, the bulk of a transcript's bytes: those are
# passed over without scanning them. Any other record is kept if it is a response.
_TITLE_PREFIXES = (b'{"type":"custom-title"', b'{"type":"ai-title"', b'{"type":"summary"', b'{"type":"last-prompt"')


def wanted_for_usage(line: bytes) -> bool:
    if line.find(b'"type":"user"', 0, 512) >= 0:
        return line.find(b'"role":"user","content":"', 0, 768) >= 0
    return line.startswith(_TITLE_PREFIXES) or line.find(b'"type":"assistant"') >= 0
