"""What is kept between runs, beside the reader: the handle cache, the sessions it
leaves unread (dormant), and the rules that wake them.

`Huddle` (huddle.py) is a plain reader: sources, handles, a refresh that scans and
reads. A `Keeper` attached to it makes a run cost what changed: cached sessions
nothing moved in stay unread (their rows, built last time, stand for them), a scan
is skipped while a source's folders stand still, and what one session's move can
change of another (a title decided across a folder, a response two sessions hold)
wakes exactly those. The keeper calls into the core at four points of a refresh
(`waking`, `spare`, `kept`, `read`) and is asked by it for the sessions it holds
(`wake`, `wake_all`). What a run is for decides what may sleep: a `Mode` (modes.py).

The keeper names no field of a row: a view gives it each session's row as it will
be said again, a brief (what sorts and lists it, the view's own), and whether time
alone cannot move it (`still`); it stores them, and a sleeping session's row is
what it was given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from huddle.sources import Handle, guarded
from huddle.sources.base import Source

from .cache import BOARD, Dormant, HandleCache, Stamped, leave_packed, response_ties, tangled_with
from .modes import BoardMode, Mode
from .reading import cache_form, refresh_one

if TYPE_CHECKING:
    from .coldread import Packed
    from .huddle import Huddle, Round

# Timelines read whole for pages and kept though no page follows them now: going back to
# a page just left costs nothing. Past these, a timeline is let go (`let_go`).
KEEP_WHOLE = 8


class Keeper:
    """The handle cache of one use (`name`: the board's, the usage index's, the search
    index's), its sleeping sessions, and when they wake. `only`: hold these cached
    sessions alone, as if no other were stored (the part of a board a stored answer
    says moved: stored.patching; one session asked for: core.single). `known` (with
    `only`): the files every stored session reads, as a stored answer's index lists
    them: a source whose folders only gained files it places is spared its scan then
    too (`explained`), as a keeper holding them all spares it."""

    def __init__(
        self,
        mode: Mode | None = None,
        name: str = BOARD,
        only: Iterable[str] | None = None,
        known: Iterable[str] | None = None,
    ) -> None:
        self.mode = mode or BoardMode()
        self.name = name
        self.only = None if only is None else list(only)
        self.known = None if known is None else set(known)
        self.cache: HandleCache | None = None
        self.dormant: dict[str, Dormant] = {}
        # a refresh writes the cache each time; a long-lived reader (the server's watcher)
        # turns that off and saves with its rows now and then (`save`)
        self.autosave = True
        self._unstamped: dict[str, bool] = {}  # scans not yet stamped (autosave off)
        self._restamps: dict[str, list[Any]] = {}  # sources spared their scans, stamped again (`explained`)
        self.whole_at: dict[str, float] = {}  # key -> when (monotonic) a view last asked for it whole
        self._kept_rows: tuple[tuple[Dormant, ...], dict[str, Any]] | None = None  # (`kept_rows`)

    @property
    def partial(self) -> bool:
        """Whether this keeper holds some cached sessions only (what it builds is no whole board)."""
        return self.only is not None

    # -- attached to a core ----------------------------------------------------------------

    def attach(self, core: Huddle) -> None:
        """Open the cache for `core`'s folders and sources: its sessions asleep (a mode
        that holds everything wakes them all at once)."""
        key = (
            tuple(sorted(core.settings.folders.items())),
            tuple(sorted(s.name for s in core.sources)),  # (the order adapters were imported in is no part of it)
            core.settings.usage_only,
        )
        self.cache = HandleCache(core.settings.huddle_home, key, self.name, self.mode.json_rows)
        if self.mode.holds_all:
            core.handles = self.cache.load(core.sources)
        else:
            self.dormant = self.cache.load_dormant(core.sources, self.only)
        if self.mode.starts_from and self.only is None and not self.cache.versions:
            # (nothing of its own yet: what the other use's cache holds, made with full reads)
            core.handles = self.cache.borrowed(self.mode.starts_from, (*key[:2], False))
        self.cache.recall(core.sources)  # (the store is open now: what the last scans kept)

    def sleeps(self, core: Huddle, d: Dormant, seen: dict[str, int] | None = None) -> bool:
        """Whether a cached session may stay unread (its mode says what that takes)."""
        return self.mode.sleeps(d, seen)

    # -- a refresh's four steps ----------------------------------------------------------

    def waking(self, core: Huddle, notes: list[str]) -> set[str]:
        """A refresh's start: the sleeping sessions that moved (or whose rows time can move)
        wake. Returns the sources none of whose folders moved since their last scan."""
        cache = self.cache
        assert cache is not None
        cache.read_at_ns = time.time_ns()
        still = cache.still_sources() if not self.mode.holds_all else set()
        scan: set[str] = set()  # (sources only a scan may read now)
        if self.dormant:
            seen: dict[str, int] = {}  # a project's folder holds many sessions: looked at once
            waking = [k for k, d in self.dormant.items() if not self.sleeps(core, d, seen)]
            lost = self.wake(core, waking + self.mode.with_them(self.dormant, waking))
            scan |= {k.split(":", 1)[0] for k in lost}  # the scan reads those again
            # (and one whose move can give other sessions' files to it: Handle.regroups)
            scan |= {k.split(":", 1)[0] for k in waking if k in core.handles and core.handles[k].regroups()}
        if not self.mode.holds_all and (self.only is None or self.known is not None):
            still |= self.explained(core, {src.name for src in core.sources} - still - scan)
        return still - scan

    def explained(self, core: Huddle, names: set[str]) -> set[str]:
        """Of these sources, whose folders moved, those spared their scans all the same:
        nothing came or went in those folders but files their sessions read, or new files
        each source places as its scan would (Source.came: a new session, read now as any
        new one). Stamped again at the next `save`, after the heads."""
        cache = self.cache
        assert cache is not None
        known: set[str] | None = None
        spared: set[str] = set()
        for name in sorted(names):
            if not (cache.meta().get("scans") or {}).get(name):
                continue
            if known is None:
                known = {f for h in core.handles.values() for f in h.files()} | (self.known or set())
                known.update(f[0] for d in self.dormant.values() for f in d.head.get("files") or ())
            got = cache.explain(name, known)
            if got is None:
                continue
            stamps, came = got
            placed = [core.place(p) for p in came]
            if any(h is None or not h.key.startswith(name + ":") for h in placed):
                continue  # (only a scan places it, or another source's)
            core.handles.update((h.key, h) for h in placed if h is not None)
            self._restamps[name] = stamps
            spared.add(name)
        return spared

    def spare(self, core: Huddle, src: Source, notes: list[str]) -> tuple[set[str], bool]:
        """A source still since its last scan: its live signals only (a mode that counts
        tokens: none). Returns the keys they moved, whose sleeping sessions are woken as
        after a scan, and whether that did (False: scan it after all)."""
        if not self.mode.live_signals:
            return set(), True
        mine = src.name + ":"
        known = {k: h for k, h in core.handles.items() if k.startswith(mine)}
        moved = guarded(f"{src.name} live signals", src.between_scans, known, on_error=notes.append)
        if moved is None:
            return set(), False
        lost = self.wake(core, [k for k in self.dormant if k.startswith(mine) and k in moved])
        if not lost and self.cache is not None:
            self.cache.scan_files(src)  # (what its last scan said of the files it gave no session)
        return {k for k in moved if k in core.handles or k in lost}, not lost

    def kept(self, core: Huddle, found: dict[str, Handle], r: Round, scanned: set[str]) -> dict[str, Handle]:
        """After the scans: a sleeping session the scan still finds sleeps on (the fresh
        handle the scan made for it is dropped: nothing it was read from moved), unless
        its live signals moved. One the scan gives other files than it was read from
        (Handle.regrouped), or another shape (Handle.shape: its folder was made), is read
        again from its start. One gone is said in `r`; only the `scanned` sources'
        sessions can be gone. A session that came is read as new (its partners wake
        after the reads: `read`)."""
        gone = {k for k in self.dormant if k not in found and k.split(":", 1)[0] in scanned}
        for k in gone:
            r.gone_at[k] = dormant_folder(self.dormant.pop(k))
        r.changed |= gone
        r.moved |= gone
        for k, d in list(self.dormant.items()):
            if k in found and (_regrouped(found[k], d) or ("shape" in d.head and _reshaped(found[k], d))):
                del self.dormant[k]
                r.regrouped.add(k)
        woken = [k for k in self.dormant if k in r.live_moved]
        if woken:
            self.wake(core, woken)  # unmoved: what was read is what the scan would find
            found.update((k, core.handles[k]) for k in woken if k in core.handles)
        return {k: h for k, h in found.items() if k not in self.dormant}

    def read(self, core: Huddle, found: dict[str, Handle], r: Round) -> None:
        """After the reads: the sleeping sessions what was read can change wake, read
        (unmoved: a stat) into `found`: those holding a response a session read from its
        start holds (`partners`), and those whose titles are worked out again (`r.settle`:
        core.titles.tied)."""
        if not self.dormant:
            return
        known = self.cache.versions if self.cache is not None else {}
        fresh = {k for k in r.moved if k not in known} | r.regrouped
        want = self.partners(found, fresh) | {k for k in r.settle if k in self.dormant}
        if not want:
            return
        lost = self.wake(core, want)
        for k in want:
            if k not in lost and k in core.handles:
                found[k] = core.handles[k]
                refresh_one(found[k])
                r.changed.add(k)

    def partners(self, found: dict[str, Handle], fresh: set[str]) -> set[str]:
        """The sleeping sessions holding a response one of `fresh` holds (the store says
        which), or named by its copies (`origin`). A holder the store names that is no
        more (its entry went since) leaves it unsure: every sleeping session of that
        source then."""
        if not fresh or self.cache is None:
            return set()
        rids, named = response_ties(found[k] for k in fresh if k in found)
        if not rids:
            return set()
        holders = self.cache.store.holders(rids)
        if holders is None:  # (the store cannot say: the sources' sessions wake, as before it could)
            holders = set()
            named |= {k for k in self.dormant if k.split(":", 1)[0] in {r.split(":", 1)[0] for r in rids}}
        unsure = {k.split(":", 1)[0] for k in holders if k not in self.dormant and k not in found}
        return {k for k in self.dormant if k in holders or k in named or k.split(":", 1)[0] in unsure}

    def saved(self, core: Huddle, scanned: dict[str, bool], notes: list[str], changed: bool) -> None:
        """A refresh's end: the cache written (autosave) and the scans stamped."""
        cache = self.cache
        assert cache is not None
        if self.autosave:
            if changed or not self.mode.holds_all or not os.path.exists(cache.path):
                self.save(core)
            if not self.mode.holds_all and scanned:
                cache.stamp_scans(core.sources, scanned)
        elif not self.mode.holds_all and scanned:
            self._unstamped = scanned  # stamped by the next `save`, after the heads
            for name in scanned:
                self._restamps.pop(name, None)  # (its scan's stamps are the newer)
        if cache.note:
            notes.append(cache.note)

    # -- the sessions it holds -----------------------------------------------------------

    def wake(self, core: Huddle, keys: Iterable[str]) -> set[str]:
        """These sleeping sessions unpickled into `core.handles`. Returns the keys that did
        not unpickle (the scan reads them again)."""
        keys = [k for k in keys if k in self.dormant]
        if not keys or self.cache is None:
            return set()
        for key, h in self.cache.wake(keys, self.dormant).items():
            core.handles[key] = h
        for key in keys:
            self.dormant.pop(key, None)
        return {k for k in keys if k not in core.handles}

    def wake_all(self, core: Huddle) -> None:
        if self.dormant:
            self.wake(core, list(self.dormant))

    def leave_packed(
        self, core: Huddle, packed: dict[str, Packed], new: dict[str, Handle], found: dict[str, Handle]
    ) -> tuple[set[str], set[str]]:
        """A first read's packed sessions (core.coldread) asleep where no other has a say
        in their rows (cache.leave_packed). Returns (the keys asleep, the keys not read by
        then: those and what did not unpickle)."""
        asleep, unread = leave_packed(packed, new, found, {s.name: s for s in core.sources})
        self.dormant.update(asleep)
        return set(asleep), unread

    def save(self, core: Huddle, rows: dict[str, Any] | None = None) -> None:
        """Write the cache with what the core holds and these rows (every row a view
        built, listed or not: `views` gives (row, brief, still) per key): what a session
        left unread shows next time. Rows of sessions not given keep their last."""
        if self.cache is None:
            return
        self.cache.save({**self.dormant, **core.handles}, rows, entangled=entangled(core), tangles=self.tangles(core))
        if self._unstamped:  # the last refresh's scans (its read_at_ns guards what moved since)
            self.cache.stamp_scans(core.sources, self._unstamped)
            self._unstamped = {}
        if self._restamps:
            self.cache.restamp(self._restamps)
            self._restamps = {}

    def tangles(self, core: Huddle) -> set[str]:
        """Sessions whose rows are decided across their folder (Handle.entangled: a title
        another file gives): they sleep, and their folder wakes with any of them
        (`read`). A mode that counts tokens names none: no title matters there."""
        if not self.mode.titles:
            return set()
        return {k for k, h in core.handles.items() if guarded("tangle", h.entangled)}

    def forget(self, core: Huddle, key: str) -> None:
        """Read this cached session again from the start: its source is scanned next time."""
        self.dormant.pop(key, None)
        core.handles.pop(key, None)
        if self.cache is not None:
            self.cache.forget(key)
            scans = dict(self.cache.meta().get("scans") or {})
            if scans.pop(key.split(":", 1)[0], None) is not None:
                self.cache.set_meta(scans=scans)

    def rows(self) -> dict[str, Any]:
        """The rows of the sessions left unread, as given last (decoded)."""
        return {k: d.row for k, d in self.dormant.items()}

    def kept_rows(self) -> dict[str, Any]:
        """The same, undecoded where kept as JSON (model.rows.Kept: a brief, the JSON as
        kept): the same dict, not to be changed, while the same sessions sleep (a server
        asks at every board it says; views.board keeps what it makes of it)."""
        asleep = tuple(self.dormant.values())
        last = self._kept_rows
        if last is not None and last[0] == asleep:  # (a Dormant is equal to itself alone)
            return last[1]
        rows = {k: d.kept() or d.row for k, d in self.dormant.items()}
        self._kept_rows = (asleep, rows)
        return rows

    def stamped(self) -> dict[str, Any]:
        """Per sleeping session, what has `files()` (its stamps): the board file's staleness check."""
        return {k: Stamped(d) for k, d in self.dormant.items()}

    def put_to_sleep(self, core: Huddle) -> int:
        """Leave unread again every session held as the cache keeps it (not read whole
        for a page) that would sleep if read from the cache now: its row is saved and
        still, and nothing it was read from moved. Returns how many."""
        if self.mode.holds_all or self.cache is None:
            return 0
        n = 0
        for key, h in list(core.handles.items()):
            head = self.cache.heads.get(key)
            if h.session.complete or head is None or self.cache.versions.get(key) != h.session.version:
                continue
            d = Dormant(key, h.session.version, head, raw=self.cache.raw.get(key))
            if self.sleeps(core, d):
                del core.handles[key]
                self.dormant[key] = d
                n += 1
        return n

    def let_go(self, core: Huddle, followed: set[str], keep: int = KEEP_WHOLE) -> int:
        """The sessions held whole that no page follows (`followed`: their ids), but for
        the `keep` asked for last, back in the cache's form (cache_form): their timelines
        let go, their reading and rows going on as a start from the cache leaves them.
        A server open all day holds its board and the pages open now, not every session
        anyone looked at. Returns how many."""
        if self.mode.holds_all:
            return 0
        for gone in [k for k in self.whole_at if k not in core.handles]:
            del self.whole_at[gone]
        spare = [k for k, h in core.handles.items() if h.session.complete and h.session.id not in followed]
        spare.sort(key=lambda k: self.whole_at.get(k, 0.0), reverse=True)
        n = 0
        for key in spare[keep:]:
            h = core.handles[key]
            small = cache_form(h)
            if small is h:
                continue  # (one that cannot be pickled stays as it is)
            core.handles[key] = small
            self.whole_at.pop(key, None)
            n += 1
        if n:  # (the ledger holds each session by identity: the new ones are indexed again)
            core.ledger.sync({k: x.session for k, x in core.handles.items()})
        return n


def entangled(core: Huddle) -> set[str]:
    """Sessions that share responses with others: never left unread, the ledger decides
    over all of them at once."""
    out = {k for keys in core.ledger.multi.values() for k in keys}
    out.update(k for k, h in core.handles.items() if h.session.counted_elsewhere)
    return out


def _reshaped(h: Handle, d: Dormant) -> bool:
    try:
        return bool(h.shape() != d.head["shape"])
    except Exception:  # (an adapter's bug: reading it again is never wrong)
        return True


def _regrouped(h: Handle, d: Dormant) -> bool:
    try:
        return bool(h.regrouped([f[0] for f in d.head.get("files") or ()]))
    except Exception:  # (an adapter's bug: reading it again is never wrong)
        return True


def folder_of(files: list[str]) -> str:
    return os.path.dirname(files[0]) if files else ""


def dormant_folder(d: Dormant) -> str:
    return folder_of([f[0] for f in d.head.get("files") or ()])


__all__ = ["KEEP_WHOLE", "Keeper", "folder_of", "tangled_with"]
