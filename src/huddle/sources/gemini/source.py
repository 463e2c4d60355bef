"""Gemini CLI sessions: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` (the CLI's own rule:
its home folder is `$GEMINI_CLI_HOME`, else the user's home; `HUDDLE_GEMINI_DIR` points
huddle at another `.gemini` folder).

A lead session is `chats/session-<time>-<id8>.jsonl`, whose first line names its full
`sessionId`; each sub-agent run is `chats/<parent id>/<sub-agent id>.jsonl`. A lead and
its sub-agents (at any depth) are one session with one tree, keyed by the lead's id. The
project's path is `tmp/<project>/.project_root`. Older CLIs kept one JSON document per
chat (`session-*.json`, rewritten in place): read whole again whenever it changes; their
sub-agents were documents too, beside the lead's (under its `sessionId`, `kind:
"subagent"`) or in its folder, and a session could span several top-level files: every
layout is in folders.py, which groups the files by the lead's id.

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
from huddle.model.files import Files
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from .folders import ChatFolders, File

if TYPE_CHECKING:
    from .parser import ChatParser

# Its records, parser and live rules load when a Gemini session is read (not on every
# board of a machine without Gemini sessions, nor on one whose sessions sleep).


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
    def __init__(self, source: GeminiSource, lead: str, files: list[File], cwd: str):
        super().__init__("gemini", lead)
        self.source = source
        self.lead = lead
        self.cwd = cwd
        self.chats: dict[str, ChatFile] = {}  # path -> its chat file (the lead may have several: folders.py)
        self._fresh(files)

    def _fresh(self, files: list[File]) -> None:
        from .parser import Links

        s = self.session
        self.links = Links()
        a = s.agent(self.lead, parent=None, name="main")
        a.kind = "main"
        s.cwd = self.cwd
        self.chats = {}
        self.set_files(files)

    def set_files(self, files: list[File]) -> None:
        """The files of this session now on disk (agent id, parent id, path)."""
        now = {path for _, _, path in files}
        new = [f for f in files if f[2] not in self.chats]
        moved = any(
            (cf.agent, cf.parent) != (agent, parent)
            for agent, parent, path in files
            if (cf := self.chats.get(path)) is not None
        )
        if moved or (new and not now >= self.chats.keys()):
            # a file read before stands for another agent now, or one went as another came
            # (a renamed file): what was derived from them is stale, so read them all again
            self.session.reset()
            self._fresh(files)
            return
        for agent, parent, path in new:
            self._add(agent, parent, path)

    def _add(self, agent: str, parent: str | None, path: str) -> None:
        from .parser import ChatParser

        s = self.session
        cf = self.chats[path] = ChatFile(agent, parent, path)
        cf.parser = ChatParser(s, self.links, agent, parent, path)
        if parent is None:
            a = s.agent(agent)
            a.file = a.file or path
        else:
            a = s.agent(agent, parent=parent, file=path)
            a.parent = parent
            a.kind = a.kind or "sub-agent"
            a.name = _sub_name(agent)
        s.version += 1

    def lead_chat(self) -> ChatFile | None:
        """The lead's chat being written: its latest part."""
        leads = [cf for cf in self.files_list() if cf.parent is None]
        return leads[-1] if leads else None

    def files_list(self) -> list[ChatFile]:
        # The lead first (its parts in their order: their names begin with their start time):
        # its calls, when written, carry the orders its sub-agents' files repeat.
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
        known = [(cf.agent, cf.parent, cf.path) for cf in self.files_list()]
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
        self.folders = ChatFolders()  # listings, heads and project paths, kept between scans
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
        subdirs, _ = self.folders.listing(self.tmp)
        self.files = account = Files()
        account.looked_in(self.tmp)
        # a file a session reads already is left to its reader, which says what is wrong
        # with it now (a FIFO, a symlink out, mode 000); a new one must be a plain file
        mine = {cf.path for h in known.values() if isinstance(h, GeminiHandle) for cf in h.chats.values()}

        def plain(path: str) -> bool:
            return path in mine or safefile.plain_path(path)

        for proj in subdirs:
            pdir = os.path.join(self.tmp, proj)
            groups, broken, leads = self.folders.groups(os.path.join(pdir, "chats"), plain, account)
            for path, why in broken:
                b = BrokenHandle(path, why)
                found.setdefault(b.key, b)
            if not groups:
                continue
            cwd = self.folders.project_root(pdir)
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


def _sub_name(agent: str) -> str:
    """A sub-agent's name until its lead's call says its kind. A chat recorded under its
    lead's id (before 2026-03-27) is named by its file, `session-<date>T<HH-MM>-<lead id8>`:
    its start."""
    if agent.startswith("session-") and len(agent) >= 24:
        return f"sub-agent {agent[19:24].replace('-', ':')}"
    return f"sub-agent {agent[:8]}"


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
