"""Claude Code transcript lines -> events: the parser of one file (state.py holds what
spans a session's files while they are read; records.py the decoded shapes and the text
helpers; skips.py the lines a read passes over; users.py the user records, responses.py
a response's counts)."""

from __future__ import annotations

import msgspec

from huddle.io.reader import Cut, Skip
from huddle.model import events as ev
from huddle.model import times
from huddle.model.events import Event, cap
from huddle.model.session import Session
from huddle.model.times import parse_time
from huddle.model.tools import HANDBACK_TOOLS, SPAWN_TOOLS

from .records import (
    AGENT_PROGRESS,
    ATTACHMENT_KEY,
    QUIET_ATTACHMENTS,
    SKIP_TYPES,
    Block,
    Message,
    Record,
    Response,
    ResponseBlock,
    agent_input,
    compact_detail,
    decode_record,
    error_text,
    input_summary,
    order_text,
    str_of,
    summary_text,
    typed_command,
)
from .responses import ResponseCounts
from .skips import UsageFilter, compact, meta_skips
from .state import SessionState, claims
from .users import UserRecords


def _quiet_attachment(line: bytes, start: int = 0) -> bool:
    """An attachment record of a kind said nowhere, told by its head (not decoded). The
    key is looked for from `start`: no key starts before it (FileParser.feed_kept)."""
    i = line.find(ATTACHMENT_KEY, start, 300)
    if i < 0:
        return False
    start = i + len(ATTACHMENT_KEY)
    end = line.find(b'"', start, start + 64)
    return end > 0 and line[start:end].decode("ascii", "replace") in QUIET_ATTACHMENTS


_BRACE_IN_KEY = ATTACHMENT_KEY.index(b"{")  # a key starts this far before its first brace


class FileParser(UserRecords, ResponseCounts):
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
        """`feed` for a line `skip` kept. (Decoding, the record's time and its dispatch
        are inlined: this runs for every line of every transcript.)"""
        # The attachment key holds a brace: where a line's head has none (most), no key.
        brace = line.find(b"{", _BRACE_IN_KEY, 300)  # (a byte's search: memchr)
        if brace >= 0 and _quiet_attachment(line, brace - _BRACE_IN_KEY):
            return
        r: Record | Response | None = self._response_of(line) if self.usage_only else None
        if r is not None:
            t = "assistant"
        else:
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
            if t in SKIP_TYPES and not (t == "progress" and AGENT_PROGRESS in line):
                return  # (but a sub-agent's progress: its responses, mirrored)
        stamp = r.timestamp  # the record's time (one out of range said, and kept out of the times)
        if stamp:
            at = parse_time(stamp)
            if at is not None:
                self.last_t = at
            elif times.out_of_range(stamp):  # year 9999
                self.session.note(self.path, off, times.odd(stamp))
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
            self._quick_from(line, mark, self.filter)

    def _quick_from(self, line: bytes, mark: int, filter: UsageFilter) -> None:
        """A usage-only read goes quick once the file's first time is in (a file in another
        hand than Claude Code's, its lines not compact, is read whole)."""
        if not compact(line):
            self.quick_later = False
        elif self.last_t is not None and len(self.out) > mark:
            self.quick_later, self.usage_only, filter.whole = False, True, False

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
        elif t in ("custom-title", "summary", "ai-title"):
            self._title(r, t, off, line)
        elif t == "progress":
            self._progress(line, off, n)
        else:
            self._mark(r, t, off, n)

    def _mark(self, r: Record, t: str, off: int, n: int) -> None:
        """What marks the session beside its turns: an attachment, the last prompt, an
        exit, the permission mode."""
        if t == "attachment":
            a = r.attachment.type if r.attachment else ""
            if a not in QUIET_ATTACHMENTS:
                self.emit(ev.CONTEXT, off, n, name=a or "attachment", text=a)
        elif t == "last-prompt" and r.lastPrompt:
            self.session.last_prompt = r.lastPrompt
        elif t == "cost-state":
            # Interactive sessions write cost-state only at exit; -p runs at their end.
            # After the last turn it means the process is gone (a new prompt revives it).
            self.emit(ev.CONTEXT, off, n, name="session_end", text="session ended")
        elif t == "permission-mode" and r.permissionMode:
            self.shared.permission_mode = r.permissionMode

    def _title(self, r: Record, t: str, off: int, line: bytes) -> None:
        """A title the user gave, one Claude Code made, or an older version's summary."""
        n = len(line)
        if t == "custom-title" and r.customTitle:
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
        if self.usage_only:  # of the blocks, only the Agent calls: they name the agents they start
            self._count(r, m, off, n, copied)
            for b in m.content if isinstance(m.content, list) else ():
                if b.type == "tool_use" and b.name in SPAWN_TOOLS:
                    self._tool_use(b, off, n, copied)
            return
        if self._count(r, m, off, n, copied):
            # (what the output count is worth: said by a session's page, not by usage)
            self.shared.check_output(mid, m.content)
        self._blocks(m, mid, off, n, copied)
        if m.stop_reason == "end_turn" and not (mid and mid in self.shared.turn_ended):
            # Each block record repeats stop_reason: one turn end per response, at its first
            # record. Not "after the last block": a live read cannot know which is last (a
            # refresh falls between the blocks of a response as it streams), and a live read
            # must give the events a cold one does. Its later blocks do not reopen the turn.
            if mid:
                self.shared.turn_ended.add(mid)
            self.emit(ev.TURN_END, off, n, id=mid, copied=copied)

    def _blocks(self, m: Message, mid: str, off: int, n: int, copied: bool) -> None:
        """A response's blocks: texts (a synthetic error's as an error), thinking, calls."""
        c = m.content
        if isinstance(c, list):
            blocks = c
        elif isinstance(c, str) and c:
            blocks = [Block(type="text", text=c)]
        else:
            return
        out, agent, at, path = self.out, self.agent, self.last_t, self.path
        for b in blocks:  # (emit's events, made here: a block is an event, its call cost half of it)
            bt = b.type
            if bt == "text" and b.text:
                text, cut = cap(b.text)
                kind = ev.ERROR if m.model == "<synthetic>" and "error" in b.text.lower()[:40] else ev.SAY
                out.append(
                    Event(
                        kind=kind, agent=agent, t=at, file=path, offset=off, length=n,
                        id=mid, text=text, truncated=cut, copied=copied,
                    )
                )  # fmt: skip
            elif bt == "thinking" and b.thinking:
                text, cut = cap(b.thinking)
                out.append(
                    Event(
                        kind=ev.THINK, agent=agent, t=at, file=path, offset=off, length=n,
                        text=text, truncated=cut, copied=copied,
                    )
                )  # fmt: skip
            elif bt in ("tool_use", "server_tool_use"):
                self._tool_use(b, off, n, copied)

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
        detail = input_summary(name, b.input)
        self.out.append(
            Event(
                kind=ev.TOOL_CALL, agent=self.agent, t=self.last_t, file=self.path, offset=off, length=n,
                id=cid, name=name, detail=detail, copied=copied,
            )
        )  # fmt: skip

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
