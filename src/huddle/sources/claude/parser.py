"""Claude Code transcript lines -> events: the parser of one file (state.py holds what
spans a session's files while they are read; records.py the decoded shapes and the text
helpers; skips.py the lines a read passes over)."""

from __future__ import annotations

from typing import Any

import msgspec

from huddle.io.reader import Cut, Skip
from huddle.model import events as ev
from huddle.model import times
from huddle.model.events import Event, cap
from huddle.model.session import Session
from huddle.model.times import parse_time
from huddle.model.tools import HANDBACK_TOOLS, SPAWN_TOOLS

from .records import (
    ATTACHMENT_KEY,
    INTERRUPT,
    QUIET_ATTACHMENTS,
    RESULT_TAG,
    SKIP_TYPES,
    STATUS_TAG,
    SUMMARY_TAG,
    TASK_ID_TAG,
    TOOL_USE_ID_TAG,
    WARMUP,
    Block,
    Record,
    Response,
    ResponseBlock,
    agent_input,
    agent_result,
    compact_detail,
    decode_bash_result,
    decode_record,
    error_text,
    first_match,
    harness_blocks,
    input_summary,
    order_text,
    report_of,
    str_of,
    summary_text,
    typed_command,
)
from .responses import ResponseCounts
from .skips import UsageFilter, compact, meta_skips
from .state import SessionState, claims


class FileParser(ResponseCounts):
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
        self.agent = agent  # who the record being read is from
        self.is_sub = is_sub
        self.lead = agent  # this file's own agent
        self.file_is_sub = is_sub
        # the session id a main file's records carry; another one marks a copied record
        self.own_session = "" if is_sub or agent.startswith("agent-") else agent
        # 1.0.x / early 2.0.x sub-agents sit inline in a session file (isSidechain records);
        # a 2.0.x agent file read as an orphan session is all one agent's, sidechain-marked too
        self.inline_sidechains = not is_sub and not agent.startswith("agent-")
        # Only responses and what names the session and its agents are read, once the file
        # has a first time (its first records are read whole: the start is a full read's).
        self.usage_only = False
        self.quick_later = usage_only
        self.filter = UsageFilter(shared) if usage_only else None
        self.last_t: float | None = None
        self.prompted: set[str] = set()  # agents whose first prompt was read
        self.out: list[Event] = []

    # -- helpers -------------------------------------------------------------------

    def emit(self, kind: str, off: int, ln: int, **kw: Any) -> Event:
        e = Event(kind=kind, agent=self.agent, t=self.last_t, file=self.path, offset=off, length=ln, **kw)
        self.out.append(e)
        return e

    def feed(self, off: int, line: bytes) -> None:
        if not self.skip(line, 0, len(line)):
            self.feed_kept(off, line)

    @property
    def skip(self) -> Skip:
        """The lines `feed` passes over, judged in the reader's buffer (LineReader.lines)."""
        return meta_skips if self.filter is None else self.filter.skip

    @property
    def cut(self) -> Cut | None:
        """The long lines a usage-only read passes over by their head (LineReader.lines)."""
        return None if self.filter is None else self.filter.skips_head

    def feed_kept(self, off: int, line: bytes) -> None:
        """`feed` for a line `skip` kept."""
        i = line.find(ATTACHMENT_KEY, 0, 300)
        if i >= 0:
            start = i + len(ATTACHMENT_KEY)
            end = line.find(b'"', start, start + 64)
            if end > 0 and line[start:end].decode("ascii", "replace") in QUIET_ATTACHMENTS:
                return
        r: Response | None = self._response_of(line) if self.usage_only else None
        if r is None:
            try:
                r = decode_record(line)
            except msgspec.ValidationError as exc:  # a subclass of DecodeError: first
                self.session.problem(self.path, off, f"unexpected shape ({exc})")
                return
            except msgspec.DecodeError as exc:
                self.session.problem(self.path, off, f"not JSON ({exc})")
                return
            t = r.type
            if not t and r.message is not None and r.message.role in ("assistant", "user"):
                t = r.message.role  # a record that names no type (tools' fixtures): its message says
            if t in SKIP_TYPES:
                return
        else:
            t = "assistant"
        if r.timestamp:
            ts = parse_time(r.timestamp)
            if ts is not None:
                self.last_t = ts
            elif times.out_of_range(r.timestamp):  # year 9999: kept out of the times, and said
                self.session.note(self.path, off, times.odd(r.timestamp))
        if r.cwd and not self.session.cwd:
            self.session.cwd = r.cwd
        mark = len(self.out)
        try:
            if type(r) is Record:
                self._record(r, t, off, line)
            else:
                self._response(r, off, len(line))
        except Exception as exc:  # decoded, but holding what the code did not expect: costs its line
            del self.out[mark:]
            self.session.problem(self.path, off, f"unexpected {t or 'record'}: {type(exc).__name__}: {exc}")
        if self.quick_later and self.filter is not None:
            if not compact(line):  # a file in another hand than Claude Code's: read whole
                self.quick_later = False
            elif self.last_t is not None and len(self.out) > mark:  # the file's first time is in
                self.quick_later, self.usage_only, self.filter.whole = False, True, False

    def _record(self, r: Record, t: str, off: int, line: bytes) -> None:
        if r.isSidechain and self.inline_sidechains:
            # 1.0.x / early 2.0.x: a sub-agent's records inline in the session file
            self.agent = self._sidechain(r)
            self.is_sub = True
        elif self.agent != self.lead:
            self.agent = self.lead
            self.is_sub = self.file_is_sub
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
        elif t == "summary" and r.leafUuid:
            # Older versions write summaries of *other* sessions at the top of a file: one
            # belongs to the session holding its leafUuid (placed across the folder: summaries.py).
            text = summary_text(line)
            if text:
                self.shared.summaries[r.leafUuid] = text
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

    def _sidechain(self, r: Record) -> str:
        """The inline sub-agent a sidechain record belongs to. A sidechain starts at a
        record with no parent (its order, the text of a `Task` call of its caller);
        the rest follow `parentUuid`."""
        st = self.shared
        agent = st.sidechain_of.get(r.parentUuid) if r.parentUuid else None
        if agent is None and r.parentUuid and st.sidechain_of:
            agent = st.last_sidechain  # a parent we never saw: the sidechain being written
        if agent is None:
            agent = "sidechain-" + (r.uuid or f"{len(st.sidechain_of)}")[:36]
            st.last_sidechain = agent
            if self.filter is not None:
                self.filter.sidechains = True
            caller = self.lead
            call = self._task_call_for(order_text(r))
            if call is not None:
                cid, caller = call
                st.agent_by_call[cid] = agent
            self.session.agent(agent, parent=caller, name=agent, file=self.path)
        if r.uuid:
            st.sidechain_of[r.uuid] = agent
        return agent

    def _task_call_for(self, order: str) -> tuple[str, str] | None:
        """The open `Task` call whose prompt is this sidechain's order (else the oldest
        open one: parallel calls start their sidechains in any order)."""
        calls = self.shared.open_calls
        if not calls:
            return None
        pick = next((c for c in calls if order and c[1] == order), calls[0])
        calls.remove(pick)
        return pick[0], pick[2]

    # -- record kinds --------------------------------------------------------------

    def _assistant(self, r: Record, off: int, n: int) -> None:
        m = r.message
        if m is None:
            return
        copied = bool(r.requestSessionId) and r.requestSessionId != (r.sessionId or self.session.id)
        mid = m.id or ""
        if self._count(r, m, off, n, copied) and not self.usage_only:
            # (what the output count is worth: said by a session's page, not by usage)
            self.shared.check_output(mid, m.content)
        if self.usage_only:  # of the blocks, only the Agent calls: they name the agents they start
            if isinstance(m.content, list):
                for b in m.content:
                    if b.type == "tool_use" and b.name in SPAWN_TOOLS:
                        self._tool_use(b, off, n, copied)
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
        if m.stop_reason == "end_turn" and not (mid and mid in self.shared.turn_ended):
            # Each block record repeats stop_reason: one turn end per response, at its first
            # record. Not "after the last block": a live read cannot know which is last (a
            # refresh falls between the blocks of a response as it streams), and a live read
            # must give the events a cold one does. Its later blocks do not reopen the turn.
            if mid:
                self.shared.turn_ended.add(mid)
            self.emit(ev.TURN_END, off, n, id=mid, copied=copied)

    def _tool_use(self, b: ResponseBlock, off: int, n: int, copied: bool) -> None:
        name = b.name or ""
        cid = b.id or ""
        if name in SPAWN_TOOLS:
            inp = agent_input(b.input)
            if claims(self.agent, self.shared.agent_calls.get(cid)):  # (not a replay's copy of it)
                self.shared.agent_calls[cid] = self.agent
            if not self.file_is_sub and not copied:
                self.shared.open_calls.append((cid, (inp.get("prompt") or "").strip(), self.agent))
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
            self._user_text(r, self._unwrap(c, off, n), off, n)
            return
        if not c:
            return
        # One user record is one prompt: its text blocks and images together, minus the
        # harness context riding along (IDE blocks, reminders).
        texts: list[str] = []
        images = 0
        for b in c:
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
        if images:
            texts.append("[image]" if images == 1 else f"[{images} images]")
        if texts:
            self._user_text(r, "\n\n".join(texts), off, n, name="image" if images and len(texts) == 1 else "")

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
            # A sub-agent's prompts come from its lead, not from the human.
            first = self.agent not in self.prompted and r.parentUuid is None
            self.prompted.add(self.agent)
            if first:
                self.shared.sub_orders.setdefault(self.agent, t)
                if t.strip() == WARMUP:
                    self.shared.warmups.add(self.agent)
                return  # the lead's ORDER event already carries this text
            self.emit(ev.ORDER, off, n, text=t, truncated=cut, target=self.agent)
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
        elif st == "local_command":  # the command typed, or what it printed (harness output)
            text = str_of(r.content)
            cmd = typed_command(text)
            self.emit(ev.CONTEXT, off, n, name="command" if cmd else "meta", text=cmd or text)
