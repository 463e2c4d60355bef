"""Claude Code sessions: `$CLAUDE_CONFIG_DIR/projects/<munged cwd>/<session>.jsonl`,
merged with the session's sub-agent files and linked through their `.meta.json`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from huddle.io.reader import GONE, RESET, SAME, LineReader
from huddle.io.safefile import listdir, stamp
from huddle.model import events as ev
from huddle.model.files import SIDE, UNKNOWN, Files
from huddle.model.session import Agent
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from . import summaries
from .came import came
from .folders import is_dir, project
from .project_agents import AgentHeads, is_agent_file, lone_folder, place, regroup
from .registry import Registry
from .state import SessionState, claims
from .subfiles import SubAgentFiles, SubFile, read_small_json
from .summaries import SummarySearch

if TYPE_CHECKING:  # the parser (and its records) loads when a transcript is read, not for a board that sleeps
    from .parser import FileParser


# what ClaudeHandle._fresh makes (a handle nothing has read yet makes it when first asked)
_READING = frozenset(
    (
        "state",
        "reader",
        "usage_only",
        "summary_search",
        "summary_title",
        "parser",
        "subs",
        "order_events",
        "report_events",
        "sub_dir_mtime",
        "title_mtime",
    )
)


class ClaudeHandle(SubAgentFiles, Handle):
    # Whether the session has a <session>/ folder (sub-agents, tool results); the scan's
    # listing sets it. A class default, so a handle from an older cache reads True.
    has_dir = True

    def __init__(self, source: ClaudeSource, path: str, session_id: str):
        super().__init__("claude", session_id)
        self.source = source
        self.path = path
        self.dir = path[: -len(".jsonl")]
        # 2.0.x sub-agent files beside the session file (path -> agent id), given by the scan
        self.project_agents: dict[str, str] = {}
        self.candidates: list[str] = []  # an orphan agent file: the sessions it names
        self.unsettled: dict[str, list[str]] = {}  # of project_agents, those a size can move: their candidates
        # What reading takes (_fresh) is made at its first use: a scan makes a handle for
        # every session file it lists, and in a long history most stay asleep (the keeper
        # drops those handles unread: core.keeper.kept).

    if not TYPE_CHECKING:  # (hidden from mypy: every other attribute stays checked)

        def __getattr__(self, name: str) -> Any:
            if name in _READING and "session" in self.__dict__:
                self._fresh()
                return self.__dict__[name]
            raise AttributeError(name)

    def _fresh(self) -> None:
        from .parser import FileParser

        s = self.session
        self.state = SessionState()
        self.reader = LineReader(self.path)
        lead = s.agent(s.id, parent=None, name="main", file=self.path)
        lead.kind = "main"
        self.usage_only = self.source.settings.usage_only
        self.summary_search = SummarySearch()
        self.summary_title = ""
        self.parser = FileParser(s, self.state, self.path, s.id, is_sub=False, usage_only=self.usage_only)
        self.subs: dict[str, SubFile] = {}
        self.order_events: dict[str, ev.Event] = {}  # Agent call id -> its ORDER
        self.report_events: dict[str, list[ev.Event]] = {}  # Agent call id -> its REPORTs
        self.sub_dir_mtime: tuple[int, ...] = ()
        self.title_mtime: tuple[int, ...] | None = None

    def __setstate__(self, d: dict[str, Any]) -> None:
        d.setdefault("project_agents", {})
        d.setdefault("candidates", [])
        d.setdefault("unsettled", {})
        d.setdefault("summary_search", SummarySearch())
        d.setdefault("summary_title", "")
        self.__dict__.update(d)
        self.state.relink(self.session)

    def files(self) -> list[str]:
        return [self.path] + [sf.path for sf in self.subs.values()]

    def regrouped(self, read_from: list[str]) -> bool:
        # A 2.0.x agent file beside the sessions goes to the candidate their sizes choose
        # (project_agents.choose_parent): a session that grows can take one from another.
        folder = os.path.dirname(self.path)
        had = {
            p
            for p in read_from
            if p != self.path and os.path.dirname(p) == folder and is_agent_file(os.path.basename(p))
        }
        return had != set(self.project_agents)

    def shape(self) -> list[Any] | None:
        return [os.path.dirname(self.path), [self.has_dir, sorted(self.project_agents)]]

    def regroups(self) -> bool:
        # empty when last read: once it holds something, the agent files naming it go to it
        return self.reader.cursor.offset == 0 and self.reader.cursor.size == 0

    # -- reading -------------------------------------------------------------------

    def refresh(self) -> bool:
        s = self.session
        before = s.version
        status = self._check_main()
        if status == GONE and not self.has_dir:
            return False
        if status == RESET:
            s.reset()
            self._fresh()
            self.reader.check()
        elif status == SAME and not self.subs and not self.project_agents and not self.has_dir:
            return False  # the common case on a board of old sessions: one stat, done
        self._find_subs()
        for sf in self.subs.values():
            self._read_meta(sf)
        if status not in (SAME, GONE):
            self._drain(self.parser, self.reader)
        self._read_custom_title()  # one stat: /rename appends to the main file, but the file is its own
        if not self._read_subs():  # a sub-agent file rewritten: rebuild the whole session
            s.reset()
            self._fresh()
            return self.refresh()
        if s.version != before:
            self._link()
            s.usage_note = self.state.usage_note()
        return s.version != before

    def _check_main(self) -> str:
        """The session's own transcript checked (reader.py: a last line without its newline
        waits while its writer lives). One not there (deleted, or never copied) is said
        while it lasts, if its folder holds sub-agents: they are still read."""
        s = self.session
        if self.reader.tail_waits or not self.reader.cursor.ino:
            self.reader.writing = self._writer_alive()
        status = self.reader.check()
        if status == GONE:
            if self.has_dir and self._missing() not in s.problems:
                s.problems.append(self._missing())
        elif s.problems and self._missing() in s.problems:
            s.problems.remove(self._missing())
        return status

    def _read_subs(self) -> bool:
        """What the sub-agent files appended; False when one was rewritten (read none on)."""
        for sf in sorted(self.subs.values(), key=lambda x: x.path):
            if sf.reader.tail_waits or not sf.reader.cursor.ino:
                sf.reader.writing = self._writer_alive()
            st = sf.reader.check()
            if st == RESET:
                return False
            if sf.parser is None:
                from .parser import FileParser

                sf.parser = FileParser(
                    self.session, self.state, sf.path, sf.agent_id, is_sub=True, usage_only=self.usage_only
                )
            if st != SAME:
                self._drain(sf.parser, sf.reader)
        return True

    def _missing(self) -> str:
        return f"{self.path}: not there: the session's sub-agents are read without it"

    def _writer_alive(self) -> bool:
        """Whether a live Claude Code process holds this session (its registry entry)."""
        info = self.source.registry.for_session(self.session.id)
        return info is not None and info["alive"] is not False

    def _drain(self, parser: FileParser, reader: LineReader) -> None:
        drain(
            reader,
            self.session,
            parser.feed_kept,
            parser.out,
            lambda: self._flush(parser),
            skip=parser.skip,
            cut=parser.cut,
        )

    def _flush(self, parser: FileParser) -> None:
        out = parser.out
        if not out:
            return
        counts = self.session.counts
        links = counts.get(ev.ORDER, 0) + counts.get(ev.REPORT, 0)
        self.session.add_all(out)
        if counts.get(ev.ORDER, 0) + counts.get(ev.REPORT, 0) == links:  # (most batches: no call of an agent)
            out.clear()
            return
        for e in out:
            if e.kind == ev.ORDER and e.agent != e.target:
                held = self.order_events.get(e.id)
                if claims(e.agent, held.agent if held is not None else None):
                    self.order_events[e.id] = e  # the launching call, not a replay's copy of it
            elif e.kind == ev.REPORT and e.id:
                self.report_events.setdefault(e.id, []).append(e)
        out.clear()

    def _link(self) -> None:
        """Tie each Agent call to the sub-agent it started, whichever was read first.
        Costs one step per sub-agent, not per event."""
        s = self.session
        for call, sub_id in self.state.agent_by_call.items():
            sub = s.agents.get(sub_id)
            if sub is None:
                continue
            order = self.order_events.get(call)
            if order is not None:
                self._ordered(sub, call, order)
            for report in self.report_events.get(call, ()):
                report.target = sub_id
                sub.report = report.text
        for sub_id, text in self.state.sub_orders.items():
            sub = s.agents.get(sub_id)
            if sub is not None and not sub.order:
                sub.order = text
        # 2.0.x pre-warm agents: ordered "Warmup", or (2.0.4x) a file with no order at all,
        # only the agent's greeting; either way started by no call of its lead
        unordered = [a for a in self.project_agents.values() if a not in self.state.sub_orders]
        for sub_id in (*self.state.warmups, *unordered):
            sub = s.agents.get(sub_id)
            if sub is not None and not sub.tool_use_id and sub.event_count:  # counted, but asked for by no one
                sub.quiet = True
                sub.kind = sub.kind or "warmup"
                sub.name = "warm-up"

    def _ordered(self, sub: Agent, call: str, order: ev.Event) -> None:
        """A sub-agent and the Agent call that started it (its lead, kind and order)."""
        s = self.session
        order.target = sub.id
        sub.order_seq = order.seq
        sub.order = sub.order or order.text
        if not sub.tool_use_id:
            sub.tool_use_id = call
        if not sub.kind:  # no meta.json (before 2.1.105): the call says what it is
            sub.kind = order.name
            sub.description = sub.description or order.detail
            sub.name = f"{sub.kind}: {sub.description}" if sub.description else sub.kind
        if sub.parent == s.id and order.agent != s.id and order.agent in s.agents:
            sub.parent = order.agent

    def summaries(self) -> dict[str, str]:
        return self.state.summaries

    def entangled(self) -> bool:
        return bool(self.summaries() or self.summary_title)  # summaries.settle looks across a folder

    def ties(self) -> list[str]:
        # the leaves its summaries name and the leaves its records hold (summaries.settle)
        return sorted(set(self.summaries()) | set(self.summary_search.found))

    def adopt(self, held: Handle) -> None:
        if isinstance(held, ClaudeHandle) and held.summary_title:
            self.set_summary_title(held.summary_title)

    def set_summary_title(self, title: str) -> bool:
        """The summary its leaves earn (summaries.settle); an ai-title of its own wins."""
        if title == self.summary_title or self.state.ai_title:
            return False
        self.summary_title = title
        self.session.ai_title = title
        self.session.version += 1
        return True

    def _read_custom_title(self) -> None:
        path = os.path.join(self.dir, "custom-title.json")
        mtime = stamp(path)
        if mtime is None or mtime == self.title_mtime:
            return
        meta = read_small_json(path)
        if meta and meta.get("customTitle"):
            self.title_mtime = mtime
            self.session.custom_title = str(meta["customTitle"])

    def live(self, at: float | None = None) -> Live:
        """Claude Code's own word on the process: sessions/<pid>.json (status, waitingFor),
        checked against the pid and its start time so a file left by a killed process
        reads as ended."""
        running = tuple(
            sf.agent_id
            for sf in self.subs.values()
            if self.session.agents[sf.agent_id].background and self.session.agents[sf.agent_id].finished is False
        )
        return self.source.registry.signals(self.session.id, at, running, permission_mode=self.state.permission_mode)


@register
class ClaudeSource(Source):
    name = "claude"
    label = "Claude Code"
    short = "Claude"
    colour = "#d97757"
    folder_env = "CLAUDE_CONFIG_DIR"
    default_folder = "~/.claude"
    resume = "claude --resume {id}"
    rows_from_files = True  # the registry (a process it names makes a row that is never stored)
    handle_class = ClaudeHandle  # (project_agents makes and tells handles by it, without importing this module)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.projects = self.under("projects")
        self.registry = Registry(self.under("sessions"))
        self.agent_heads = AgentHeads()  # 2.0.x agent files: whose they are, read once per change

    def memo(self) -> Any:
        return self.agent_heads.now or self.agent_heads.was

    def recall(self, memo: Any) -> None:
        self.agent_heads.recall(memo)

    def roots(self) -> list[str]:
        return [self.folder] if self.folder else []

    def exists(self) -> bool:
        return os.path.isdir(self.projects)

    def watch_dirs(self) -> list[str]:
        try:
            subs = [e.path for e in os.scandir(self.projects) if e.is_dir(follow_symlinks=False)]
        except OSError:
            subs = []
        return [self.projects, self.registry.folder, *subs]

    def live_changed(self) -> set[str]:
        return {f"claude:{sid}" for sid in self.registry.moved}

    def live_inputs(self) -> list[str]:
        # the registry: its folder (an entry made or removed) and each entry, rewritten in place
        folder = self.registry.folder
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        except OSError:
            names = []  # (the folder's own stamp says it is not there, or not readable)
        return [folder, *(os.path.join(folder, n) for n in names)]

    def between_scans(self, known: dict[str, Handle]) -> set[str] | None:
        # the registry is the live signal; a session's own folder (sub-agents, tool
        # results) may have been made since its handle was kept
        self.registry.refresh()
        self.agent_heads.begin()
        for h in known.values():
            if isinstance(h, ClaudeHandle) and not is_agent_file(os.path.basename(h.path)):
                h.has_dir = is_dir(h.dir)
        return self.live_changed()

    def fresh(self, h: Handle) -> Handle | None:
        if not isinstance(h, ClaudeHandle) or not os.path.exists(h.path):
            return super().fresh(h)
        nh = ClaudeHandle(self, h.path, h.session.id)  # (as regroup makes one: the same files)
        nh.has_dir = is_dir(nh.dir) if not is_agent_file(os.path.basename(h.path)) else False
        nh.project_agents, nh.unsettled, nh.candidates = dict(h.project_agents), dict(h.unsettled), h.candidates
        nh.session.parent_session = h.session.parent_session
        return nh

    def came(self, path: str, known: dict[str, Handle]) -> Handle | None:
        return came(self, path, known)

    def unplaced(self, path: str, size: int) -> tuple[bool, str]:
        from .records import only_summaries  # (its structs load when a session is read)

        # (its first `size` bytes: a sleeping session's file as stamped, not as it grew since)
        if size > 0 and only_summaries(path, min(size, 64 * 1024)):
            return True, f"{SIDE}: summaries that title other sessions"
        return super().unplaced(path, size)

    def settle(self, handles: dict[str, Handle]) -> set[str]:
        return summaries.settle([h for h in handles.values() if isinstance(h, ClaudeHandle)])

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        found: dict[str, Handle] = {}
        self.registry.refresh()
        # 2.0.x agent files and the sessions they were given to; a settled one is given
        # again without reading its first lines (project_agents.settled)
        held = [(k, h) for k, h in known.items() if isinstance(h, ClaudeHandle)]
        placed = {path: key for key, h in held for path in h.project_agents}
        unsettled = {path: c for _, h in held for path, c in h.unsettled.items()}
        self.files = account = Files()
        account.looked_in(self.projects)
        for p in listdir(self.projects):
            if p.is_dir(follow_symlinks=False):
                files, agents, dirs, names = project(p.path, account)
                for sid, f in files.items():
                    key = f"claude:{sid}"
                    h = known.get(key)
                    if not isinstance(h, ClaudeHandle) or h.path != f.path:
                        h = ClaudeHandle(self, f.path, sid)
                    # Most sessions have no <session>/ folder (no sub-agents): the listing
                    # already says so, which spares a stat per session per refresh.
                    h.has_dir = sid in dirs
                    h.project_agents, h.unsettled = {}, {}
                    found[key] = h
                # a session's folder without its transcript (a FIFO in its place is said apart)
                for sid in sorted(dirs - files.keys()):
                    if f"{sid}.jsonl" not in names:
                        lone_folder(self, p.path, sid, known, found)
                for f in sorted(agents, key=lambda e: e.name):
                    place(self, f, files, known, (placed, unsettled), found)
            else:
                account.unread(p.path, UNKNOWN)
        regroup(self, placed, known, found)
        return found
