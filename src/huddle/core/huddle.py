"""The core object. The CLI, the web server and any TUI are thin clients of it.

`Huddle` is a plain reader: it finds every session of every source, keeps one
incremental handle per session, and answers the questions the views ask (the board,
one session, its timeline). A failing adapter or session is contained: it shows as an
`error`. What is kept between runs (the handle cache, the sessions it leaves unread,
when they wake) is a `Keeper` beside it (keeper.py), given at construction.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from huddle.errors import BadRequest, HuddleError, NotFound
from huddle.io.safefile import unreadable
from huddle.model.ledger import Ledger
from huddle.model.session import Session
from huddle.sources import Handle, Settings, all_sources, guarded, load_notes
from huddle.sources.base import Source
from huddle.sources.registry import unknown_sources

from . import titles, whole
from .cache import Dormant, HandleCache
from .coldread import FirstRead, read_in_parallel
from .keeper import Keeper, folder_of
from .reading import cache_form, refresh_one

MIN_PREFIX = 4  # characters of a session id that may name it, when no other starts so


class Round:
    """What one refresh found moving, as its steps tell each other."""

    __slots__ = ("changed", "gone_at", "live_moved", "moved", "regrouped", "settle", "touched")

    def __init__(self) -> None:
        self.changed: set[str] = set()  # the keys the refresh says changed
        self.moved: set[str] = set()  # sessions that came, went or read new bytes (not a live signal's move)
        self.live_moved: set[str] = set()  # sessions whose live signals moved
        self.gone_at: dict[str, str] = {}  # a session gone -> its folder (a title decided across it may move)
        self.regrouped: set[str] = set()  # sleeping sessions read again from their start
        # folders where a title decided across the folder can move -> the ties that moved
        # (Handle.ties), or None: anything in the folder may
        self.touched: dict[str, set[str] | None] = {}
        self.settle: set[str] = set()  # the sessions whose titles are worked out again (core.titles.tied)


class Huddle:
    def __init__(self, settings: Settings | None = None, sources: list[str] | None = None, keep: Keeper | None = None):
        """`sources`: the sources to read (default: HUDDLE_SOURCES, else all). `keep`: what is
        kept between runs, and so what this run may leave unread (core.keeper; none:
        everything is read, nothing kept)."""
        self.settings = settings or Settings.from_env()
        self.sources = all_sources(self.settings, sources)
        # adapters that failed to load, and names no adapter has, are said on every refresh
        self.load_notes = load_notes() + [
            f"no source named {n!r} (HUDDLE_SOURCES or --source)" for n in unknown_sources(self.settings, sources)
        ]
        self.handles: dict[str, Handle] = {}
        self.notes: list[str] = []  # one line per folder that could not be read
        self.lock = threading.RLock()  # the server refreshes from a thread
        self.generation = 0  # bumps when anything changed
        self.ledger = Ledger()  # a response seen in two sessions counts in one
        self.spared: set[str] = set()  # the sources the last refresh did not scan (core.answering)
        self.packed = 0  # sessions the last refresh left packed (cache.leave_packed)
        self.settled_in: set[str] = set()  # the folders the last refresh settled (Source.settle)
        # told (key, session) when a session is read whole (complete): the watcher pushes
        # a page's events from that point on
        self.on_complete: list[Callable[[str, Session], None]] = []
        self.keeper = keep if keep is not None and self.settings.huddle_home else None
        if self.keeper is not None:
            self.keeper.attach(self)

    # -- what the keeper holds ----------------------------------------------------------

    @property
    def cache(self) -> HandleCache | None:
        return self.keeper.cache if self.keeper is not None else None

    @property
    def dormant(self) -> dict[str, Dormant]:
        """The cached sessions left unread (their rows stand for them)."""
        return self.keeper.dormant if self.keeper is not None else {}

    @property
    def lazy(self) -> bool:
        """Whether cached sessions nothing moved in are left unread."""
        return self.keeper is not None and not self.keeper.mode.holds_all

    @property
    def partial(self) -> bool:
        return self.keeper is not None and self.keeper.partial

    # -- reading the disk ----------------------------------------------------------

    def refresh(self, first: FirstRead | None = None) -> set[str]:
        """Find sessions and read what was appended. Returns the keys that changed.
        `first`: how sessions read from their start are read (in workers, kept whole or
        not, told as they go: coldread.FirstRead)."""
        with self.lock:
            r = Round()
            notes: list[str] = list(self.load_notes)
            k = self.keeper
            still = k.waking(self, notes) if k is not None else set()
            found, scanned = self._scan_all(still, r, notes)
            if k is not None and k.dormant and scanned:  # (a missing source's sessions are gone with their files)
                found = k.kept(self, found, r, set(scanned))
            r.changed |= r.live_moved
            for key in self.handles.keys() - found.keys():
                r.changed.add(key)
                r.moved.add(key)
                r.gone_at[key] = folder_of(self.handles[key].files())
            self._read(found, r, first or FirstRead(workers=False))
            r.touched = titles.touched(self, found, r)
            r.settle = titles.tied(self, found, r)
            if k is not None:
                k.read(self, found, r)
            r.changed |= titles.settle(self, found, r, notes)
            self.handles = found
            r.changed |= self.ledger.sync({key: h.session for key, h in found.items()})
            # files and folders skipped where they were met (io.safefile), looked at again now
            notes.extend(unreadable([root for src in self.sources for root in src.roots()]))
            if k is not None:
                k.saved(self, scanned, notes, bool(r.changed))
            self.notes = notes
            if r.changed:
                self.generation += 1
            return r.changed

    def _scan_all(self, still: set[str], r: Round, notes: list[str]) -> tuple[dict[str, Handle], dict[str, bool]]:
        """Every source scanned, or spared its scan when its folders stood still (its live
        signals looked at only). Returns the sessions found and, per source scanned,
        whether its scan went through."""
        found: dict[str, Handle] = {}
        scanned: dict[str, bool] = {}
        missing = []
        self.spared = set()
        for src in self.sources:
            if not src.roots():
                continue  # no folder here at all (not set up for this source)
            if not src.exists():
                missing.append(src)
                continue
            if src.name in still and self.keeper is not None:
                stirred, spared = self.keeper.spare(self, src, notes)
                if spared:  # no session came or went: the sessions are the cached ones
                    self.spared.add(src.name)
                    found.update((key, h) for key, h in self.handles.items() if key.startswith(src.name + ":"))
                    r.live_moved |= stirred
                    notes.extend(src.notes)
                    continue
            mine = {key: h for key, h in self.handles.items() if key.startswith(src.name + ":")}
            got = guarded(f"{src.name} scan", src.scan, mine, on_error=notes.append)
            scanned[src.name] = got is not None
            if got:
                found.update(got)
                # a flipped registry entry or a taken lock changes a row as surely as a line
                moved = guarded(f"{src.name} live signals", src.live_changed, on_error=notes.append) or set()
                r.live_moved.update(key for key in moved if key in got)
            notes.extend(src.notes)
        self._missing(missing, notes)
        return found, scanned

    def _missing(self, missing: list[Source], notes: list[str]) -> None:
        agent_sources = [s for s in self.sources if s.roots()]
        if missing and len(missing) == len(agent_sources):
            where = ", ".join(root for s in missing for root in s.roots())
            notes.append(f"no agent session folders found (looked in {where})")
            return
        for src in missing:
            if src.name in self.settings.explicit:
                notes.append(f"{src.name}: no sessions folder at {', '.join(src.roots())}")

    def _read(self, found: dict[str, Handle], r: Round, first: FirstRead) -> None:
        """What each session appended; the new ones perhaps in workers (`first`)."""
        done: set[str] = set()
        self.packed = 0
        if first.workers:
            new = {key: h for key, h in found.items() if self.handles.get(key) is not h}
            packing = first.pack is not None and self.keeper is not None and not first.spawn
            packing = packing and not self.dormant and not self.handles
            cache = self.cache
            packed: dict[str, Any] | None = {} if packing else None
            rows = (first.pack, cache.head_of) if packing and cache is not None and first.pack is not None else None
            done = read_in_parallel(new, self.sources, self.settings if first.spawn else None, packed, rows)
            if packed and self.keeper is not None:
                asleep, unread = self.keeper.leave_packed(self, packed, new, found)
                r.changed.update(asleep)
                done -= unread
                self.packed = len(asleep)
            found.update((key, new[key]) for key in done)
        for i, (key, h) in enumerate(found.items()):
            if self.handles.get(key) is not h:
                r.changed.add(key)
                r.moved.add(key)
            if key not in done and refresh_one(h):
                r.changed.add(key)
                r.moved.add(key)
            if not first.keep_timelines and key not in done and self.handles.get(key) is not h:
                found[key] = cache_form(h)  # (a value replaced, not a key added: the loop goes on)
            if first.progress is not None:
                first.progress(i + 1, len(found))

    def read_files(self, paths: Iterable[str], folders: Iterable[str] = ()) -> set[str] | None:
        """What these files appended, read in the sessions that read them (a watcher's
        notice names the files: the sessions a line went to, not the home's stat checks);
        the keys that changed, or None when a file is no known session's (a new session
        or sub-agent: only a scan finds where it goes, a whole refresh), or a file a
        session read went from one of `folders` (a command saw them move: io.served).
        Whatever else moved is the next whole refresh's: a notice missed costs a poll."""
        with self.lock:
            owners: dict[str, str] = {}
            for key, h in self.handles.items():
                for f in h.files():
                    owners[f] = key
            for key, d in self.dormant.items():
                for f in d.head.get("files") or ():
                    owners.setdefault(f[0], key)
            if folders and not _all_there(owners, folders):
                return None
            keys: set[str] = set()
            came: dict[str, Handle] = {}
            for p in paths:
                owner = owners.get(p)
                if owner is None and (new := self.place(p)) is not None:
                    if self.handles.get(new.key) is new:
                        keys.add(new.key)  # (a file its own folder gives a session awake)
                    else:
                        came.setdefault(new.key, new)  # (a session that came, placed without a scan)
                elif owner is None or not _plain(p):
                    return None  # (a file gone, or put in place of another: only a scan says what it is now)
                else:
                    keys.add(owner)
            if self.wake(k for k in keys if k in self.dormant) or not keys <= self.handles.keys():
                return None  # (one did not unpickle: the scan reads it again)
            r = Round()
            r.moved = {k for k in keys if refresh_one(self.handles[k])}
            for key, new in came.items():
                self.handles[key] = new
                refresh_one(new)
                r.moved.add(key)
            r.changed = set(r.moved)
            found = dict(self.handles)
            r.touched = titles.touched(self, found, r)
            r.settle = titles.tied(self, found, r)
            if self.keeper is not None:
                self.keeper.read(self, found, r)
            r.changed |= titles.settle(self, found, r, self.notes)
            self.handles = found
            r.changed |= self.ledger.sync({key: h.session for key, h in found.items()})
            if r.changed:
                self.generation += 1
            return r.changed

    def place(self, path: str) -> Handle | None:
        """The handle that reads a file that came, from its source (Source.came): a new
        one, or an awake one given the file; None if only a scan places it, or it is a new
        handle of a session known (a file put in another's place)."""
        for src in self.sources:
            if any(root and path.startswith(root.rstrip(os.sep) + os.sep) for root in src.roots()):
                h = guarded(f"{src.name} came", src.came, path, self.handles)
                if h is None or self.handles.get(h.key) is h:
                    return h
                return h if h.key not in self.dormant and h.key not in self.handles else None
        return None

    # -- sessions whole, sessions asleep ------------------------------------------------

    def complete(self, key: str) -> Session | None:
        """The session with its whole timeline (whole.complete)."""
        return whole.complete(self, key)

    def read_whole(self, keys: Iterable[str]) -> Iterator[Session]:
        """Each of these sessions with its whole timeline, one at a time, not kept (whole.read_whole)."""
        return whole.read_whole(self, keys)

    def wake(self, keys: Iterable[str]) -> set[str]:
        """These sleeping sessions read into `handles`; returns the keys that could not be."""
        with self.lock:
            return self.keeper.wake(self, keys) if self.keeper is not None else set()

    def forget(self, key: str) -> None:
        """Read this cached session again from the start (its cached state is not wanted):
        its source is scanned next time, whether or not its folders moved."""
        with self.lock:
            if self.keeper is not None:
                self.keeper.forget(self, key)
            else:
                self.handles.pop(key, None)

    def wake_all(self) -> None:
        """Every sleeping session loaded (for views that need them all)."""
        with self.lock:
            if self.keeper is not None:
                self.keeper.wake_all(self)

    def board_files(self) -> dict[str, Any]:
        """Per session, what has `files()` (a handle, or a sleeping session's stamps): the
        board file's staleness check."""
        with self.lock:
            files: dict[str, Any] = self.keeper.stamped() if self.keeper is not None else {}
            files.update(self.handles)
            return files

    def watch_dirs(self) -> list[str]:
        """Folders whose mtime moves when a session or a live signal appears (the status
        line's staleness check)."""
        return [d for src in self.sources for d in src.watch_dirs()]

    # -- asking --------------------------------------------------------------------

    def sessions(self) -> list[Session]:
        with self.lock:
            self.wake_all()
            return [h.session for h in self.handles.values()]

    def loaded_sessions(self) -> list[Session]:
        """The sessions read into memory (all of them unless some sleep)."""
        with self.lock:
            return [h.session for h in self.handles.values()]

    def find(self, id: str) -> Handle:
        """The session named by its key (`claude:<id>`), its id, or a unique start of its
        id of at least MIN_PREFIX characters (what the board's short id column shows).
        NotFound when none; BadRequest, naming some, when several start so."""
        with self.lock:
            h = self.handles.get(id)
            if h is not None:
                return h
            for h in self.handles.values():
                if h.session.id == id:
                    return h
            if self.dormant:  # sessions left unread: the ones named are read now
                exact = [k for k in self.dormant if k == id or k.split(":", 1)[1] == id]
                near = exact or (
                    [k for k in self.dormant if k.startswith(id) or k.split(":", 1)[1].startswith(id)]
                    if len(id) >= MIN_PREFIX
                    else []
                )
                self.wake(near)
                for k in exact:
                    if k in self.handles:
                        return self.handles[k]
            if len(id) >= MIN_PREFIX:
                hits = [h for h in self.handles.values() if h.session.id.startswith(id) or h.key.startswith(id)]
                if len(hits) == 1:
                    return hits[0]
                if hits:
                    some = ", ".join(sorted(h.key for h in hits)[:4])
                    raise BadRequest(f"{id!r} starts {len(hits)} session ids ({some}...): give more of it")
            raise NotFound(f"no session {id}")

    def handle(self, id: str) -> Handle | None:
        try:
            return self.find(id)
        except HuddleError:
            return None

    def session(self, id: str) -> Session | None:
        h = self.handle(id)
        return h.session if h is not None else None

    def has_agent_folders(self) -> bool:
        return any(src.exists() for src in self.sources)

    def agent_roots(self) -> list[str]:
        return [os.path.realpath(r) for src in self.sources for r in src.roots()]


def _plain(path: str) -> bool:
    """Whether `path` is a regular file itself (no symlink, FIFO or folder in its place)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _all_there(files: Iterable[str], folders: Iterable[str]) -> bool:
    """Whether every one of `files` that sits right in one of `folders` is listed there."""
    listed: dict[str, set[str]] = {}
    for d in folders:
        try:
            listed[d] = set(os.listdir(d))
        except OSError:
            return False
    for f in files:
        d, _, name = f.rpartition(os.sep)
        if d in listed and name not in listed[d]:
            return False
    return True
