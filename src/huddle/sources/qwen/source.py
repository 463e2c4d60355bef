"""Qwen Code sessions: `<runtime dir>/projects/<encoded cwd>/chats/<session id>.jsonl`.

The runtime dir is the CLI's own rule: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else
`~/.qwen` (`HUDDLE_QWEN_DIR` points huddle elsewhere), moved by the `advanced.
runtimeOutputDir` of the settings.json found there. Each sub-agent run is
`projects/<enc>/subagents/<session id>/agent-<type>-<call id>.jsonl` beside its
`.meta.json` (`toolUseId`: the lead's call that started it; `status`: running or
completed, rewritten in place). A lead and its sub-agents are one session with one tree,
keyed by the session id; a sub-agent is keyed by the call that started it.

Finding sessions costs listings (reused while a folder's mtime stands) and one small
read per sub-agent (its meta, else its first line). A live session costs reads of its
appended bytes, and a stamp of each sub-agent's meta.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from huddle.io import safefile
from huddle.io.proctable import Proc, ProcCache, ProcTable
from huddle.io.reader import GONE, RESET, SAME, LineReader
from huddle.model.files import Files
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from .folders import Accounts, Listings, runtime_dir
from .live import Registry, qwen_processes
from .meta import SubMeta, identity, read_meta

if TYPE_CHECKING:
    from .parser import ChatParser


class ChatFile:
    def __init__(self, agent: str, parent: str | None, path: str):
        self.agent = agent
        self.parent = parent
        self.path = path
        self.reader = LineReader(path)
        self.parser: ChatParser | None = None
        self.meta_path = path[: -len(".jsonl")] + ".meta.json" if parent is not None else ""
        self.meta_stamp: tuple[int, ...] | None = None
        self.meta: SubMeta | None = None


# (agent id, parent agent id or None for the lead, path)
FileSpec = tuple[str, str | None, str]


class QwenHandle(Handle):
    def __init__(self, source: QwenSource, lead: str, files: list[FileSpec], runtime: str = ""):
        super().__init__("qwen", lead)
        self.source = source
        self.lead = lead
        self.runtime = runtime  # the TUI's `<id>.runtime.json` (kept after it exits)
        self.chats: dict[str, ChatFile] = {}
        self._fresh(files)

    def _fresh(self, files: list[FileSpec]) -> None:
        from .parser import Links

        s = self.session
        self.links = Links()
        a = s.agent(self.lead, parent=None, name="main")
        a.kind = "main"
        self.chats = {}
        self.set_files(files)

    def set_files(self, files: list[FileSpec]) -> None:
        """The files of this session now on disk."""
        for agent, parent, path in files:
            cf = self.chats.get(agent)
            if cf is not None and cf.path == path:
                continue
            if cf is not None:  # the same agent in another file: start over
                self.session.reset()
                self._fresh(files)
                return
            self._add(agent, parent, path)

    def _add(self, agent: str, parent: str | None, path: str) -> None:
        from .parser import ChatParser

        s = self.session
        cf = self.chats[agent] = ChatFile(agent, parent, path)
        cf.parser = ChatParser(s, self.links, agent, parent, path)
        if parent is None:
            s.agent(agent).file = path
        else:
            a = s.agent(agent, parent=parent, file=path)
            a.parent = parent
            a.kind = a.kind or "sub-agent"
            a.name = a.name if a.name != agent else "sub-agent"
        s.version += 1

    def files_list(self) -> list[ChatFile]:
        # The lead first: its calls carry the orders its sub-agents' first prompts repeat.
        return sorted(self.chats.values(), key=lambda cf: (cf.parent is not None, cf.path))

    def files(self) -> list[str]:
        out = []
        for cf in self.files_list():
            out.append(cf.path)
            if cf.meta_path:
                out.append(cf.meta_path)  # rewritten in place when the sub-agent ends
        return out

    # -- reading -------------------------------------------------------------------------

    def refresh(self, _again: bool = True) -> bool:
        s = self.session
        before = s.version
        for cf in self.files_list():
            status = cf.reader.check()
            if status == RESET:
                return self._start_over(_again)
            if status not in (GONE, SAME):
                if _again and cf.parent is None and not cf.reader.cursor.offset and self._subs_read():
                    return self._start_over(_again)  # the lead's first lines after its sub-agents': as a cold read
                self._drain(cf)
            if cf.meta_path:
                self._meta(cf)
        self._link()
        return s.version != before

    def _subs_read(self) -> bool:
        return any(cf.parent is not None and cf.reader.cursor.offset for cf in self.chats.values())

    def _start_over(self, again: bool) -> bool:
        if not again:
            raise RuntimeError(f"{self.lead}: a chat file was rewritten while being read")
        known = [(cf.agent, cf.parent, cf.path) for cf in self.chats.values()]
        self.session.reset()
        self._fresh(known)
        return self.refresh(_again=False) or True

    def _drain(self, cf: ChatFile) -> None:
        p = cf.parser
        assert p is not None

        def flush() -> None:  # in batches: the session's bookkeeping is per call
            self.session.add_all(p.out)
            p.out.clear()

        drain(cf.reader, self.session, p.feed, p.out, flush, every=256)  # a bad line costs that line

    def _meta(self, cf: ChatFile) -> None:
        st = safefile.stamp(cf.meta_path)
        if st == cf.meta_stamp:
            return
        cf.meta_stamp = st
        cf.meta = read_meta(cf.meta_path) if st is not None else None

    def _link(self) -> None:
        """What the metas and the lead's calls say of each sub-agent."""
        s, L = self.session, self.links
        for cf in self.chats.values():
            if cf.parent is None:
                continue
            a = s.agents[cf.agent]
            m = cf.meta
            was = (a.kind, a.name, a.description, a.tool_use_id, a.background, a.finished, a.order)
            if m is not None:
                a.kind = m.agentType or m.subagentName or a.kind
                a.description = m.description or a.description
                a.name = a.id if a.description else a.kind  # (the label is its task, then its type)
                a.background = bool(m.isBackgrounded)
                a.finished = m.status not in (None, "", "running")
            if cf.agent in L.agent_calls:
                a.tool_use_id = cf.agent
            if not a.order and cf.agent in L.orders:
                a.order = L.orders[cf.agent]
            if was != (a.kind, a.name, a.description, a.tool_use_id, a.background, a.finished, a.order):
                s.version += 1
            p = cf.parser
            model = (m.model_name if m is not None else "") or L.model
            if p is not None and p.nameless and model:
                for e in p.nameless:  # (counted under no model so far: counted again under its own)
                    e.name = model
                p.nameless.clear()
                s.recount_usage()

    def background_running(self) -> tuple[str, ...]:
        """Sub-agents launched in the background whose meta says they still run."""
        return tuple(
            cf.agent
            for cf in self.chats.values()
            if cf.meta is not None and cf.meta.isBackgrounded and cf.meta.status == "running"
        )

    def live(self, at: float | None = None) -> Live:
        from .live import live_signals

        return live_signals(self, at)


@register
class QwenSource(Source):
    name = "qwen"
    label = "Qwen Code"
    short = "Qwen"
    colour = "#615ced"
    folder_env = "HUDDLE_QWEN_DIR"
    default_folder = "$QWEN_RUNTIME_DIR|$QWEN_HOME|~/.qwen"
    resume = "qwen --resume {id}"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self._settings_stamp: tuple[int, ...] | None = None
        self.root, self.projects, self.registry = "", "", Registry("")
        self._where()
        self.system = ProcCache()  # the process table, for liveness (a recorded one in tests)
        self.listings = Listings()
        self.accounts = Accounts()  # files looked at and not made sessions, each with why
        self._ids: dict[str, tuple[str, str | None] | None] = {}  # sub-agent file -> (id, parent agent id)
        self._by_cwd: dict[str, list[QwenHandle]] = {}
        self._qwens: tuple[ProcTable | None, list[Proc]] = (None, [])

    def _where(self) -> None:
        """The runtime dir, again whenever the settings file changes."""
        if not self.folder:
            return
        st = safefile.stamp(os.path.join(self.folder, "settings.json"))
        if self.root and st == self._settings_stamp:
            return
        self._settings_stamp = st
        root, note = runtime_dir(self.folder)
        self.notes = [note] if note else []
        if root != self.root:
            self.root = root
            self.projects = os.path.join(root, "projects")
            self.registry = Registry(os.path.join(root, "sessions"))

    def roots(self) -> list[str]:
        return list(dict.fromkeys(r for r in (self.folder, self.root) if r))

    def config_files(self) -> list[str]:
        return [os.path.join(self.folder, "settings.json")] if self.folder else []

    def exists(self) -> bool:
        return bool(self.projects) and os.path.isdir(self.projects)

    def watch_dirs(self) -> list[str]:
        return [d for d in (self.projects, self.registry.folder) if d]

    def live_changed(self) -> set[str]:
        return {f"qwen:{sid}" for sid in self.registry.moved}

    def between_scans(self, known: dict[str, Handle]) -> set[str] | None:
        if self.folder and safefile.stamp(os.path.join(self.folder, "settings.json")) != self._settings_stamp:
            return None  # the settings may have moved the runtime dir: a scan
        self.registry.refresh()
        return self.live_changed()

    def qwens(self, view: ProcTable) -> list[Proc]:
        """The qwen processes of a moment's table, found once for all sessions."""
        if self._qwens[0] is not view:
            self._qwens = (view, qwen_processes(view))
        return self._qwens[1]

    def latest(self, cwd: str) -> str | None:
        """The project's most recently active session: the one a `qwen --continue` there works on."""
        hs = self._by_cwd.get(cwd) or []
        best = max(hs, key=lambda h: h.session.updated_at or 0.0, default=None)
        return best.lead if best is not None else None

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        found: dict[str, Handle] = {}
        by_cwd: dict[str, list[QwenHandle]] = {}
        self._where()
        acc = self.accounts
        acc.start()
        self.registry.refresh()
        acc.folder(self.root, self.listings, skip=("projects", "sessions"))
        acc.registry(self.registry)
        mine = {cf.path for h in known.values() if isinstance(h, QwenHandle) for cf in h.chats.values()}

        def plain(path: str) -> bool:
            return path in mine or safefile.plain_path(path)

        projects, _ = self.listings.get(self.projects)
        for proj in sorted(projects):
            pdir = os.path.join(self.projects, proj)
            dirs, files = self.listings.get(pdir)
            acc.project(pdir, dirs, files)
            chats = os.path.join(pdir, "chats")
            _, names = self.listings.get(chats) if "chats" in dirs else ([], [])
            leads, runtimes = _chat_files(chats, names, plain, acc)
            groups: dict[str, list[FileSpec]] = {sid: [(sid, None, p)] for sid, p in leads.items()}
            subdir = os.path.join(pdir, "subagents")
            sids, _ = self.listings.get(subdir) if "subagents" in dirs else ([], [])
            for sid in sorted(sids):
                groups.setdefault(sid, []).extend(self._subs(os.path.join(subdir, sid), sid, plain))
            for sid, specs in groups.items():
                key = f"qwen:{sid}"
                if key in found:
                    continue  # (the same id in two project folders: the first)
                h = self._handle(known.get(key), sid, specs, runtimes.get(sid, ""))
                found[key] = h
                if sid in leads and h.session.cwd:
                    by_cwd.setdefault(h.session.cwd, []).append(h)
        self._by_cwd = by_cwd
        self.files = Files.of(self.accounts, self.roots())  # (huddle doctor reads these)
        return found

    def _handle(self, old: Handle | None, sid: str, specs: list[FileSpec], runtime: str) -> QwenHandle:
        """The session's handle: the one held, given its files now, or a new one."""
        if isinstance(old, QwenHandle):
            old.source = self
            old.runtime = runtime
            old.set_files(specs)
            return old
        return QwenHandle(self, sid, specs, runtime)

    def _subs(self, folder: str, sid: str, plain: Callable[[str], bool]) -> list[FileSpec]:
        """A session's sub-agent files, each with its id and its parent agent's."""
        _, names = self.listings.get(folder)
        got: dict[str, tuple[str, str | None, str]] = {}  # meta agentId -> (id, parent agentId, path)
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(".meta.json"):
                self.accounts.add(path, "not a session", "a sub-agent's meta (read with its file)")
                continue
            if not name.endswith(".jsonl"):
                self.accounts.add(path, "not a session", "not a sub-agent file (agent-*.jsonl)")
                continue
            if not plain(path):
                self.accounts.add(path, "not read", "not a regular file in its folder (said in the notes)")
                continue
            ident = self._ids.get(path)
            if ident is None:
                found = identity(path)
                if found is None:
                    self.accounts.add(path, "not read yet", "a sub-agent file with no meta and no first line")
                    continue
                self._ids[path] = ident = found
            agent_id = os.path.basename(path)[len("agent-") : -len(".jsonl")]
            got[agent_id] = (ident[0], ident[1], path)
        out: list[FileSpec] = []
        for own, parent, path in got.values():
            up = got.get(parent) if parent else None  # a sub-agent's own sub-agent names its agentId
            out.append((own, up[0] if up is not None else sid, path))
        return out


def _chat_files(
    chats: str, names: Iterable[str], plain: Callable[[str], bool], acc: Accounts
) -> tuple[dict[str, str], dict[str, str]]:
    """A chats folder's lead files and the TUI's runtime notes, by session id; every
    other file accounted for."""
    leads: dict[str, str] = {}
    runtimes: dict[str, str] = {}
    for name in sorted(names):
        path = os.path.join(chats, name)
        if name.endswith(".runtime.json"):
            runtimes[name[: -len(".runtime.json")]] = path
            acc.add(path, "not a session", "the TUI's runtime note (pid, start)")
        elif name.endswith(".jsonl") and plain(path):
            leads.setdefault(name[: -len(".jsonl")], path)
        elif name.endswith(".jsonl"):
            acc.add(path, "not read", "not a regular file in its folder (said in the notes)")
        else:
            acc.add(path, "not a session", "not a chat file (.jsonl)")
    return leads, runtimes
