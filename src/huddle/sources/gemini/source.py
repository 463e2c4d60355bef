"""Gemini CLI sessions: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` (the CLI's own rule:
its home folder is `$GEMINI_CLI_HOME`, else the user's home; `HUDDLE_GEMINI_DIR` points
huddle at another `.gemini` folder).

A lead session is `chats/session-<time>-<id8>.jsonl`, whose first line names its full
`sessionId`; each sub-agent run is `chats/<parent id>/<sub-agent id>.jsonl`. A lead and
its sub-agents (at any depth) are one session with one tree, keyed by the lead's id. The
project's path is `tmp/<project>/.project_root`. Older CLIs kept one JSON document per
session (`session-*.json`, rewritten in place): read whole again whenever it changes.

Finding sessions costs listings (reused while a folder's mtime stands) and, once per new
lead file, its first line. Reading a live session reads its appended bytes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import msgspec

from huddle.io import safefile
from huddle.io.proctable import ProcCache
from huddle.io.reader import GONE, RESET, SAME, LineReader
from huddle.model import events as ev
from huddle.model.events import one_line
from huddle.model.files import EMPTY, UNREADABLE, Files
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

if TYPE_CHECKING:
    from .parser import ChatParser

# Its records, parser and live rules load when a Gemini session is read (not on every
# board of a machine without Gemini sessions, nor on one whose sessions sleep).

HEAD_MAX = 1 << 16  # a header line is small; a first line longer than this is not one


class ChatFile:
    def __init__(self, agent: str, parent: str | None, path: str):
        self.agent = agent
        self.parent = parent
        self.path = path
        self.reader = LineReader(path)
        self.legacy = path.endswith(".json")
        self.stamp: tuple[int, int, int] | None = None  # a legacy document's (ino, size, mtime)
        self.parser: ChatParser | None = None


class GeminiHandle(Handle):
    def __init__(self, source: GeminiSource, lead: str, files: list[tuple[str, str | None, str]], cwd: str):
        super().__init__("gemini", lead)
        self.source = source
        self.lead = lead
        self.cwd = cwd
        self.chats: dict[str, ChatFile] = {}
        self._fresh(files)

    def _fresh(self, files: list[tuple[str, str | None, str]]) -> None:
        from .parser import Links

        s = self.session
        self.links = Links()
        a = s.agent(self.lead, parent=None, name="main")
        a.kind = "main"
        s.cwd = self.cwd
        self.chats = {}
        self.set_files(files)

    def set_files(self, files: list[tuple[str, str | None, str]]) -> None:
        """The files of this session now on disk (agent id, parent id, path)."""
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
            a.name = f"sub-agent {agent[:8]}"
        s.version += 1

    def files_list(self) -> list[ChatFile]:
        # The lead first: its calls, when written, carry the orders its sub-agents' files repeat.
        return sorted(self.chats.values(), key=lambda cf: (cf.parent is not None, cf.path))

    def files(self) -> list[str]:
        return [cf.path for cf in self.files_list()]

    # -- reading -------------------------------------------------------------------------

    def refresh(self, _again: bool = True) -> bool:
        s = self.session
        before = s.version
        for cf in self.files_list():
            if cf.legacy:
                stamp = _stamp(cf.path)
                if stamp is None or stamp == cf.stamp:
                    continue
                if cf.stamp is not None:  # rewritten in place: what was derived from it is stale
                    return self._start_over(_again)
                cf.stamp = stamp
                self._read_legacy(cf)
                continue
            status = cf.reader.check()
            if status in (GONE, SAME):
                continue
            if status == RESET:
                return self._start_over(_again)
            if _again and cf.parent is None and not cf.reader.cursor.offset and self._subs_read():
                # the lead's first lines come after its sub-agents' (it was empty, or cut and
                # written again): read again lead first, as a cold read does, or the orders
                # the sub-agents' files repeat would stand before the lead's own events
                return self._start_over(_again)
            self._drain(cf)
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

    def _read_legacy(self, cf: ChatFile) -> None:
        """An older CLI's whole-session document: every message, then its summary."""
        from . import records as rec

        p = cf.parser
        assert p is not None
        try:
            data = safefile.read_small(cf.path, safefile.DOC_MAX)  # a regular file, never read past the cap
        except FileNotFoundError:
            return
        except OSError as exc:
            self.session.problem(cf.path, 0, f"not read ({exc.strerror or exc})")
            return
        try:
            doc = rec.decode_legacy(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            self.session.problem(cf.path, 0, f"not a chat document ({exc})")
            return
        for m in doc.messages or ():
            mark = len(p.out)
            try:
                p.message(rec.decode_record(m), 0, len(data))
            except msgspec.DecodeError:
                self.session.problem(cf.path, 0, "a message that is not one")
            except (RecursionError, ValueError, TypeError, AttributeError) as exc:  # one message, not the session
                del p.out[mark:]
                self.session.problem(cf.path, 0, f"a message that could not be read ({type(exc).__name__})")
        p.flush_end()
        if doc.summary and cf.parent is None:
            p.emit(ev.TITLE, None, 0, len(data), text=one_line(doc.summary, 200), detail="ai")
        self.session.add_all(p.out)
        p.out.clear()

    def _link(self) -> None:
        s, L = self.session, self.links
        for child, order in L.orders.items():
            a = s.agents.get(child)
            if a is None:
                continue
            if a.tool_use_id != order.id:
                a.tool_use_id = order.id
                s.version += 1
            kind = L.kinds.get(child)
            if kind and a.kind != kind:
                a.kind = kind
                a.name = kind
                s.version += 1
            if not a.order:
                a.order = order.text
        for cf in self.chats.values():
            p = cf.parser
            if cf.parent is not None and p is not None and p.finished and not s.agents[cf.agent].finished:
                s.agents[cf.agent].finished = True
                s.version += 1

    def live(self, at: float | None = None) -> Live:
        from .live import live_signals

        return live_signals(self, at)


class BrokenHandle(Handle):
    """A lead file whose first line is not a readable header: listed with an error."""

    def __init__(self, path: str, why: str):
        super().__init__("gemini", os.path.basename(path).rsplit(".", 1)[0])
        self.path = path
        self.session.error = f"{path}: {why}"

    def refresh(self) -> bool:
        return False

    def files(self) -> list[str]:
        return [self.path]


@register
class GeminiSource(Source):
    name = "gemini"
    label = "Gemini CLI"
    short = "Gemini"
    colour = "#4285f4"
    folder_env = "HUDDLE_GEMINI_DIR"
    default_folder = "$GEMINI_CLI_HOME/.gemini"
    resume = "gemini --resume {id}"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.tmp = self.under("tmp")
        self.system = ProcCache()  # the process table, for liveness (a recorded one in tests)
        self._dirs: dict[str, tuple[tuple[int, int], list[str], list[str]]] = {}  # folder -> (times, subdirs, files)
        self._heads: dict[str, tuple[int, str | None, str]] = {}  # lead file -> (size, session id, why not)
        self._roots: dict[str, str] = {}  # project folder -> its project path
        self._by_cwd: dict[str, list[GeminiHandle]] = {}  # project path -> its sessions, as last scanned

    def roots(self) -> list[str]:
        return [self.folder] if self.folder else []

    def exists(self) -> bool:
        return bool(self.tmp) and os.path.isdir(self.tmp)

    def watch_dirs(self) -> list[str]:
        return [self.tmp] if self.tmp else []

    def latest(self, cwd: str) -> str | None:
        """The project's most recently active session: the one a `gemini` started there
        without naming a session works on."""
        hs = self._by_cwd.get(cwd) or []
        best = max(hs, key=lambda h: h.session.updated_at or 0.0, default=None)
        return best.lead if best is not None else None

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        found: dict[str, Handle] = {}
        by_cwd: dict[str, list[GeminiHandle]] = {}
        subdirs, _ = self._listing(self.tmp)
        self.files = account = Files()
        account.looked_in(self.tmp)
        # a file a session reads already is left to its reader, which says what is wrong
        # with it now (a FIFO, a symlink out, mode 000); a new one must be a plain file
        mine = {cf.path for h in known.values() if isinstance(h, GeminiHandle) for cf in h.chats.values()}

        def plain(path: str) -> bool:
            return path in mine or safefile.plain_path(path)

        for proj in subdirs:
            pdir = os.path.join(self.tmp, proj)
            chats = os.path.join(pdir, "chats")
            dirs, files = self._listing(chats)
            if not dirs and not files:
                continue
            cwd = self._project_root(pdir)
            account.looked_in(chats)
            leads: dict[str, str] = {}  # session id -> its file
            for name in sorted(files):
                path = os.path.join(chats, name)
                if not plain(path):
                    account.unread(path, f"{UNREADABLE}: not a regular file in its folder")
                    continue
                sid, why = self._head(path)
                if sid is None:
                    if why:
                        broken = BrokenHandle(path, why)
                        found.setdefault(broken.key, broken)
                    else:
                        account.not_session(path, f"{EMPTY}: no first line yet")
                    continue
                leads.setdefault(sid, path)
            # sub-agent folders are named after their parent's id, at any depth
            parent_of: dict[str, str] = {}
            child_files: dict[str, str] = {}
            for d in dirs:
                _, kids = self._listing(os.path.join(chats, d))
                for k in kids:
                    if k.endswith(".jsonl") and plain(os.path.join(chats, d, k)):
                        cid = k[: -len(".jsonl")]
                        parent_of.setdefault(cid, d)
                        child_files.setdefault(cid, os.path.join(chats, d, k))
            groups: dict[str, list[tuple[str, str | None, str]]] = {}
            for sid, path in leads.items():
                groups.setdefault(sid, []).append((sid, None, path))
            for cid, path in child_files.items():
                groups.setdefault(_root(cid, parent_of), []).append((cid, parent_of[cid], path))
            for sid, files_ in groups.items():
                key = f"gemini:{sid}"
                old = known.get(key)
                if isinstance(old, GeminiHandle):
                    h = old
                    h.source = self
                    h.set_files(files_)
                else:
                    h = GeminiHandle(self, sid, files_, cwd)
                found[key] = h
                if sid in leads and cwd:
                    by_cwd.setdefault(cwd, []).append(h)
        self._by_cwd = by_cwd
        return found

    def _head(self, path: str) -> tuple[str | None, str]:
        """A lead file's session id, from its first line (once per file; again while it grows
        from empty)."""
        cached = self._heads.get(path)
        if cached is not None and cached[1] is not None:
            return cached[1], cached[2]
        try:
            size = os.stat(path).st_size
        except OSError:
            return None, ""
        if cached is not None and cached[0] == size:
            return cached[1], cached[2]
        sid, why = _read_head(path)
        self._heads[path] = (size, sid, why)
        return sid, why

    def _project_root(self, pdir: str) -> str:
        got = self._roots.get(pdir)
        if got is None:
            path = os.path.join(pdir, ".project_root")
            try:
                with safefile.open_regular(path) as f:  # a FIFO in its place must not block the scan
                    got = f.read(4096).decode("utf-8", "replace").strip()
            except OSError as exc:
                safefile.remember(path, exc)  # said on the board until it can be read
                got = ""
            if got:
                self._roots[pdir] = got
        return got

    def _listing(self, folder: str) -> tuple[list[str], list[str]]:
        if not folder:
            return [], []
        try:
            st = os.stat(folder)
            mtime = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod, which no mtime shows
        except OSError:
            self._dirs.pop(folder, None)
            return [], []
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == mtime:
            return cached[1], cached[2]
        subdirs, files = [], []
        leads_only = os.path.basename(folder) == "chats"  # beside sub-agent folders: session-*.json(l)
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    name = entry.name
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(name)
                    elif name.endswith((".jsonl", ".json")) and (name.startswith("session-") or not leads_only):
                        files.append(name)  # a plain file? asked when it is read (scan)
        except OSError as exc:
            safefile.remember(folder, exc)
            return [], []
        safefile.forget(folder)
        self._dirs[folder] = (mtime, subdirs, files)
        return subdirs, files


def _read_head(path: str) -> tuple[str | None, str]:
    from . import records as rec

    try:
        with safefile.open_regular(path) as f:
            head = f.read(HEAD_MAX)
    except OSError as exc:
        safefile.remember(path, exc)  # mode 000: a note until it reads (a missing file is none)
        return None, ""
    safefile.forget(path)
    if path.endswith(".json"):
        if not head:
            return None, ""
        try:
            doc = rec.decode_legacy(safefile.read_small(path, safefile.DOC_MAX))
        except (OSError, msgspec.DecodeError, RecursionError) as exc:
            return None, f"not a chat document ({exc})"
        return (doc.sessionId, "") if doc.sessionId else (None, "a chat document without a sessionId")
    nl = head.find(b"\n")
    if nl < 0:
        return None, ""  # still being written
    try:
        r = rec.decode_record(head[:nl])
    except (msgspec.DecodeError, RecursionError) as exc:
        return None, f"first line is not a session header ({exc})"
    if not r.sessionId:
        return None, "first line is not a session header (no sessionId)"
    return r.sessionId, ""


def _root(cid: str, parent_of: dict[str, str]) -> str:
    seen = {cid}
    cur = cid
    while cur in parent_of:
        nxt = parent_of[cur]
        if nxt in seen:
            break
        seen.add(nxt)
        cur = nxt
    return cur


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
