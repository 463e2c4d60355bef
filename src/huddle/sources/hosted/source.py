"""Runs hosted by `huddle run` / `huddle host`: `$HUDDLE_HOME/runs/<name>/events.jsonl`.

A hosted run is a session like any other: its id is the run's folder name; its
state comes from the host being alive (pid and start time, so a reused pid is not
taken for it) and from the stream; its live partial text (what the agent is
writing this second) and the agent's own session id (the stream's `session_id`,
so the views can link the run to the agent's transcript) are in `session.live`.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from huddle.io.folders import RUN_LOG, runs_dir
from huddle.io.procs import alive
from huddle.io.reader import GONE, RESET, LineReader
from huddle.io.safefile import forget, remember
from huddle.model.files import UNKNOWN, UNREADABLE, Files
from huddle.model.signals import Live, Pending
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings


class HostedHandle(Handle):
    def __init__(self, path: str, run: str):
        super().__init__("hosted", run)
        self.path = path
        self._fresh()

    def _fresh(self) -> None:
        from .stream import Mapper  # (and the records it maps) when a run is read, not on every board

        s = self.session
        lead = s.agent(s.id, parent=None, name="main", file=self.path)
        lead.kind = "main"
        self.reader = LineReader(self.path)
        self.mapper = Mapper(s, self.path)

    def files(self) -> list[str]:
        return [self.path]

    def refresh(self) -> bool:
        s = self.session
        before = s.version
        status = self.reader.check()
        if status == GONE:
            return False
        if status == RESET:
            s.reset()
            self._fresh()
            self.reader.check()
        drain(self.reader, s, self.mapper.feed)
        live = self.live()
        if live != s.live:
            s.live = live
            s.version += 1
        return s.version != before

    def live(self, at: float | None = None) -> Live:
        m = self.mapper
        run, host, exited = m.run, m.host, m.exited
        facts: dict[str, Any] = {"dir": os.path.dirname(self.path)}
        if m.agent_sessions:
            # the agent's own session id: the same session in its own source (claude)
            facts["agent_session"] = {"source": "claude", "id": m.agent_sessions[-1]}
            if len(m.agent_sessions) > 1:
                facts["agent_sessions"] = list(m.agent_sessions)
        if exited is not None:
            facts["exited"] = {k: exited[k] for k in ("status", "reason", "stopped")}
        pid, began = run.get("pid"), run.get("t")
        if at is not None:
            return _as_of(at, pid, began, (exited or {}).get("t"), facts)
        host_up = bool(host.get("host_pid")) and alive(host["host_pid"], host.get("host_start"))
        facts["host"] = {"pid": host.get("host_pid"), "alive": host_up}
        if exited is not None:
            return Live(
                alive=False, pid=pid, started=began, ended_at=exited.get("t"), facts=self._answerable(facts, False)
            )
        if not run:
            return Live(pid=pid, facts=facts)
        if not (host_up and alive(run["pid"], run.get("start"))):
            facts["lost"] = True  # the host died without writing `exited`
            facts = self._answerable(facts, False)
            return Live(alive=False, pid=pid, started=began, ended_at=m.s.updated_at, facts=facts)
        if m.partial and m.partial.get("text"):
            facts["partial"] = dict(m.partial)
        why = m.asked.waiting_for() if m.run.get("protocol") else None
        pending = Pending(words=why) if why else None  # (a request its card can answer: huddle.answer)
        return Live(alive=True, pid=pid, started=began, pending=pending, facts=self._answerable(facts, True))

    def _answerable(self, facts: dict[str, Any], running: bool) -> dict[str, Any]:
        """`facts` with what huddle can answer of this run (huddle.answer), when it hosts it
        through a protocol: what is pending while its agent and host live (its requests
        went with its agent otherwise: the host says gone when it can)."""
        m = self.mapper
        protocol = m.run.get("protocol")
        if protocol:
            facts["answer"] = {"protocol": protocol, **m.asked.live()}
            if not running:
                facts["answer"].update(pending=[], closed="the run is not running: nothing to answer")
        return facts


def _as_of(at: float, pid: Any, began: float | None, ended: float | None, facts: dict[str, Any]) -> Live:
    """A hosted run as of a past time: not started yet, running, or ended (its log's word)."""
    if began is None or at < began:
        return Live(pid=pid, started=began, facts=facts)
    if ended is not None and at >= ended:
        return Live(alive=False, pid=pid, started=began, ended_at=ended, facts=facts)
    return Live(alive=True, pid=pid, started=began, facts=facts)


@register
class HostedSource(Source):
    name = "hosted"
    label = "huddle run"
    short = "run"
    colour = "#64748b"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.runs = runs_dir(settings.huddle_home) if settings.huddle_home else ""

    def roots(self) -> list[str]:
        return [self.runs] if self.runs else []

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        # A folder that cannot be read now (a chmod, a mount gone stale) is a note (the
        # safefile remembers it), and the runs read from it stay on the board as they were.
        kept: dict[str, Handle] = {k: h for k, h in known.items() if isinstance(h, HostedHandle)}
        self.files = account = Files()
        account.looked_in(self.runs)
        try:
            with os.scandir(self.runs) as it:
                runs = list(it)
            forget(self.runs)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            remember(self.runs, exc)
            account.unread(self.runs, UNREADABLE)
            return kept
        found: dict[str, Handle] = {}
        for d in runs:
            if not d.is_dir(follow_symlinks=False):
                account.unread(d.path, UNKNOWN)
                continue
            path = os.path.join(d.path, RUN_LOG)
            key = f"hosted:{d.name}"
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                remember(path, exc)  # (names the run's folder when that is what cannot be entered)
                if key in kept:
                    found[key] = kept[key]
                else:
                    account.unread(d.path, UNREADABLE)
                continue
            if stat.S_ISDIR(st.st_mode):
                continue  # a FIFO or a symlink out counts: the reader refuses it, the row says so
            h = known.get(key)
            if not isinstance(h, HostedHandle) or h.path != path:
                h = HostedHandle(path, d.name)
            found[key] = h
        return found
