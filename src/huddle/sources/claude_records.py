"""Claude Code transcript lines -> events.

Typed decoding of only the fields huddle needs: msgspec skips the rest (request
blobs, tool outputs, file snapshots) without building Python objects for them.
One permissive struct per level, `type: str`, never a tagged union: Claude Code
adds block and record types every release.
"""

from __future__ import annotations

import re

import msgspec
from msgspec import Raw

from .. import events as ev
from ..events import Event, Usage, cap, one_line
from ..session import Session, parse_time


class Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: Raw = Raw(b"null")
    tool_use_id: str | None = None
    content: Raw = Raw(b"null")
    is_error: bool | None = None


class CacheCreation(msgspec.Struct):
    ephemeral_1h_input_tokens: int | None = 0


class ClaudeUsage(msgspec.Struct):
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0
    cache_creation: CacheCreation | None = None  # 5m / 1h split of the cache writes


class Message(msgspec.Struct):
    id: str | None = None
    role: str | None = None
    model: str | None = None
    content: str | list[Block] | None = None
    stop_reason: str | None = None
    usage: ClaudeUsage | None = None


class Attachment(msgspec.Struct):
    type: str = ""


class Origin(msgspec.Struct):
    kind: str | None = None


class Record(msgspec.Struct):
    type: str = ""
    subtype: str | None = None
    timestamp: str | None = None
    sessionId: str | None = None
    agentId: str | None = None
    cwd: str | None = None
    parentUuid: str | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    isAbortedMidStream: bool | None = None
    message: Message | None = None
    toolUseResult: Raw = Raw(b"null")
    origin: Origin | None = None
    requestSessionId: str | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    title: str | None = None
    lastPrompt: str | None = None
    attachment: Attachment | None = None
    content: Raw = Raw(b"null")
    compactMetadata: Raw = Raw(b"null")
    error: Raw = Raw(b"null")
    pendingBackgroundAgentCount: int | None = None
    permissionMode: str | None = None


class AgentResult(msgspec.Struct):
    """The structured `toolUseResult` of an Agent call."""

    status: str | None = None
    agentId: str | None = None
    agentType: str | None = None
    isAsync: bool | None = None
    content: list[Block] | None = None
    handbackReport: str | None = None


class BashResult(msgspec.Struct):
    backgroundTaskId: str | None = None


_decode_record = msgspec.json.Decoder(Record).decode
_decode_agent_result = msgspec.json.Decoder(AgentResult).decode
_decode_bash_result = msgspec.json.Decoder(BashResult).decode
_decode_blocks = msgspec.json.Decoder(str | list[Block] | None).decode
_decode_any = msgspec.json.Decoder().decode

# Metadata records huddle never needs; recognised from their first bytes, not decoded.
_SKIP_PREFIXES = (
    b'{"type":"api-request',
    b'{"type":"file-history',
    b'{"type":"queue-operation',
    b'{"type":"atis-latch',
    b'{"type":"tools-used',
)
_SKIP_TYPES = frozenset(
    {
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "atis-latch",
        "tools-used",
        "mode",
        "progress",
        "agent-name",
        "agent-color",
        "agent-setting",
    }
)
AGENT_TOOLS = frozenset({"Agent", "Task"})
QUESTION_TOOLS = frozenset({"AskUserQuestion"})
HANDBACK_TOOL = "SubagentHandback"
# Attachments that are per-request bookkeeping (the environment, date, tool and skill
# listings re-sent every turn), not context a person would want to see. They are a
# third of a transcript's bytes: recognised from their first bytes, never decoded.
_QUIET_ATTACHMENTS = frozenset(
    {
        "prompt_snapshot",
        "total_tokens_reminder",
        "deferred_tools_record",
        "deferred_tools_delta",
        "environment",
        "model",
        "session_context",
        "date",
        "remote_session_change",
        "agent_listing_delta",
        "skill_listing",
        "auto_mode",
    }
)
_ATTACHMENT_KEY = b'"attachment":{"type":"'

_INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]")
_TAG = lambda name: re.compile(rf"<{name}>(.*?)</{name}>", re.S)  # noqa: E731
_TASK_ID = _TAG("task-id")
_TOOL_USE_ID = _TAG("tool-use-id")
_STATUS = _TAG("status")
_RESULT = _TAG("result")
_SUMMARY = _TAG("summary")
_COMMAND_NAME = _TAG("command-name")
_HANDBACK_MARK = "The report follows:\n"
_TRAILER = re.compile(r"\n(agentId: [0-9a-z]+ \(|<usage>)")


def usage_of(u: ClaudeUsage) -> Usage:
    cache_write = u.cache_creation_input_tokens or 0
    one_hour = (u.cache_creation.ephemeral_1h_input_tokens or 0) if u.cache_creation else 0
    return Usage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_read=u.cache_read_input_tokens or 0,
        cache_write=cache_write,
        cache_write_1h=min(one_hour, cache_write),  # 1-hour writes cost 2x input, 5-minute 1.25x
    )


def text_of(raw: Raw) -> str:
    """The text of a tool_result `content` (a string or a list of blocks)."""
    try:
        val = _decode_blocks(raw)
    except msgspec.MsgspecError:
        return ""
    if val is None:
        return ""
    if isinstance(val, str):
        return val
    return "\n".join(b.text for b in val if b.type == "text" and b.text)


def strip_handback(text: str) -> str:
    """The report inside an Agent tool_result: drop the harness frame around it."""
    i = text.find(_HANDBACK_MARK)
    if i >= 0:
        text = text[i + len(_HANDBACK_MARK) :]
        m = _TRAILER.search(text)
        if m:
            text = text[: m.start()]
        lines = text.split("\n")
        text = "\n".join(line[2:] if line.startswith("  ") else line for line in lines)
    return text.strip()


def input_summary(name: str, raw: Raw) -> str:
    """A short, telling summary of a tool's input (a command, a file, a pattern...)."""
    if len(raw) > 200_000:  # a huge Write: do not build it just to summarise it
        return f"{name} ({len(raw)} bytes of input)"
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    if not isinstance(val, dict):
        return one_line(str(val), 160) if val is not None else ""
    for key in ("description", "command", "file_path", "path", "pattern", "url", "query", "prompt", "subject", "skill"):
        v = val.get(key)
        if isinstance(v, str) and v:
            if key == "description" and isinstance(val.get("command"), str):
                return one_line(f"{v}: {val['command']}", 160)
            return one_line(v, 160)
    if isinstance(val.get("questions"), list) and val["questions"]:
        q = val["questions"][0]
        if isinstance(q, dict) and isinstance(q.get("question"), str):
            return one_line(q["question"], 160)
    if isinstance(val.get("todos"), list):
        return f"{len(val['todos'])} todos"
    return one_line(msgspec.json.encode(val).decode(), 160)


class FileParser:
    """Turns the lines of one transcript file into events for one agent.

    State that spans lines (which call ids are Agent calls, the last time seen,
    which message ids were counted) lives here or, where it spans files, in the
    shared `SessionState`.
    """

    def __init__(self, session: Session, shared: "SessionState", path: str, agent: str, is_sub: bool):
        self.session = session
        self.shared = shared
        self.path = path
        self.agent = agent
        self.is_sub = is_sub
        self.last_t: float | None = None
        self.seen_first_prompt = False
        self.out: list[Event] = []

    # -- helpers -------------------------------------------------------------------

    def emit(self, kind: str, off: int, ln: int, **kw) -> Event:
        e = Event(kind=kind, agent=self.agent, t=self.last_t, file=self.path, offset=off, length=ln, **kw)
        self.out.append(e)
        return e

    def feed(self, off: int, line: bytes) -> None:
        if line.startswith(_SKIP_PREFIXES):
            return
        i = line.find(_ATTACHMENT_KEY, 0, 300)
        if i >= 0:
            start = i + len(_ATTACHMENT_KEY)
            end = line.find(b'"', start, start + 64)
            if end > 0 and line[start:end].decode("ascii", "replace") in _QUIET_ATTACHMENTS:
                return
        try:
            r = _decode_record(line)
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        except msgspec.ValidationError as exc:
            self.session.problem(self.path, off, f"unexpected shape ({exc})")
            return
        t = r.type
        if t in _SKIP_TYPES:
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
            if a not in _QUIET_ATTACHMENTS:
                self.emit(ev.CONTEXT, off, n, name=a or "attachment", text=a)
        elif t == "custom-title" and r.customTitle:
            if r.customTitle != self.shared.custom_title:
                self.shared.custom_title = r.customTitle
                self.emit(ev.TITLE, off, n, text=r.customTitle)
        elif t in ("ai-title", "summary"):
            title = r.aiTitle or r.title or ""
            if not title and t == "summary":
                title = _summary_text(line)
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
        if name in AGENT_TOOLS:
            inp = _agent_input(b.input)
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
        if name == HANDBACK_TOOL:
            inp = _agent_input(b.input)
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
                if _INTERRUPT.match(b.text):
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
            cm = _COMMAND_NAME.search(stripped)
            if cm:
                name = "command"
                text = cm.group(1).strip()
            t, cut = cap(text)
            self.emit(ev.CONTEXT, off, n, name=name, text=t, truncated=cut)
            return
        if _INTERRUPT.match(stripped):
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
            res = _agent_result(r.toolUseResult)
            if res is not None and (res.isAsync or res.status == "async_launched"):
                detail = "background"
                if res.agentId:
                    self.shared.background_agents.add(res.agentId)
            self.emit(ev.TOOL_RESULT, off, n, id=cid, name="Agent", ok=ok, size=size, detail=detail)
            if detail != "background":
                report = _report_of(res, b.content)
                text, cut = cap(report)
                target = (res.agentId if res and res.agentId else "") or self.shared.agent_by_call.get(cid, "")
                self.emit(ev.REPORT, off, n, id=cid, text=text, truncated=cut, ok=ok, target=target)
            return
        if ok and len(r.toolUseResult) < 4096:
            try:
                bg = _decode_bash_result(r.toolUseResult)
            except msgspec.MsgspecError:
                bg = None
            if bg is not None and bg.backgroundTaskId:
                detail = "background"
                self.shared.background_shells[bg.backgroundTaskId] = cid
        self.emit(ev.TOOL_RESULT, off, n, id=cid, ok=ok, size=size, detail=detail)

    def _notification(self, text: str, off: int, n: int) -> None:
        task = _first(_TASK_ID, text)
        call = _first(_TOOL_USE_ID, text) or self.shared.background_shells.get(task, "")
        status = _first(_STATUS, text)
        ok = status in ("completed", "")
        result = _first(_RESULT, text) or _first(_SUMMARY, text)
        t, cut = cap(result)
        if call in self.shared.agent_calls or task in self.shared.background_agents:
            target = task or self.shared.agent_by_call.get(call, "")
            self.emit(ev.REPORT, off, n, id=call, text=t, truncated=cut, ok=ok, target=target, name="task-notification")
        else:
            self.emit(ev.TOOL_RESULT, off, n, id=call, ok=ok, size=len(result), detail="notified")

    def _system(self, r: Record, off: int, n: int) -> None:
        st = r.subtype or ""
        if st == "compact_boundary":
            self.emit(ev.COMPACTION, off, n, text="Conversation compacted", detail=_compact_detail(r.compactMetadata))
        elif st == "api_error":
            self.emit(ev.ERROR, off, n, text=_error_text(r.error), name="api_error")
        elif st == "turn_duration" and r.pendingBackgroundAgentCount:
            self.emit(ev.CONTEXT, off, n, name="background_agents", size=r.pendingBackgroundAgentCount,
                      text=f"{r.pendingBackgroundAgentCount} background agent(s) still running")
        elif st == "local_command":
            self.emit(ev.CONTEXT, off, n, name="command", text=_str_of(r.content))


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


def _first(rx: re.Pattern, text: str) -> str:
    m = rx.search(text)
    return m.group(1).strip() if m else ""


def _agent_input(raw: Raw) -> dict:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return {}
    return {k: v for k, v in val.items() if isinstance(v, str)} if isinstance(val, dict) else {}


def _agent_result(raw: Raw) -> AgentResult | None:
    if len(raw) < 2 or memoryview(raw)[:1] != b"{":
        return None
    try:
        return _decode_agent_result(raw)
    except msgspec.MsgspecError:
        return None


def _report_of(res: AgentResult | None, content: Raw) -> str:
    if res is not None:
        if res.handbackReport:
            return res.handbackReport
        if res.content:
            texts = [b.text for b in res.content if b.type == "text" and b.text]
            texts = [t for t in texts if not t.lstrip().startswith("<tools-used-before-summary>")]
            if texts:
                return texts[-1].strip()
    return strip_handback(text_of(content))


def _compact_detail(raw: Raw) -> str:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    if not isinstance(val, dict):
        return ""
    parts = [str(val.get("trigger") or "")]
    if val.get("preTokens"):
        parts.append(f"{val['preTokens']} -> {val.get('postTokens', '?')} tokens")
    return ", ".join(p for p in parts if p)


def _error_text(raw: Raw) -> str:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return "API error"
    if isinstance(val, dict):
        return str(val.get("formatted") or val.get("message") or "API error")[:300]
    return "API error"


def _str_of(raw: Raw) -> str:
    try:
        val = _decode_any(raw)
    except msgspec.MsgspecError:
        return ""
    return val if isinstance(val, str) else ""


def _summary_text(line: bytes) -> str:
    try:
        val = _decode_any(line)
    except msgspec.MsgspecError:
        return ""
    s = val.get("summary") if isinstance(val, dict) else None
    return s if isinstance(s, str) else ""
