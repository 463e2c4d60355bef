"""Codex CLI threads: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`.

Every thread has its own rollout: the user's thread, each sub-agent (multi-agent v1
and v2, 0.96 collab), each guardian review, each fork. A lead and all its
descendants are one session with one tree, linked by what each rollout's first line
(`session_meta`) says about its parent, never by file names or times. The session id
and the lead's agent id are the root thread's id; every agent id is a thread id.
Guardian reviews stay in the tree as quiet agents and are never sessions of their own.

Finding threads is cheap: directory listings (reused while a folder's mtime stands)
and, once per new file, its first line. Reading a live thread reads appended bytes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from huddle.io.reader import GONE, RESET, LineReader
from huddle.io.safefile import remember
from huddle.model.files import Files
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register

from .folders import RolloutFolders
from .legacy import UNKNOWN_USAGE
from .live import SystemCache, live_signals
from .names import SessionIndex

if TYPE_CHECKING:  # the records and the parser load when a rollout is read, not for a board that sleeps
    from huddle.sources.settings import Settings

    from .records import ThreadInfo
    from .thread import ThreadParser


class ThreadFile:
    def __init__(self, info: ThreadInfo, path: str, lead: str, parser: ThreadParser):
        self.info = info
        self.path = path
        self.lead = lead  # the session's root thread
        self.reader = LineReader(path)
        self.parser = parser


class CodexHandle(Handle):
    archived = False  # its root thread is in archived_sessions/ (a class default for older caches)

    def __init__(self, source: CodexSource, root: str, threads: list[tuple[ThreadInfo, str]]):
        super().__init__("codex", root)
        self.source = source
        self.root = root
        self.threads: dict[str, ThreadFile] = {}
        self._pending = threads
        self._fresh()

    def _fresh(self) -> None:
        from .results import Links

        s = self.session
        s.archived = self.archived
        self.links = Links()
        lead = s.agent(self.root, parent=None, name="main")
        lead.kind = "main"
        known = [(tf.info, tf.path) for tf in self.threads.values()] + self._pending
        self.threads = {}
        self._pending = []
        self._linked: tuple[Any, ...] = ()
        self._unnamed: set[str] = set()
        for info, path in known:
            self._add(info, path)

    def set_threads(self, threads: list[tuple[ThreadInfo, str]]) -> None:
        """The threads of this session now on disk (the source found a new child, or lost
        one: a file gone, or something else in its place, which the scan passes over)."""
        now = {info.id for info, _path in threads}
        for info, path in threads:
            tf = self.threads.get(info.id)
            if tf is None:
                self._add(info, path)
            elif tf.path != path:  # the same thread in another file: start over
                self._start_over(threads)
                return
        if self.threads.keys() - now:  # a thread no longer on disk: read as a first read reads it
            self._start_over(threads)

    def _start_over(self, threads: list[tuple[ThreadInfo, str]]) -> None:
        self._pending = [(i, p) for i, p in threads]
        self.threads = {}
        self.session.reset()
        self._fresh()

    def _add(self, info: ThreadInfo, path: str) -> None:
        from .thread import ThreadParser

        s = self.session
        is_lead = info.id == self.root
        self.threads[info.id] = ThreadFile(
            info, path, self.root, ThreadParser(s, self.links, info, path, is_lead, self.source.settings.usage_only)
        )
        if info.note and len(s.problems) < 50:
            s.problems.append(f"{path}: {info.note}")
        if is_lead:
            a = s.agent(info.id)
            a.file = path
            s.cwd = info.cwd or s.cwd
            if getattr(info, "legacy", False):  # before session_meta: no count was ever written
                s.usage_unknown, s.usage_note, s.time_estimated = True, UNKNOWN_USAGE, True
            if info.forked_from and not info.parent:
                s.continues = info.forked_from  # `codex exec fork`: carries on another thread
        else:
            a = s.agent(info.id, parent=info.parent or self.root, file=path)
            a.parent = info.parent or self.root
            a.quiet = info.guardian
            a.kind = "guardian" if info.guardian else (info.role or "sub-agent")
            a.description = info.agent_path
            a.name = info.nickname or (info.agent_path.rsplit("/", 1)[-1] if info.agent_path else "")
            if not a.name:  # 0.96 children carry no name; a spawn result may give one
                a.name = "guardian review" if info.guardian else f"sub-agent {info.id[-4:]}"
                self._unnamed.add(info.id)
            if info.agent_path:
                self.links.child_by_path.setdefault(info.agent_path, info.id)
        s.version += 1

    def files(self) -> list[str]:
        return [tf.path for tf in self.threads.values()]

    def shown_from(self) -> list[str]:
        return [self.source.index.reader.path]  # its title, when the TUI has named the thread

    # -- reading -------------------------------------------------------------------------

    def refresh(self, _again: bool = True) -> bool:
        s = self.session
        before = s.version
        for tf in sorted(self.threads.values(), key=self._read_order):
            if tf.reader.tail_waits or not tf.reader.cursor.ino:  # (reader.py: a last line without newline)
                tf.reader.writing = self.source.writes(tf.info.id)
            status = tf.reader.check()
            if status == GONE:
                continue
            if status == RESET:
                if not _again:
                    raise RuntimeError(f"{tf.path}: rewritten while being read")
                # A rollout rewritten in place: what was derived from it is wrong now.
                self._pending = []
                s.reset()
                self._fresh()
                return self.refresh(_again=False) or True
            self._drain(tf)
        self._link()
        name = self.source.names.get(self.root, "")
        if name and name != s.custom_title:
            s.custom_title = name
            s.version += 1
        return s.version != before

    def _read_order(self, tf: ThreadFile) -> tuple[bool, str, str]:
        return (tf.info.id != self.root, tf.info.started, tf.info.id)

    def _drain(self, tf: ThreadFile) -> None:
        p = tf.parser

        def flush() -> None:  # in batches: the session's bookkeeping is per call
            if p.legacy:  # every event at the head's time: estimated
                for e in p.out:
                    e.estimated = True
            self.session.add_all(p.out)
            p.out.clear()

        feed = p.feed_legacy if p.legacy else p.feed_kept  # (chosen once, not asked of every line)
        drain(tf.reader, self.session, feed, p.out, flush, every=256, judge=p, cut=p.skips_head)

    def _link(self) -> None:
        """Tie spawn calls, reports and answers to the children they concern, whichever
        was read first. Costs a few steps per child, not per event."""
        s, L = self.session, self.links
        state = (
            len(L.child_of_call),
            len(L.unresolved),
            len(L.finished),
            len(L.first_orders),
            len(L.answers),
            len(L.nickname),
            len(L.child_by_path),
        )
        if state == self._linked:
            return
        self._linked = state
        for call, child in L.child_of_call.items():
            a = s.agents.get(child)
            if a is None:
                continue
            a.tool_use_id = a.tool_use_id or call
            order = L.orders.get(call)
            if order is not None:
                order.target = child
                a.order = a.order or order.text
        for child, nick in L.nickname.items():
            a = s.agents.get(child)
            if a is not None and child in self._unnamed:
                a.name = nick
        for e in list(L.unresolved):
            child = L.child_by_path.get(e.detail, "")
            if child:
                e.target, e.id = child, L.call_of(child)
                if child in s.agents:
                    s.agents[child].report = e.text
                L.reported.add((child, e.text))
                L.finished.add(child)
                L.unresolved.remove(e)
        for child, text in L.first_orders.items():
            a = s.agents.get(child)
            if a is not None and not a.order:
                a.order = text
        for a in s.agents.values():
            if a.id == self.root:
                continue
            if a.id in L.finished:
                a.finished = True
            if ((a.report is None and a.finished) or a.kind == "guardian") and L.answers.get(a.id):
                # The child's own last answer when the lead's copy is not on disk; for a
                # guardian, its latest verdict (what explains a refused command).
                a.report = L.answers[a.id]
        s.version += 1

    def live(self, at: float | None = None) -> Live:
        return live_signals(self, at)


class BrokenHandle(Handle):
    """A rollout whose first line is not a readable session_meta: listed with an error."""

    def __init__(self, path: str, why: str):
        from .records import id_from_name

        super().__init__("codex", id_from_name(path))
        self.path = path
        self.session.error = f"{path}: {why}"

    def refresh(self) -> bool:
        return False

    def files(self) -> list[str]:
        return [self.path]


@register
class CodexSource(Source):
    name = "codex"
    label = "Codex"
    short = "Codex"
    colour = "#10a37f"
    folder_env = "CODEX_HOME"
    default_folder = "~/.codex"
    resume = "codex resume {id}"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.home = self.folder
        self.sessions_dir = self.under("sessions")
        # threads put away (`codex archive`, the TUI's archive): still spent, still searched,
        # listed as archived (Codex's own resume list hides them)
        self.archived_dir = self.under("archived_sessions")
        self.index = SessionIndex(self.under("session_index.jsonl"))
        self.system = SystemCache()  # locks and processes, for liveness (recorded ones in tests)
        self.folders = RolloutFolders(self.sessions_dir, self.archived_dir)
        self._threads: dict[str, ThreadInfo] = {}  # rollout path -> its meta
        self._bad: dict[str, tuple[tuple[int, ...], str]] = {}  # rollout path -> (its stat, why)
        self._locks: dict[str, int] = {}  # thread-writer lock file name -> inode
        self._moved: set[str] = set()  # session keys whose thread lock came or went at the last scan

    @property
    def names(self) -> dict[str, str]:
        return self.index.names

    def roots(self) -> list[str]:
        return [self.home] if self.home else []

    def watch_dirs(self) -> list[str]:
        # a thread's writer lock taken or let go moves its folder, not the home's
        return [self.home, self.under("thread-writer-locks"), self.archived_dir] if self.home else []

    def exists(self) -> bool:
        return os.path.isdir(self.sessions_dir) or os.path.isdir(self.archived_dir)

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        self.index.refresh()
        self.notes = list(self.index.problems)  # session_index.jsonl's bad lines
        self.files = Files()
        paths = self.folders.rollouts(self.files)
        for path in paths:
            if path in self._threads:
                continue
            self._read_meta(path)
        listed = set(paths)
        for path in self._threads.keys() - listed:
            del self._threads[path]
        for path in self._bad.keys() - listed:  # (gone: back, it is read again, not said broken as then)
            del self._bad[path]
        by_id: dict[str, tuple[ThreadInfo, str]] = {}
        for path in sorted(self._threads, key=lambda p: (self.folders.archived(p), p)):  # in both: its live copy
            info = self._threads[path]
            by_id.setdefault(info.id, (info, path))
        groups: dict[str, list[tuple[ThreadInfo, str]]] = {}
        for tid, (info, path) in by_id.items():
            groups.setdefault(root_of(tid, by_id), []).append((info, path))
        found: dict[str, Handle] = {}
        for root, threads in groups.items():
            key = f"codex:{root}"
            h = known.get(key)
            if isinstance(h, CodexHandle):
                h.set_threads(threads)
            else:
                h = CodexHandle(self, root, threads)
            found[key] = h
            # put away: its root thread's rollout is archived (or, the root's gone, all of them are)
            lead = [p for i, p in threads if i.id == root]
            h.archived = all(self.folders.archived(p) for p in (lead or [p for _, p in threads]))
            if h.session.archived != h.archived:
                h.session.archived = h.archived
                h.session.version += 1
        read = {f for h in found.values() for f in h.files()}
        for path, (_size, why) in self._bad.items():
            if path in listed and path not in read:  # a thread being read says its own trouble
                h = BrokenHandle(path, why)
                found.setdefault(h.key, h)
        moved = self._lock_changes()
        if moved:
            self.system.forget()  # a lock just taken must be read as held, not from last second's view
        self._moved = {f"codex:{root}" for root, threads in groups.items() if any(i.id in moved for i, _ in threads)}
        return found

    def live_changed(self) -> set[str]:
        return self._moved

    def writes(self, thread: str) -> bool:
        """Whether a live process may hold the thread: its writer lock is there and held
        (or there, where holders cannot be told)."""
        path = os.path.join(self.under("thread-writer-locks"), f"{thread}.lock")
        if not os.path.exists(path):
            return False
        state, _pid = self.system.view(None).lock(path)
        return state != "stale"

    def came(self, path: str, known: dict[str, Handle]) -> Handle | None:
        from .came import came

        thread = came(self, path, known)
        return None if thread is None else CodexHandle(self, thread[0].id, [thread])

    def between_scans(self, known: dict[str, Handle]) -> set[str] | None:
        if any(isinstance(h, BrokenHandle) for h in known.values()):
            return None  # a rollout whose first line was unreadable moved: its meta is read again
        if any(n.endswith(".lock") for n in _names(self.under("thread-writer-locks"))):
            return None  # a thread's lock is held: the scan knows whose session it is
        self.index.refresh()  # the names sessions take from session_index.jsonl
        self.notes = list(self.index.problems)
        self._locks, self._moved = {}, set()
        return set()

    def live_inputs(self) -> list[str]:
        # what between_scans looks at: the writer locks' folder and the names' index
        return [self.under("thread-writer-locks"), self.index.reader.path]

    def _lock_changes(self) -> set[str]:
        """Thread ids whose writer lock was created, removed or made anew since the last scan
        (a dead holder leaves its lock in place: the rows of live sessions are looked at
        every second for that)."""
        folder = self.under("thread-writer-locks")
        now: dict[str, int] = {}
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.name.endswith(".lock"):
                        try:
                            now[e.name] = e.inode()
                        except OSError:
                            continue
        except OSError:
            pass
        before, self._locks = self._locks, now
        return {n[: -len(".lock")] for n in before.keys() | now.keys() if before.get(n) != now.get(n)}

    def _read_meta(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError as exc:
            remember(path, exc)  # a symlink loop: a note (a missing file is none), its only one
            self._bad.pop(path, None)
            return
        # size, times and inode: a chmod back, a FIFO removed, a file put back all count
        size = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        bad = self._bad.get(path)
        if bad is not None and bad[0] == size:
            return
        from .records import read_meta

        info, why = read_meta(path)
        if info is not None:
            self._threads[path] = info
            self._bad.pop(path, None)
        elif why:
            self._bad[path] = (size, why)


def _names(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def root_of(tid: str, by_id: dict[str, tuple[ThreadInfo, str]]) -> str:
    """The root thread of a thread: up the parent links its own records give. A parent
    whose rollout is missing still names the session (its children stay together): the
    root Codex names (`session_id`), else that parent."""
    seen: set[str] = set()
    cur = tid
    while True:
        seen.add(cur)
        known = by_id.get(cur)
        if known is None:
            return cur
        info = known[0]
        parent = info.parent
        if not parent:
            return cur
        if parent not in by_id and info.root_hint and info.root_hint != cur:
            parent = info.root_hint  # the parent's file is gone: the root Codex names holds the session
        if parent in seen:
            return cur
        cur = parent
