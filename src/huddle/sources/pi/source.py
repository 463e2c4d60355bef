"""Pi (`@earendil-works/pi-coding-agent`, and `@mariozechner/pi-coding-agent` before 0.74):
one JSONL file per session, `<sessions>/--<cwd>--/<time>_<session id>.jsonl`, appended as
Pi works (homes.py says where the session folders are).

A file's first line is its header (the session's id, cwd, and the parent file of a
fork); the parser reads the rest (parser.py). Finding sessions costs listings (reused
while a folder's mtime stands) and, once per new file, its first line; reading a live
session reads its appended bytes. Every file met in a session folder that is not read
into a session is said, with why, in `accounts` (path -> (verdict, reason)).
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from huddle.io import safefile
from huddle.io.proctable import ProcCache, ProcTable
from huddle.io.reader import GONE, RESET, SAME, LineReader
from huddle.model.files import Files
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from . import homes
from . import records as rec
from .parser import Parser

HEAD_MAX = 1 << 16  # a header line is small; a first line longer than this is not one
NOT_SESSION = "not a session"
NOT_READ = "not read"


class PiHandle(Handle):
    def __init__(self, source: PiSource, sid: str, path: str, root: str) -> None:
        super().__init__("pi", sid)
        self.source = source
        self.sid = sid
        self.path = path
        self.root = root
        self._fresh()

    def _fresh(self) -> None:
        s = self.session
        a = s.agent(self.sid, parent=None, name="main")
        a.kind = "main"
        a.file = self.path
        self.reader = LineReader(self.path, within=self.root)
        self.parser = Parser(s, self.path, self.sid)
        s.version += 1

    def files(self) -> list[str]:
        return [self.path]

    def refresh(self, _again: bool = True) -> bool:
        s = self.session
        before = s.version
        status = self.reader.check()
        if status in (GONE, SAME):
            return False
        if status == RESET:  # rewritten (Pi migrates an old file in place): read it again
            if not _again:
                raise RuntimeError(f"{self.path}: rewritten while being read")
            s.reset()
            self._fresh()
            return self.refresh(_again=False) or True
        p = self.parser

        def flush() -> None:  # in batches: the session's bookkeeping is per call
            s.add_all(p.out)
            p.out.clear()

        drain(self.reader, s, p.feed, p.out, flush, every=256)  # a bad line costs that line
        return s.version != before

    def live(self, at: float | None = None) -> Live:
        from .live import signals

        return signals(self, at)


@register
class PiSource(Source):
    name = "pi"
    label = "Pi"
    short = "Pi"
    colour = "#0f766e"
    folder_env = "PI_CODING_AGENT_DIR"
    default_folder = "~/.pi/agent"
    resume = "pi --session {id}"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.env = os.environ
        self.system = ProcCache()  # the process table, for liveness (a recorded one in tests)
        self.homes = homes.homes(self.folder, self.env)
        self._settings = homes.Settings()
        self._dirs: dict[str, tuple[tuple[int, int], list[str], list[str]]] = {}
        self._heads: dict[str, tuple[int, str | None, str, str]] = {}  # file -> (size, session id, why not, cwd)
        self.found: list[tuple[str, str, str]] = []  # the last scan's sessions: (id, file, cwd)
        self._claims: tuple[int, Any] | None = None
        self._asks: dict[str, tuple[tuple[Any, ...], bool]] = {}
        self.accounts: dict[str, tuple[str, str]] = {}  # file met, not read into a session -> (verdict, reason)

    # -- folders -------------------------------------------------------------------

    def session_dirs(self) -> list[str]:
        dirs, notes = homes.session_dirs(self.homes, self.env, self._settings)
        self.notes = notes
        return dirs

    def roots(self) -> list[str]:
        out = [h.agent_dir for h in self.homes if h.agent_dir]
        for d in self.session_dirs():
            if not any(safefile.inside(d, r) for r in out):
                out.append(d)
        return out

    def exists(self) -> bool:
        return any(os.path.isdir(d) for d in self.session_dirs())

    def watch_dirs(self) -> list[str]:
        return self.session_dirs()

    def config_files(self) -> list[str]:
        return [h.settings for h in self.homes]

    # -- finding sessions ----------------------------------------------------------

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        found: dict[str, Handle] = {}
        self.accounts = {}
        mine = {h.path for h in known.values() if isinstance(h, PiHandle)}
        for root in self.session_dirs():
            subdirs, files = self._listing(root)
            for name in files:
                self._consider(root, os.path.join(root, name), found, known, mine)
            for d in subdirs:
                folder = os.path.join(root, d)
                deeper, kids = self._listing(folder)
                for name in kids:
                    self._consider(root, os.path.join(folder, name), found, known, mine)
                for sd in deeper:
                    self.accounts[os.path.join(folder, sd)] = (
                        NOT_READ,
                        "a folder inside a project folder: not where Pi writes sessions",
                    )
        for h in self.homes:
            if os.path.isfile(h.settings):
                self.accounts[h.settings] = (NOT_SESSION, "Pi's settings")
        self.found = [(h.sid, h.path, self._heads[h.path][3]) for h in found.values() if isinstance(h, PiHandle)]
        self.files = Files.of(self.accounts, self.roots())  # (huddle doctor reads these)
        return found

    def _consider(
        self, root: str, path: str, found: dict[str, Handle], known: dict[str, Handle], mine: set[str]
    ) -> None:
        if not path.endswith(".jsonl"):
            self.accounts[path] = (NOT_SESSION, "not a session file (Pi writes <time>_<id>.jsonl)")
            return
        if path not in mine and not safefile.plain_path(path):
            self.accounts[path] = (NOT_READ, "not a regular file")
            return
        sid, why = self._head(path)
        if sid is None:
            self.accounts[path] = (NOT_READ if why else NOT_SESSION, why or "empty file")
            return
        key = f"pi:{sid}"
        other = found.get(key)
        if isinstance(other, PiHandle):
            self.accounts[path] = (NOT_READ, f"the same session id as {other.path}")
            return
        old = known.get(key)
        if isinstance(old, PiHandle) and old.path == path:
            old.source = self
            found[key] = old
        else:
            found[key] = PiHandle(self, sid, path, root)

    def _head(self, path: str) -> tuple[str | None, str]:
        """A file's session id, from its first line (once per file; again while it grows)."""
        cached = self._heads.get(path)
        if cached is not None and cached[1] is not None:
            return cached[1], cached[2]
        try:
            size = os.stat(path).st_size
        except OSError:
            self._heads.pop(path, None)
            return None, ""
        if cached is not None and cached[0] == size:
            return cached[1], cached[2]
        sid, why, cwd = _read_head(path)
        self._heads[path] = (size, sid, why, cwd)
        return sid, why

    def _listing(self, folder: str) -> tuple[list[str], list[str]]:
        """(sub-folders, other entries) of a folder, reused while its mtime and ctime stand."""
        try:
            st = os.stat(folder)
        except OSError:
            self._dirs.pop(folder, None)
            return [], []
        stamp = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod, which no mtime shows
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
        subdirs: list[str] = []
        files: list[str] = []
        for entry in safefile.listdir(folder):
            try:
                (subdirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
            except OSError:
                files.append(entry.name)
        self._dirs[folder] = (stamp, sorted(subdirs), sorted(files))
        return self._dirs[folder][1], self._dirs[folder][2]

    # -- what sessions say of each other, and of the machine ------------------------

    def settle(self, handles: dict[str, Handle]) -> set[str]:
        """A fork whose parent's file is not here (its scan found none, asleep or read): the
        history copied from it is counted nowhere, as the parent's own would not be."""
        changed = set()
        present = {sid for sid, _, _ in self.found}
        for key, h in handles.items():
            if not isinstance(h, PiHandle) or not h.parser.parent_id:
                continue
            s = h.session
            note = ""
            if h.parser.parent_id not in present:
                note = f"forked from {h.parser.parent_id}, whose file is not here: the history copied from it is not counted"
            if s.usage_note != note:
                s.usage_note = note
                s.version += 1
                changed.add(key)
        return changed

    def claims(self, view: ProcTable) -> Any:
        """Which session each pi process works on (once per moment's table)."""
        from .live import Claims

        if self._claims is None or self._claims[0] != id(view):
            self._claims = (id(view), Claims(view, self.found))
        return self._claims[1]

    def may_ask(self, cwd: str) -> bool:
        """Whether an extension may be loaded that can ask (Pi itself never does): any in
        the agent folders, a package in their settings, or a project's `.pi/`."""
        places = [os.path.join(h.agent_dir, "extensions") for h in self.homes] + [h.settings for h in self.homes]
        if cwd:
            places.append(os.path.join(cwd, ".pi"))
        key = tuple(safefile.stamp(p) for p in places)
        got = self._asks.get(cwd)
        if got is not None and got[0] == key:
            return got[1]
        asks = any(safefile.listdir(p) for p in places if not p.endswith(".json") and os.path.isdir(p))
        for h in self.homes:
            doc = safefile.read_json(h.settings) if os.path.isfile(h.settings) else None
            if isinstance(doc, dict) and (doc.get("packages") or doc.get("extensions")):
                asks = True
        self._asks[cwd] = (key, asks)
        return asks


def _read_head(path: str) -> tuple[str | None, str, str]:
    """A file's session id (None when its first line is no header, with why), and its cwd."""
    try:
        with safefile.open_regular(path) as f:
            head = f.read(4096)  # a header is a few hundred bytes
            if b"\n" not in head and len(head) == 4096:
                head += f.read(HEAD_MAX - len(head))
    except OSError as exc:
        safefile.remember(path, exc)  # mode 000: a note until it reads (a missing file is none)
        return None, ("unreadable" if not isinstance(exc, FileNotFoundError) else ""), ""
    safefile.forget(path)
    nl = head.find(b"\n")
    if nl < 0:
        return None, ("" if len(head) < HEAD_MAX else "first line is not a session header (too long)"), ""
    try:
        r = rec.decode_entry(head[:nl])
    except (msgspec.DecodeError, RecursionError) as exc:
        return None, f"first line is not a session header ({exc})", ""
    if r.type != "session" or not isinstance(r.id, str) or not r.id:
        return None, "first line is not a session header", ""
    return r.id, "", r.cwd or ""
