"""A Cline session as huddle reads it: its record, its lead's messages document and one
document per sub-agent, all in `sessions/<id>/`, each rewritten in place by Cline.

Each refresh stats the files; one whose stamp (mtime, ctime, size, inode) stood still is
not read at all. One that moved is read whole and only its new messages give events
(parser.py); one that no longer starts with what was read, or reads well again after it
could not be, has the session read again from its start. A document that does not decode
is read again at once (Cline may be writing it); twice bad and standing still for a second,
it costs one line and is not read again until it changes.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import msgspec

from huddle.io import safefile
from huddle.model import events as ev
from huddle.model.events import one_line
from huddle.model.signals import Live
from huddle.model.times import parse_time
from huddle.sources.base import Handle

from . import records as rec
from .parser import DocParser, Links

Stamp = tuple[int, int, int, int]  # safefile.stamp()

if TYPE_CHECKING:
    from .source import ClineSource


SETTLE_NS = 1_000_000_000


class Doc:
    """One messages document and what was read of it."""

    def __init__(self, path: str, agent: str, parser: DocParser) -> None:
        self.path = path
        self.agent = agent
        self.parser = parser
        self.stamp: Stamp | None = None  # when last read well
        self.broken: Stamp | None = None  # the stamp that could not be read (said once)


class ClineHandle(Handle):
    def __init__(self, source: ClineSource, sid: str, folder: str, agent_files: list[str]) -> None:
        super().__init__("cline", sid)
        self.source = source
        self.sid = sid
        self.folder = folder
        self.record_path = os.path.join(folder, f"{sid}.json")
        self.record: rec.Record | None = None
        self.record_stamp: Stamp | None = None
        self.record_broken: Stamp | None = None
        self.shown_prompt = False  # the record's prompt shown while the messages held none
        self._fresh(agent_files)

    def _fresh(self, agent_files: list[str]) -> None:
        s = self.session
        self.links = Links()
        lead = s.agent(self.sid, parent=None, name="main")
        lead.kind = "main"
        path = os.path.join(self.folder, f"{self.sid}.messages.json")
        lead.file = path
        self.lead_doc = Doc(path, self.sid, DocParser(s, self.links, self.sid, None, path))
        self.docs: dict[str, Doc] = {path: self.lead_doc}
        self.record_stamp = None
        self.shown_prompt = False
        self.set_agents(agent_files)

    def set_agents(self, names: list[str]) -> None:
        """The sub-agents' documents now in the folder (`agent_<id>.messages.json`)."""
        s = self.session
        for name in names:
            path = os.path.join(self.folder, name)
            if path in self.docs:
                continue
            aid = f"{self.sid}__{name[: -len('.messages.json')]}"  # as Cline names its row
            self.docs[path] = Doc(path, aid, DocParser(s, self.links, aid, self.sid, path))
            a = s.agent(aid, parent=self.sid, file=path)
            a.kind = "subagent"
            a.name = f"sub-agent {aid[-6:]}"
            s.version += 1

    def files(self) -> list[str]:
        return [self.record_path, *self.docs]

    # -- reading -------------------------------------------------------------------------

    def refresh(self, _again: bool = True) -> bool:
        s = self.session
        before = s.version
        if self._read_record() and _again:
            return self._start_over(_again)  # read well again after it could not be: its line goes
        read = False
        for d in self.docs.values():  # the lead's first: its calls are what sub-agents' tasks link to
            st = safefile.stamp(d.path)
            if d.broken is not None and st != d.broken and _again:
                return self._start_over(_again)  # a document that could not be read moved: its line goes
            if st is None or st == d.stamp or st == d.broken:
                continue
            ok = self._feed(d, st)
            if ok is None:
                continue
            if not ok:
                return self._start_over(_again)  # rewritten: read again from the start
            d.stamp = st
            s.add_all(d.parser.out)
            d.parser.out.clear()
            read = True
        if s.version != before or read:
            self._show_prompt()
            self._link()
        return s.version != before

    def _feed(self, d: Doc, st: Stamp) -> bool | None:
        """A document that moved, to its parser (read again at once if it does not decode:
        Cline may have been writing it; one that stood still so is said, once). None:
        nothing read this time; False: rewritten before its end (read again whole)."""
        data = self._read(d.path)
        if data is None:
            return None
        try:
            return d.parser.feed(data)
        except (msgspec.DecodeError, RecursionError):
            data = self._read(d.path)
        try:
            return data is None or d.parser.feed(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            if _stood_still(d.path, st):  # (else still being written: the next refresh reads it)
                d.broken = st
                self.session.problem(d.path, 0, f"not a messages document ({' '.join(str(exc).split())[:200]})")
            return None

    def _read(self, path: str) -> bytes | None:
        try:
            return safefile.read_small(path, safefile.DOC_MAX)
        except FileNotFoundError:
            return None
        except OSError as exc:
            safefile.remember(path, exc, safefile.DOC_MAX)  # said as a note while it lasts
            return None

    def _start_over(self, again: bool) -> bool:
        if not again:
            raise RuntimeError(f"{self.sid}: a messages document was rewritten while being read")
        agents = [os.path.basename(p) for p, d in self.docs.items() if d.agent != self.sid]
        self.session.reset()
        self.record_broken = None
        self._fresh(agents)
        self.refresh(_again=False)
        return True

    def _read_record(self) -> bool:
        """Read the record if it moved; True when it moved after it could not be read (the
        session is read again: its line goes)."""
        st = safefile.stamp(self.record_path)
        if self.record_broken is not None and st != self.record_broken:
            return True
        if st is None or st == self.record_stamp or st == self.record_broken:
            return False
        r = None
        for _ in range(2):  # read again at once if cut: Cline rewrites it in place
            data = self._read(self.record_path)
            if data is None:
                return False
            try:
                r = rec.decode_record(data)
                break
            except (msgspec.DecodeError, RecursionError) as exc:
                why = " ".join(str(exc).split())[:200]
        if r is None:
            if not _stood_still(self.record_path, st):
                return False  # still being written: the next refresh reads it
            self.record_broken = st
            self.session.problem(self.record_path, 0, f"not a session record ({why})")
            return False
        self.record, self.record_stamp = r, st
        s = self.session
        cwd = r.cwd or r.workspace_root or ""
        if cwd and cwd != s.cwd:
            s.cwd = cwd
            s.version += 1
        title = r.metadata.title if r.metadata is not None else None
        if title and not _from_prompt(title, r.prompt) and title != s.custom_title:
            s.add(ev.Event(kind=ev.TITLE, agent=self.sid, text=one_line(title, 200), file=self.record_path))
        s.version += 1  # its status moved, if nothing else (the live signals read it)
        return False

    def _show_prompt(self) -> None:
        """While the lead's document holds no message yet (the first reply streams), the
        record's prompt is what was asked: shown once, and not again when the document has it."""
        s, r = self.session, self.record
        lead = self.lead_doc.parser
        if self.shown_prompt or r is None or not r.prompt or lead.read or s.counts.get(ev.PROMPT):
            return
        typed = rec.typed(r.prompt)
        text = (typed if typed is not None else r.prompt).strip()
        self.shown_prompt = True
        lead.shown = text
        t = parse_time(r.started_at) if r.started_at else None
        s.add(ev.Event(kind=ev.PROMPT, agent=self.sid, t=t, text=ev.cap(text)[0], file=self.record_path))

    def _link(self) -> None:
        """Each sub-agent to the spawn call whose task it was given (in call order for equal
        tasks), and below the agent that made the call."""
        s, L = self.session, self.links
        claimed = {a.tool_use_id for a in s.agents.values() if a.tool_use_id}
        for d in self.docs.values():
            a = s.agents.get(d.agent)
            task = L.tasks.get(d.agent)
            if a is None or d.agent == self.sid or task is None:
                continue
            if not a.order:
                a.order = task
                a.description = a.description or one_line(task, 80)
                s.version += 1
            if not a.tool_use_id:
                call = next((c for c in L.by_task.get(task, ()) if c not in claimed), None)
                if call is None:
                    continue
                claimed.add(call)
                a.tool_use_id = call
                order = L.orders[call]
                order.target = d.agent
                a.parent = order.agent  # a sub-agent's own sub-agent hangs below it
                s.version += 1
            report = L.reports.get(a.tool_use_id)
            if report is not None and not report.target:
                report.target = d.agent
            if report is not None and a.report is None:
                a.report = report.text
                s.version += 1

    def live(self, at: float | None = None) -> Live:
        from .live import live_signals

        return live_signals(self, at)


def _stood_still(path: str, st: Stamp) -> bool:
    """A file that does not decode is broken only once it stood still for a while: Cline
    writes in place, and two reads in a row may both catch it half-written."""
    return safefile.stamp(path) == st and time.time_ns() - st[0] > SETTLE_NS


def _from_prompt(title: str, prompt: str | None) -> bool:
    """Cline titles a session with its first prompt: only another title is one of its own."""
    if not prompt:
        return False
    typed = rec.typed(prompt)
    said = " ".join((typed if typed is not None else prompt).split())
    return said.startswith(" ".join(title.split()).rstrip(".… "))
