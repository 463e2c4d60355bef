"""The core object. The CLI, the web server and any TUI are thin clients of it.

`Huddle` finds every session of every source, keeps one incremental handle per
session, and answers the questions the views ask (the board, one session, its
timeline). A failing adapter or session is contained: it shows as an `error`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from huddle.errors import BadRequest, HuddleError, NotFound
from huddle.io.boardfile import write_board
from huddle.io.safefile import unreadable
from huddle.model.ledger import Ledger
from huddle.model.session import Session
from huddle.sources import Handle, Settings, all_sources, guarded, load_notes
from huddle.sources.base import Source
from huddle.sources.registry import unknown_sources

from . import sleeping, whole
from .cache import BOARD, Dormant, HandleCache, Stamped, leave_packed, tangled_with
from .coldread import Packed, read_in_parallel
from .reading import cache_form, read_files, refresh_one

MIN_PREFIX = 4  # characters of a session id that may name it, when no other starts so


class Huddle:
    def __init__(
        self,
        settings: Settings | None = None,
        sources: list[str] | None = None,
        cache: bool = False,
        cache_name: str = BOARD,
        lazy: bool = False,
        text_only: bool = False,
        only: Iterable[str] | None = None,
    ):
        """`cache`: keep reading state in $HUDDLE_HOME/cache (`cache_name`). `lazy`: leave
        cached sessions nothing moved in unread. Reading for token counts only
        (settings.usage_only) no live signal matters: any unmoved session sleeps, and
        when no folder moved either, the sources are not even scanned. `text_only`:
        reading for what sessions say (the search index), where rows and live signals
        do not matter either: any session whose files did not move sleeps. `only` (lazy):
        the core holds these cached sessions alone, as if no other were stored: the part
        of a board that a stored answer says moved (views.patching)."""
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
        self.cache: HandleCache | None = None
        self.ledger = Ledger()  # a response seen in two sessions counts in one
        # lazy: cached sessions stay unread (Dormant: their board row stands for them)
        # until their files move or something asks for them (sessions(), handle())
        self.dormant: dict[str, Dormant] = {}
        self.lazy = lazy and cache
        self.text_only = text_only
        self.partial = only is not None and self.lazy  # (core.answering: what it builds is not a whole board)
        self.built_rows: dict[str, dict[str, Any]] = {}  # the last board's rows, listed or not (lazy)
        # refresh() writes the cache each time; a long-lived reader (the server's watcher)
        # turns that off and saves with its rows now and then (save_rows)
        self.autosave = True
        self._unstamped: dict[str, bool] = {}  # scans not yet stamped (autosave off)
        self.spared: set[str] = set()  # the sources the last refresh did not scan (core.answering)
        self.packed = 0  # sessions the last refresh left packed (cache.leave_packed)
        self.settled_in: set[str] = set()  # the folders the last refresh settled (sleeping.settle_moved)
        # told (key, session) when a session is read whole (complete): the watcher pushes
        # a page's events from that point on
        self.on_complete: list[Callable[[str, Session], None]] = []
        self.whole_at: dict[str, float] = {}  # key -> when (monotonic) a view last asked for it whole
        if cache and self.settings.huddle_home and (lazy or not self.settings.usage_only):
            key = (
                tuple(sorted(self.settings.folders.items())),
                tuple(sorted(s.name for s in self.sources)),  # (the order adapters were imported in is no part of it)
                self.settings.usage_only,
            )
            self.cache = HandleCache(self.settings.huddle_home, key, cache_name)
            if lazy:
                self.dormant = self.cache.load_dormant(self.sources, only if self.partial else None)
            else:
                self.handles = self.cache.load(self.sources)

    # -- reading the disk ----------------------------------------------------------

    def refresh(
        self,
        parallel: bool = False,
        progress: Callable[[int, int], None] | None = None,
        keep_timelines: bool = True,
        spawn: bool = False,
        pack: Callable[[Handle], Any] | None = None,
    ) -> set[str]:
        """Find sessions and read what was appended. Returns the keys that changed.
        `parallel`: a one-shot command may read many new sessions in forked workers
        (they come back without their whole timeline, as from the cache).
        `progress(done, total)` hears each session read (a long first read can say so).
        `keep_timelines=False`: a session read from its start this time is kept as the
        cache keeps it (without its whole timeline: a page that opens it reads it again),
        so a first read of a large history holds one timeline at a time. `spawn` (with
        `parallel`): workers started fresh, for a process with threads (the server).
        `pack(handle) -> row` (lazy, with `parallel`, a cache still empty): a session no
        other has a say in is left unread, as if cached, with the row its worker made
        (core.cache.leave_packed); `packed` then counts them."""
        with self.lock:
            changed: set[str] = set()
            notes: list[str] = list(self.load_notes)
            found: dict[str, Handle] = {}
            missing = []
            if self.cache is not None:
                self.cache.read_at_ns = time.time_ns()
            still = self.cache.still_sources() if self.lazy and self.cache is not None else set()
            if self.dormant:
                seen: dict[str, int] = {}  # what moved (or a live process can move) is read; the rest sleeps
                waking = [k for k, d in self.dormant.items() if not self._sleeps(d, seen)]
                lost = self._wake(waking + (tangled_with(self.dormant, waking) if self.settings.usage_only else []))
                still -= {k.split(":", 1)[0] for k in lost}  # the scan reads those again
                # (and one whose move can give other sessions' files to it: Handle.regroups)
                still -= {k.split(":", 1)[0] for k in waking if k in self.handles and self.handles[k].regroups()}
            live_moved: set[str] = set()
            scanned: dict[str, bool] = {}  # source -> whether its scan went through
            self.spared = set()
            for src in self.sources:
                if not src.roots():
                    continue  # no folder here at all (not set up for this source)
                if not src.exists():
                    missing.append(src)
                    continue
                stirred, spared = sleeping.between_scans(self, src, notes) if src.name in still else (set(), False)
                if spared:  # no session came or went: the sessions are the cached ones
                    self.spared.add(src.name)
                    found.update((k, h) for k, h in self.handles.items() if k.startswith(src.name + ":"))
                    live_moved |= stirred
                    notes.extend(src.notes)
                    continue
                got = self._scan(src, notes)
                scanned[src.name] = got is not None
                if got:
                    found.update(got)
                    # a flipped registry entry or a taken lock changes a row as surely as a line
                    stirred |= guarded(f"{src.name} live signals", src.live_changed, on_error=notes.append) or set()
                    live_moved.update(k for k in stirred if k in got)
                notes.extend(src.notes)
            # sessions that came, went or read new bytes this round (not a live signal's move)
            moved: set[str] = set()
            gone_at: dict[str, str] = {}  # a session gone -> its folder (a title decided across it may move)
            regrouped: set[str] = set()
            if self.dormant and scanned:  # (a missing source's sessions are gone with their files: awake)
                found, gone, gone_at, regrouped = sleeping.keep_dormant(self, found, live_moved, set(scanned))
                changed |= gone
                moved |= gone
            changed |= live_moved
            agent_sources = [s for s in self.sources if s.roots()]
            if missing and len(missing) == len(agent_sources):
                where = ", ".join(r for s in missing for r in s.roots())
                notes.append(f"no agent session folders found (looked in {where})")
            else:
                for src in missing:
                    if src.name in self.settings.explicit:
                        notes.append(f"{src.name}: no sessions folder at {', '.join(src.roots())}")
            for key in self.handles.keys() - found.keys():
                changed.add(key)
                moved.add(key)
                gone_at[key] = sleeping.folder_of(self.handles[key].files())
            done: set[str] = set()
            self.packed = 0
            if parallel:
                new = {k: h for k, h in found.items() if self.handles.get(k) is not h}
                # a first read of an empty cache may leave what the workers read packed
                packed: dict[str, Packed] | None = None
                rows = None
                if pack is not None and self.cache is not None and not spawn and not self.dormant and not self.handles:
                    packed, rows = {}, (pack, self.cache.head_of)
                done = read_in_parallel(new, self.sources, self.settings if spawn else None, packed, rows)
                if packed:
                    asleep, unread = leave_packed(packed, new, found, {s.name: s for s in self.sources})
                    self.dormant.update(asleep)
                    changed.update(asleep)
                    done -= unread
                    self.packed = len(asleep)
                found.update((k, new[k]) for k in done)
            for i, (key, h) in enumerate(found.items()):
                if self.handles.get(key) is not h:
                    changed.add(key)
                    moved.add(key)
                if key not in done and refresh_one(h):
                    changed.add(key)
                    moved.add(key)
                if not keep_timelines and key not in done and self.handles.get(key) is not h:
                    found[key] = cache_form(h)  # (a value replaced, not a key added: the loop goes on)
                if progress is not None:
                    progress(i + 1, len(found))
            known = self.cache.versions if self.cache is not None else {}
            changed |= sleeping.wake_partners(self, found, {k for k in moved if k not in known} | regrouped)
            changed |= sleeping.settle_moved(self, found, moved, gone_at, notes)
            self.handles = found
            changed |= self.ledger.sync({k: h.session for k, h in found.items()})
            # files and folders skipped where they were met (io.safefile), looked at again now
            notes.extend(unreadable([r for src in self.sources for r in src.roots()]))
            if self.cache is not None and self.autosave:
                if changed or self.lazy or not os.path.exists(self.cache.path):
                    self._kept()
                if self.lazy and scanned:
                    self.cache.stamp_scans(self.sources, scanned)
            elif self.cache is not None and self.lazy and scanned:
                self._unstamped = scanned  # stamped by the next save_rows, after the heads
            if self.cache is not None and self.cache.note:
                notes.append(self.cache.note)
            self.notes = notes
            if changed:
                self.generation += 1
            return changed

    # -- sessions left unread (lazy) --------------------------------------------------

    def _scan(self, src: Source, notes: list[str]) -> dict[str, Handle] | None:
        known = {k: h for k, h in self.handles.items() if k.startswith(src.name + ":")}
        return guarded(f"{src.name} scan", src.scan, known, on_error=notes.append)

    def _sleeps(self, d: Dormant, seen: dict[str, int] | None = None) -> bool:
        return sleeping.sleeps(self, d, seen)

    def settled(self, row: dict[str, Any], head: dict[str, Any]) -> bool:
        """Whether time alone cannot move this row (sleeping.settled)."""
        return sleeping.settled(self, row, head)

    def _wake(self, keys: Iterable[str]) -> set[str]:
        """Returns the keys that did not unpickle (the scan reads them again)."""
        return sleeping.wake(self, keys)

    def _entangled(self) -> set[str]:
        """Sessions that share responses with others (a response counted in one of two
        sessions): never left unread, the ledger decides over all of them."""
        out = {k for keys in self.ledger.multi.values() for k in keys}
        out.update(k for k, h in self.handles.items() if h.session.counted_elsewhere)
        return out

    def _tangles(self) -> set[str]:
        """Sessions whose rows are decided across their folder (Handle.entangled: a title
        another file gives): they sleep, and their folder wakes with any of them
        (sleeping.wake_groups). Counting tokens, no title matters."""
        if self.settings.usage_only:
            return set()
        return {k for k, h in self.handles.items() if guarded("tangle", h.entangled)}

    def _kept(self, rows: dict[str, dict[str, Any]] | None = None) -> None:
        """The cache written with what this core holds (and these rows)."""
        assert self.cache is not None
        self.cache.save({**self.dormant, **self.handles}, rows, entangled=self._entangled(), tangles=self._tangles())

    def put_to_sleep(self) -> int:
        """Leave unread again what a lazy core holds as the cache keeps it (whole.put_to_sleep)."""
        return whole.put_to_sleep(self)

    def complete(self, key: str) -> Session | None:
        """The session with its whole timeline (whole.complete)."""
        return whole.complete(self, key)

    def let_go(self, followed: set[str], keep: int = whole.KEEP_WHOLE) -> int:
        """Let go the timelines no page follows, but for the last few (whole.let_go)."""
        return whole.let_go(self, followed, keep)

    def read_whole(self, keys: Iterable[str]) -> Iterator[Session]:
        """Each of these sessions with its whole timeline, one at a time, not kept (whole.read_whole)."""
        return whole.read_whole(self, keys)

    def read_files(self, paths: Iterable[str]) -> set[str] | None:
        """What these files appended, in the sessions that read them (reading.read_files)."""
        return read_files(self, paths)

    def forget(self, key: str) -> None:
        """Read this cached session again from the start (its cached state is not wanted):
        its source is scanned next time, whether or not its folders moved."""
        with self.lock:
            self.dormant.pop(key, None)
            self.handles.pop(key, None)
            if self.cache is not None:
                self.cache.forget(key)
                scans = dict(self.cache.meta().get("scans") or {})
                if scans.pop(key.split(":", 1)[0], None) is not None:
                    self.cache.set_meta(scans=scans)

    def wake_all(self) -> None:
        """Every sleeping session loaded (for views that need them all)."""
        with self.lock:
            if self.dormant:
                self._wake(list(self.dormant))

    def dormant_rows(self) -> dict[str, dict[str, Any]]:
        """The board rows of the sessions left unread, as last built."""
        with self.lock:
            return {k: d.row for k, d in self.dormant.items()}

    def dormant_kept(self) -> dict[str, dict[str, Any]]:
        """The same rows, undecoded where kept as JSON (cache.Kept: a brief, the JSON as
        kept); a row kept otherwise is decoded."""
        with self.lock:
            return {k: d.kept() or d.row for k, d in self.dormant.items()}

    def write_board_cache(self, board: dict) -> None:
        """Leave the board where the standard-library status line can read it, and its
        rows in the cache (what a sleeping session shows next time)."""
        if not self.settings.huddle_home:
            return
        with self.lock:
            if self.cache is not None and self.lazy:
                rows = {f"{r['source']}:{r['id']}": r for r in board.get("sessions", ())}
                self.save_rows(getattr(self, "built_rows", None) or rows)
            files = self.board_files()
        write_board(self.settings.huddle_home, board, files, self.watch_dirs(), self.settings.folders)

    def save_rows(self, rows: dict[str, dict[str, Any]]) -> None:
        """Write the cache with these board rows (every row built, listed or not): what a
        session left unread shows next time. Rows of sessions not given keep their last."""
        with self.lock:
            if self.cache is not None:
                self._kept(rows)
                if self._unstamped:  # the last refresh's scans (its read_at_ns guards what moved since)
                    self.cache.stamp_scans(self.sources, self._unstamped)
                    self._unstamped = {}

    def board_files(self) -> dict[str, Any]:
        """Per session, what has `files()` (a handle, or a sleeping session's stamps): the
        board file's staleness check."""
        with self.lock:
            files: dict[str, Any] = {k: Stamped(d) for k, d in self.dormant.items()}
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
        """The sessions read into memory (all of them unless the core is lazy)."""
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
            if self.dormant:  # sessions left unread (lazy): the ones named are read now
                exact = [k for k in self.dormant if k == id or k.split(":", 1)[1] == id]
                near = exact or (
                    [k for k in self.dormant if k.startswith(id) or k.split(":", 1)[1].startswith(id)]
                    if len(id) >= MIN_PREFIX
                    else []
                )
                self._wake(near)
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
