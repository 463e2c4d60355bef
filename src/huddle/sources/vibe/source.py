"""Mistral Vibe sessions, both engines, in `<root>` = `session_logging.save_dir` of
`$VIBE_HOME/config.toml` (default `$VIBE_HOME/logs/session`, VIBE_HOME `~/.vibe`):

- `unified/<id>/`: a unified store (2.26+, 3.x); `unified/child-*` are its
  sub-agents' stores, found through the lead's spawn effects and runtime state;
- `<prefix>_<date>_<time>_<id8>/`: a legacy session, sub-agents in `agents/`;
- `active/<id>.lock(.json)`: held while a session is open. A lock with nothing else
  is a session in its first turn (the legacy engine writes after its first step).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from huddle.io.safefile import listdir, open_regular, read_small, remember
from huddle.model import events as ev
from huddle.model.events import Event
from huddle.model.files import DAMAGED, LOCK, SIDE, UNKNOWN, Files
from huddle.model.signals import TURN_OPEN, AgentLive, Live
from huddle.sources.base import Handle, Source
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from .family import Family
from .locks import Locks

if TYPE_CHECKING:  # the parsers (and their records) load when a session is read, not on every board
    from .legacy import LegacyAgent
    from .store import StoreReader
    from .unified import StoreParser

LEGACY_DIR = re.compile(r"^.+_\d{8}_\d{6}_([0-9a-fA-F]{8})$")
_SESSION_ID = re.compile(rb'^\s*\{\s*"session_id"\s*:\s*"([^"]+)"')


def save_dir(vibe_home: str) -> tuple[str, str | None]:
    """Where Vibe writes its sessions, and a one-line complaint if config.toml is bad."""
    default = os.path.join(vibe_home, "logs", "session")
    path = os.path.join(vibe_home, "config.toml")
    try:
        data = read_small(path, follow=True)  # a user's config may be linked from anywhere
    except FileNotFoundError:
        return default, None
    except OSError as exc:
        return default, f"{path}: {exc.strerror or exc}; reading {default}"
    import tomllib  # only when there is a config (its import is a tenth of a cached status)

    try:
        conf = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return default, f"{path}: not valid TOML ({exc}); reading {default}"
    except RecursionError:
        return default, f"{path}: not valid TOML (nested too deep); reading {default}"
    logging = conf.get("session_logging")
    where = logging.get("save_dir") if isinstance(logging, dict) else None
    if isinstance(where, str) and where.strip():
        where = os.path.expanduser(where.strip())
        return (where if os.path.isabs(where) else os.path.join(vibe_home, where)), None
    return default, None


class UnifiedHandle(Handle):
    """A unified session: the lead's store plus its sub-agents' stores."""

    def __init__(self, source: VibeSource, unified: str, sid: str):
        super().__init__("vibe", sid)
        self.source = source
        self.unified = unified
        self.folder = os.path.join(unified, sid)
        self._fresh()

    def _fresh(self) -> None:
        from .store import StoreReader
        from .unified import StoreParser

        s = self.session
        lead = s.agent(s.id, parent=None, name="main", file=self.folder)
        lead.kind = "main"
        self.family = Family(s)
        self.stores: dict[str, tuple[StoreReader, StoreParser]] = {
            s.id: (StoreReader(self.folder), StoreParser(s, self.family, s.id, is_child=False))
        }

    def files(self) -> list[str]:
        return [f for reader, _ in self.stores.values() for f in reader.files()]

    def refresh(self) -> bool:
        from .store import Rewritten as StoreRewritten

        s = self.session
        before = s.version
        try:
            self._read()
        except StoreRewritten:  # a journal cut or rewritten: read the whole session again
            s.reset()
            self._fresh()
            self._read()
        return s.version != before

    def _read(self) -> None:
        s = self.session
        self._poll(s.id)
        from .store import StoreReader
        from .unified import StoreParser

        polled = {s.id}
        while True:  # sub-agents (and theirs) as their parents' effects name them
            for child in self.family.children():
                if child not in self.stores and os.path.isdir(os.path.join(self.unified, child)):
                    self.stores[child] = (
                        StoreReader(os.path.join(self.unified, child)),
                        StoreParser(s, self.family, child, is_child=True),
                    )
            todo = [a for a in self.stores if a not in polled]
            if not todo:
                break
            for aid in todo:
                polled.add(aid)
                self._poll(aid)
        s.add_all(self.family.link())

    def _poll(self, aid: str) -> None:
        reader, parser = self.stores[aid]
        if not reader.gone:
            reader.poll(parser)
        self.session.add_all(parser.flush())

    def live(self, at: float | None = None) -> Live:
        s = self.session
        locks = self.source.locks
        generation = self.stores[s.id][0].generation
        if at is not None and s.updated_at is not None and at < s.updated_at:
            return locks.signals(s.id, at, generation=generation)  # a past moment: the timeline replays it
        agents: dict[str, AgentLive] = {}
        for aid, (_reader, parser) in self.stores.items():
            own = parser.live_signals()
            if own is not None and aid in s.agents:
                agents[aid] = own
        if not generation and locks.alive(s.id, at) is not False:
            lock = locks.info(s.id) or {}  # a store being created: its first turn is under way
            agents[s.id] = AgentLive(turn=TURN_OPEN, turn_since=lock.get("acquired_at"))
        return locks.signals(s.id, at, agents, generation=generation)


class LegacyHandle(Handle):
    """A legacy session folder and its sub-agents' folders."""

    def __init__(self, source: VibeSource, folder: str, sid: str):
        super().__init__("vibe", sid)
        self.source = source
        self.folder = folder
        self._fresh()

    def _fresh(self) -> None:
        from .legacy import LegacyAgent

        s = self.session
        self.lead = LegacyAgent(s, self.folder, s.id, is_child=False)
        s.agent(s.id, parent=None, name="main", file=self.lead.path).kind = "main"
        self.subs: dict[str, LegacyAgent] = {}  # folder -> sub-agent
        self.agents_mtime: tuple[int, int] = (-1, -1)

    def files(self) -> list[str]:
        return [p for a in (self.lead, *self.subs.values()) for p in (a.path, a.meta_path) if os.path.exists(p)]

    def refresh(self) -> bool:
        from .legacy import Rewritten

        s = self.session
        before = s.version
        try:
            self._read()
        except Rewritten:  # a rewind or compaction rewrote a file: read the session again
            s.reset()
            self._fresh()
            self._read()
        return s.version != before

    def _read(self) -> None:
        self._drain(self.lead)
        self._find_subs()
        for sub in sorted(self.subs.values(), key=lambda a: a.folder):
            self._drain(sub)
        self._link()

    def _drain(self, agent: LegacyAgent) -> None:
        agent.refresh()
        self.session.add_all(agent.out)
        agent.out.clear()

    def _find_subs(self) -> None:
        from .legacy import LegacyAgent, read_meta

        base = os.path.join(self.folder, "agents")
        try:
            st = os.stat(base)
        except OSError:
            return
        mtime = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod back makes it readable again
        names = [e.name for e in listdir(base)] if mtime != self.agents_mtime else []
        pending = False
        for name in sorted(names):
            folder = os.path.join(base, name)
            if folder in self.subs or not LEGACY_DIR.match(name):
                continue
            meta = read_meta(os.path.join(folder, "meta.json"))
            if meta is None or not meta.session_id:
                pending = True  # its meta.json is on its way
                continue
            sub = self.subs[folder] = LegacyAgent(self.session, folder, meta.session_id, is_child=True)
            a = self.session.agent(meta.session_id, parent=self.session.id, file=sub.path)
            profile = meta.agent_profile.name if meta.agent_profile is not None else None
            a.name = a.kind = profile or name.rsplit("_", 3)[0]
        if not pending:
            self.agents_mtime = mtime

    def _link(self) -> None:
        """Tie each `task` call to the sub-agent folder it started (meta.child_sessions)."""
        s, lead = self.session, self.lead
        children = lead.meta.child_sessions if lead.meta is not None else None
        for cs in children or ():
            call = cs.tool_call_id or ""
            order, report = lead.orders.get(call), lead.reports.get(call)
            if order is not None:
                order.target = cs.session_id
            if report is not None:
                report.target = cs.session_id
            a = s.agents.get(cs.session_id)
            if a is None:
                continue
            a.tool_use_id = call or a.tool_use_id
            a.kind = a.kind or cs.agent or ""
            if order is not None and not a.order:
                a.order = order.text
            if report is not None:
                a.report, a.finished = report.text, True
        for sub in self.subs.values():
            a = s.agents.get(sub.agent)
            if a is not None and not a.order and sub.first_order:
                a.order = sub.first_order

    def live(self, at: float | None = None) -> Live:
        s = self.session
        costs = [a.cost for a in [self.lead, *self.subs.values()] if a.cost is not None]
        if costs:
            return self.source.locks.signals(s.id, at, cost_usd=round(sum(costs), 6))
        return self.source.locks.signals(s.id, at)


class StartingHandle(Handle):
    """A lock and nothing else yet: a session in its first turn (legacy writes after
    the first step; while it waits for an approval or an answer, nothing is on disk)."""

    def __init__(self, source: VibeSource, sid: str):
        super().__init__("vibe", sid)
        self.source = source
        self.session.agent(sid, parent=None, name="main").kind = "main"
        self.shown: object = None  # what the event says of the lock: (acquired_at, pid)

    def files(self) -> list[str]:
        path = os.path.join(self.source.locks.folder, self.session.id + ".lock.json")
        return [path] if os.path.exists(path) else []

    def refresh(self) -> bool:
        """The event says what the lock says now: a lock rewritten (first met with a time
        that is no time, then put right) is shown anew, not as it was first read."""
        lock = self.source.locks.locks.get(self.session.id)
        if lock is None or self.shown == (lock.acquired_at, lock.pid):
            return False
        if self.shown is not None:
            self.session.reset()
            self.session.agent(self.session.id, parent=None, name="main").kind = "main"
        self.shown = (lock.acquired_at, lock.pid)
        path = os.path.join(self.source.locks.folder, self.session.id + ".lock.json")
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0
        self.session.add(
            Event(
                kind=ev.CONTEXT,
                agent=self.session.id,
                t=lock.acquired_at,
                file=path,
                offset=0,
                length=size,
                name="lock",
                text="session open; nothing written yet (its first turn is under way)",
            )
        )
        return True

    def live(self, at: float | None = None) -> Live:
        s = self.session
        locks = self.source.locks
        if locks.alive(s.id, at) is False:
            return locks.signals(s.id, at)
        since = (locks.info(s.id) or {}).get("acquired_at")
        return locks.signals(s.id, at, {s.id: AgentLive(turn=TURN_OPEN, turn_since=since)})


@register
class VibeSource(Source):
    name = "vibe"
    label = "Mistral Vibe"
    short = "Vibe"
    colour = "#fa520f"
    folder_env = "VIBE_HOME"
    default_folder = "~/.vibe"
    resume = "vibe --resume {id}"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._config_key: tuple[Any, ...] = ()
        self.root = ""
        self.config_note: str | None = None
        self.locks = Locks("")
        self._read_config()
        self._legacy_ids: dict[str, str] = {}  # legacy folder -> full session id

    def _read_config(self) -> None:
        """config.toml says where sessions are; read again when it changes (a note about
        a bad one goes when it is fixed)."""
        if not self.folder:
            return
        try:
            st = os.stat(os.path.join(self.folder, "config.toml"))
            key: tuple[Any, ...] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            key = (None,)
        if key == self._config_key:
            return
        self._config_key = key
        root, self.config_note = save_dir(self.folder)
        if root != self.root:
            self.root = root
            self.locks = Locks(os.path.join(self.root, "active"))

    def roots(self) -> list[str]:
        return [self.root] if self.root else []

    def watch_dirs(self) -> list[str]:
        # a legacy session appears in the root, a unified store in unified/, a lock in active/
        if not self.root:
            return []
        return [self.root, os.path.join(self.root, "unified"), self.locks.folder]

    def config_files(self) -> list[str]:
        return [os.path.join(self.folder, "config.toml")] if self.folder else []

    def exists(self) -> bool:
        # a broken config.toml is worth a note even when there is nothing to read
        return os.path.isdir(self.root) or bool(self.config_note)

    def live_changed(self) -> set[str]:
        return {f"vibe:{sid}" for sid in self.locks.moved}

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        self._read_config()
        self.notes = [self.config_note] if self.config_note else []  # said on every pass while it lasts
        self.locks.refresh()
        found: dict[str, Handle] = {}
        unified = os.path.join(self.root, "unified")
        self.files = account = self._files_beside(unified)
        for name, path in _dirs(unified):
            if name.startswith(("child-", ".")):
                continue  # sub-agents belong to their lead's session
            key = f"vibe:{name}"
            h = known.get(key)
            found[key] = h if isinstance(h, UnifiedHandle) and h.folder == path else UnifiedHandle(self, unified, name)
        legacy: list[str] = []
        for name, path in _dirs(self.root):
            if not LEGACY_DIR.match(name):
                continue
            legacy.append(path)
            sid = self._legacy_id(path)
            if sid is None:
                account.unread(os.path.join(path, "meta.json"), f"{DAMAGED}: meta.json names no session")
                continue
            key = f"vibe:{sid}"
            h = known.get(key)
            found[key] = h if isinstance(h, LegacyHandle) and h.folder == path else LegacyHandle(self, path, sid)
        self._starting(found, known, legacy)
        return found

    def _files_beside(self, unified: str) -> Files:
        """The folders a scan looks in, and the files beside the sessions' folders."""
        account = Files()
        for folder in (self.root, unified, self.locks.folder):
            account.looked_in(folder)
        for e in listdir(self.root):
            if e.name == ".session_index.json":
                account.not_session(e.path, f"{SIDE}: Vibe's index of its sessions")
            elif not e.is_dir(follow_symlinks=False):
                account.unread(e.path, UNKNOWN)
        for lock_id in self.locks.locks:
            account.not_session(os.path.join(self.locks.folder, lock_id + ".lock.json"), LOCK)
        return account

    def _starting(self, found: dict[str, Handle], known: dict[str, Handle], legacy: list[str]) -> None:
        """Locks of sessions with nothing else on disk yet (sub-agents' locks excluded)."""
        loose = [
            sid
            for sid, lock in self.locks.locks.items()
            if lock.held and not sid.startswith("child-") and f"vibe:{sid}" not in found
        ]
        if not loose:
            return
        subs = {
            m.group(1).lower()
            for p in legacy
            for n, _ in _dirs(os.path.join(p, "agents"))
            if (m := LEGACY_DIR.match(n))
        }
        for sid in loose:
            if sid[:8].lower() in subs:
                continue
            key = f"vibe:{sid}"
            h = known.get(key)
            found[key] = h if isinstance(h, StartingHandle) else StartingHandle(self, sid)

    def _legacy_id(self, folder: str) -> str | None:
        """The full id (the folder name has 8 characters of it): the start of meta.json."""
        sid = self._legacy_ids.get(folder)
        if sid is not None:
            return sid
        path = os.path.join(folder, "meta.json")
        try:
            with open_regular(path) as f:
                head = f.read(512)
        except OSError as exc:
            remember(path, exc)  # a FIFO or a symlink out in its place: a note, until it is a file
            return None
        m = _SESSION_ID.search(head)
        if m is not None:
            sid = m.group(1).decode(errors="replace")
        else:
            from .legacy import read_meta

            meta = read_meta(path)
            sid = meta.session_id if meta is not None and meta.session_id else None
        if sid:
            self._legacy_ids[folder] = sid
        return sid


def _dirs(folder: str) -> list[tuple[str, str]]:
    return [(d.name, d.path) for d in listdir(folder) if d.is_dir(follow_symlinks=False)]
