"""One Qwen Code chat file (the lead's or a sub-agent's) -> events for one agent.

What the file says, and what it leaves out:
- One `assistant` record per model response, with its `usageMetadata` (prompt tokens
  include the cached ones, candidates include the thoughts: nothing is added twice).
  A sub-agent's first response is split in two records: the usage with no parts, then
  its calls with no usage. Each record with usage is one response, named by its uuid.
- `ui_telemetry` records repeat the lead's usage, and add its sub-agents' and the CLI's
  own side calls (memory extraction...): never counted. An `api_error` among them is.
- No record marks the end of a turn: a response with text and no calls ends it (the
  CLI answers with no calls only when it is done). None marks an approval question.
- The agent tool's result says whether its sub-agent runs in the foreground (its
  answer is the result: a report) or in the background (launched: its answer comes
  later as a `<task-notification>` user record).
- `/branch` copies records into a new session with `forkedFrom`: shown, counted once
  (in the session they name).
"""

from __future__ import annotations

from typing import Any

import msgspec

from huddle.model import events as ev
from huddle.model import times
from huddle.model.doing import input_summary
from huddle.model.events import Event, Usage, cap, one_line
from huddle.model.session import Session
from huddle.model.tools import SHELL_TOOLS, SPAWN_TOOLS

from . import records as rec

AGENT_TOOLS = SPAWN_TOOLS  # Qwen Code: `agent` (`task` before it was renamed)
CONTEXT_KEEP = 600  # harness text kept per context event; the rest is read back from the file


class Links:
    """What spans the files of one session: the lead's calls that started sub-agents."""

    def __init__(self) -> None:
        self.agent_calls: dict[str, str] = {}  # spawning call id -> the agent that made it
        self.orders: dict[str, str] = {}  # sub-agent id -> its first prompt, from its own file
        self.model = ""  # the lead's model: a sub-agent's records name none


class ChatParser:
    def __init__(self, session: Session, links: Links, agent: str, parent: str | None, path: str):
        self.session = session
        self.links = links
        self.agent = agent
        self.parent = parent  # None for the lead
        self.path = path
        self.out: list[Event] = []
        self.calls: dict[str, str] = {}  # call id -> tool name
        self.prompted = False  # a sub-agent's first prompt (its order) was read
        self.title: tuple[str, str] | None = None
        self.model = ""
        self.last_t: float | None = None
        self.copied = False
        self.origin = ""
        self.nameless: list[Event] = []  # usage whose model no record named yet (a sub-agent's)

    def emit(self, kind: str, t: float | None, off: int, n: int, agent: str | None = None, **kw: Any) -> Event:
        if t is None:
            t = self.last_t
        else:
            self.last_t = t
        e = Event(kind=kind, agent=agent or self.agent, t=t, file=self.path, offset=off, length=n, **kw)
        if self.copied:
            e.copied = True
        self.out.append(e)
        return e

    # -- lines -------------------------------------------------------------------------

    def feed(self, off: int, line: bytes) -> None:
        try:
            r = rec.decode_record(line)
        except msgspec.ValidationError as exc:  # (a subclass of DecodeError: first)
            self.session.problem(self.path, off, f"unexpected record ({exc})")
            return
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        kind = r.type
        if kind == "system" and _silent(r):
            return  # (most of a file: telemetry and snapshots, no event and no time wanted)
        t = rec.when(r.timestamp)
        if t is None and times.out_of_range(r.timestamp):  # year 9999: kept out of the times, and said
            self.session.note(self.path, off, times.odd(r.timestamp))
        if r.cwd and self.parent is None and not self.session.cwd:
            self.session.cwd = r.cwd
        fork = r.forkedFrom.sessionId if r.forkedFrom is not None else None
        self.copied = bool(fork) and fork != self.session.id
        self.origin = fork or "" if self.copied else ""
        n = len(line)
        if kind == "assistant":
            self._response(r, t, off, n)
        elif kind == "tool_result":
            self._results(r, self._parts(r, off), t, off, n)
        elif kind == "user":
            self._user(r, t, off, n)
        elif kind == "system":
            self._system(r, t, off, n)

    def _parts(self, r: rec.Record, off: int) -> list[rec.Part]:
        if not r.message:
            return []
        try:
            m = rec.decode_message(r.message)
        except msgspec.DecodeError:
            self.session.note(self.path, off, "a message of an unexpected shape (its content not shown)")
            return []
        return m.parts or []

    # -- the model's side --------------------------------------------------------------

    def _response(self, r: rec.Record, t: float | None, off: int, n: int) -> None:
        ps = self._parts(r, off)
        mid = r.uuid or ""
        if r.model:
            self.model = r.model
            if self.parent is None:
                self.links.model = r.model
        thought = "\n".join(p.text for p in ps if p.text and p.thought)
        text = "\n".join(p.text for p in ps if p.text and not p.thought)
        if thought:
            body, cut = cap(thought)
            self.emit(ev.THINK, t, off, n, id=mid, text=body, truncated=cut)
        if text:
            body, cut = cap(text)
            self.emit(ev.SAY, t, off, n, id=mid, text=body, truncated=cut)
        tk = r.usageMetadata
        if tk is not None:
            cached = rec.count(tk.cachedContentTokenCount)
            prompt = rec.count(tk.promptTokenCount) + rec.count(tk.toolUsePromptTokenCount)
            u = Usage(input=max(prompt - cached, 0), output=rec.count(tk.candidatesTokenCount), cache_read=cached)
            e = self.emit(ev.USAGE, t, off, n, id=mid, name=r.model or self.model, usage=u)
            if self.origin:
                e.origin = self.origin
            if not e.name:
                self.nameless.append(e)  # named once the sub-agent's meta or its lead says the model
        calls = [p.functionCall for p in ps if p.functionCall is not None]
        for fc in calls:
            self._call(fc, t, off, n)
        if text and not calls:
            self.emit(ev.TURN_END, t, off, n, id=mid)

    def _call(self, fc: rec.FunctionCall, t: float | None, off: int, n: int) -> None:
        cid = fc.id or ""
        name = fc.name or ""
        if cid:
            self.calls[cid] = name
        args = rec.loose(fc.args)
        if name in AGENT_TOOLS:
            a = args if isinstance(args, dict) else {}
            prompt = _str(a, "prompt")
            kind = _str(a, "subagent_type") or "general-purpose"
            desc = _str(a, "description")
            if cid:
                self.links.agent_calls[cid] = self.agent
            body, cut = cap(prompt)
            # the sub-agent is keyed by the call that started it (its meta's toolUseId)
            self.emit(ev.ORDER, t, off, n, id=cid, name=kind, detail=desc, text=body, truncated=cut, target=cid)
            return
        self.emit(ev.TOOL_CALL, t, off, n, id=cid, name=name, detail=input_summary(args))

    # -- tool results ------------------------------------------------------------------

    def _results(self, r: rec.Record, ps: list[rec.Part], t: float | None, off: int, n: int) -> None:
        tcr = r.toolCallResult
        given = False
        for p in ps:
            fr = p.functionResponse
            if fr is None:
                continue
            given = True
            cid = fr.id or (tcr.callId if tcr is not None else None) or ""
            resp = rec.loose(fr.response)
            out = rec.response_text(resp)
            ok = not rec.failed_response(resp) and not (tcr is not None and tcr.status == "error")
            name = fr.name or self.calls.get(cid, "")
            if name in SHELL_TOOLS and rec.shell_failed(out):
                ok = False
            size = len(out.encode("utf-8", "replace"))
            if cid in self.links.agent_calls or name in AGENT_TOOLS:
                self._agent_result(tcr, cid, name, out, ok, size, t, off, n)
            else:
                self.emit(ev.TOOL_RESULT, t, off, n, id=cid, name=name, ok=ok, size=size)
        if not given and tcr is not None and tcr.callId:  # the CLI's account alone
            self.emit(ev.TOOL_RESULT, t, off, n, id=tcr.callId, ok=tcr.status != "error")

    def _agent_result(
        self,
        tcr: rec.CallResult | None,
        cid: str,
        name: str,
        out: str,
        ok: bool,
        size: int,
        t: float | None,
        off: int,
        n: int,
    ) -> None:
        shown = _display(tcr.resultDisplay) if tcr is not None else None
        background = shown is not None and "background" in (shown.executionMode, shown.status)
        if shown is not None and shown.status in ("failed", "cancelled", "error"):
            ok = False
        detail = "background" if background else ""
        self.emit(ev.TOOL_RESULT, t, off, n, id=cid, name=name or "agent", ok=ok, size=size, detail=detail)
        if not background:
            report = (shown.result if shown is not None and shown.result else "") or out
            body, cut = cap(report)
            self.emit(ev.REPORT, t, off, n, id=cid, text=body, truncated=cut, ok=ok, target=cid)

    # -- the human's (or the lead's) side ----------------------------------------------

    def _user(self, r: rec.Record, t: float | None, off: int, n: int) -> None:
        ps = self._parts(r, off)
        if any(p.functionResponse is not None for p in ps):
            self._results(r, ps, t, off, n)
        text = "\n".join(p.text for p in ps if p.text and not p.thought)
        if any(p.inlineData or p.fileData for p in ps):
            text = (text + "\n[attachment]").strip()
        if not text.strip():
            return
        stripped = text.lstrip()
        if r.subtype == "notification" or stripped.startswith("<task-notification>"):
            self._notification(stripped, t, off, n)
            return
        body, cut = cap(text)
        if r.subtype and r.subtype != "mid_turn_user_message":  # cron, a background task's note...
            self.emit(ev.CONTEXT, t, off, n, id=r.uuid or "", name=r.subtype, text=body[:CONTEXT_KEEP])
            return
        if self.parent is None:
            self.emit(ev.PROMPT, t, off, n, id=r.uuid or "", text=body, truncated=cut)
        elif not self.prompted:
            self.prompted = True  # its order: the lead's call carries it
            self.links.orders.setdefault(self.agent, body)
        else:  # more work for a sub-agent (send_message)
            self.emit(ev.ORDER, t, off, n, text=body, truncated=cut, target=self.agent)

    def _notification(self, text: str, t: float | None, off: int, n: int) -> None:
        call = rec.tag("tool-use-id", text) or rec.tag("task-id", text)
        status = rec.tag("status", text)
        ok = status in ("completed", "")
        result = rec.tag("result", text)
        body, cut = cap(result or text)
        if call in self.links.agent_calls:
            self.emit(
                ev.REPORT, t, off, n, id=call, text=body, truncated=cut, ok=ok, target=call, name="task-notification"
            )
        elif call:  # a background shell's (or monitor's) end
            self.emit(ev.TOOL_RESULT, t, off, n, id=call, ok=ok, size=len(result), detail="notified")
        else:
            self.emit(ev.CONTEXT, t, off, n, name="notification", text=body[:CONTEXT_KEEP])

    # -- the CLI's own records ---------------------------------------------------------

    def _system(self, r: rec.Record, t: float | None, off: int, n: int) -> None:
        st = r.subtype or ""
        try:
            pl = rec.decode_payload(r.systemPayload)
        except msgspec.DecodeError:
            self.session.note(self.path, off, f"a {st or 'system'} record of an unexpected shape")
            return
        if st == "custom_title":
            self._title(pl, t, off, n)
        elif st == "ui_telemetry":
            self._telemetry(pl, t, off, n)
        elif st == "chat_compression":
            self.emit(ev.COMPACTION, t, off, n, text="Conversation compacted")
        elif st == "slash_command" and pl.rawCommand and pl.phase != "result":
            self.emit(ev.CONTEXT, t, off, n, name="command", text=one_line(pl.rawCommand, 200))
        elif st == "turn_result" and pl.state == "cancelled":
            self.emit(ev.INTERRUPT, t, off, n, text="cancelled")
        elif st == "turn_result" and pl.state == "error":
            self.emit(ev.ERROR, t, off, n, name="turn_result", text=rec.error_words(pl.error) or "the turn failed")
        elif st == "rewind":
            self.emit(ev.CONTEXT, t, off, n, name="rewind", text="conversation rewound")

    def _title(self, pl: rec.Payload, t: float | None, off: int, n: int) -> None:
        title = one_line(pl.customTitle or "", 200)
        source = pl.titleSource or "manual"  # a record without its source was the user's
        if not title or self.parent is not None or self.title == (title, source):
            return  # (the CLI appends the same title again at the session's end)
        self.title = (title, source)
        self.emit(ev.TITLE, t, off, n, text=title, detail="ai" if source == "auto" else "")

    def _telemetry(self, pl: rec.Payload, t: float | None, off: int, n: int) -> None:
        try:
            ui = rec.decode_ui_event(pl.uiEvent) if pl.uiEvent else None
        except msgspec.DecodeError:
            return
        if ui is None or not (ui.name or "").endswith("api_error"):
            return
        words = rec.error_words(ui.error) or ui.error_type or "API error"
        if ui.status_code not in (None, ""):
            words = f"{words} (HTTP {ui.status_code})"
        self.emit(ev.ERROR, t, off, n, name="api_error", text=cap(words)[0])


def _silent(r: rec.Record) -> bool:
    """A system record that says nothing here: a snapshot, or telemetry (it repeats the
    usage and adds side calls: never counted) unless it is an API error."""
    st = r.subtype
    if st in ("attribution_snapshot", "file_history_snapshot") or not r.systemPayload:
        return True
    return st == "ui_telemetry" and b"api_error" not in bytes(r.systemPayload)


def _display(raw: msgspec.Raw) -> rec.Display | None:
    if not raw:
        return None
    try:
        val = rec.decode_display(raw)
    except msgspec.DecodeError:
        return None
    return val if isinstance(val, rec.Display) else None


def _str(d: dict[str, Any], key: str) -> str:
    v = d.get(key)
    return v if isinstance(v, str) else ""
