"""Keeping the search index level with what the core has read.

`SearchIndex.update(h)` looks at the sessions the core holds and indexes the events
the index lacks: in one process it remembers how far it went in each session's
timeline, so a live append costs only the new events; across processes the index's
own record of each file (indexed length and the bytes before it) says what is
already there. A file whose recorded bytes moved was rewritten: its rows go dead and
it is indexed again. A session the core holds only partly (loaded from a cache
without its timeline) that needs more than its new events is reported back in
`needs_complete`, for the caller to read whole.
"""

from __future__ import annotations

import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from huddle.model.events import Event
from huddle.model.pieces import piece
from huddle.model.session import Session
from huddle.model.times import project_name

from .store import TAIL, Damaged, Store, index_path, is_damage, rowid_for, settings_key
from .text import COLUMNS, KIND_CODE, KIND_GROUP, event_text, indexed, needs_record

CHUNK = 5000  # events per write transaction: the write lock is held briefly, progress moves
COLUMN_OF = {k: COLUMNS.index(g) for k, g in KIND_GROUP.items()}

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


@dataclass
class Snapshot:
    """What indexing needs of one session, taken under the core's lock."""

    key: str
    source: str
    sid: str
    project: str
    version: int
    complete: bool
    session: weakref.ref[Session]
    epoch: int
    start: int  # index of the first event in `events` within the timeline
    events: list[Event]
    t0: float | None
    read: Callable[[str, int, int], bytes] | None = None  # the handle's, where records are not byte spans
    token: bytes | None = None  # then: what names its records' numbering (see Handle.record_token)


@dataclass
class Result:
    rows: int = 0
    bytes: int = 0
    sessions: int = 0
    rewritten: int = 0
    needs_complete: set[str] = field(default_factory=set)


def _unchanged(path: str, done: int, tail: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < done:
                return False
            f.seek(max(0, done - len(tail)))
            return f.read(len(tail)) == tail
    except OSError:
        return False


def _chunks(evs: list[tuple[Event, int]]) -> Iterable[list[tuple[Event, int]]]:
    """CHUNK events at a time, never parting the events of one record."""
    i = 0
    while i < len(evs):
        j = min(len(evs), i + CHUNK)
        while j < len(evs) and evs[j][0].offset == evs[j - 1][0].offset:
            j += 1
        yield evs[i:j]
        i = j


def _tail(f, end: int) -> bytes:
    f.seek(max(0, end - TAIL))
    return f.read(min(TAIL, end))


class SearchIndex:
    def __init__(self, huddle_home: str, folders: dict[str, str]):
        self.store = Store(index_path(huddle_home, folders), settings_key(folders))
        self._seen: dict[str, tuple[weakref.ref[Session], int, int]] = {}  # key -> (session, epoch, events seen)
        self.building = False  # a first build is under way (the server's thread)
        self.progress = (0, 0)
        self._seen_for = 0  # the store's resets when `_seen` was true

    @property
    def generation(self) -> int:
        """Bumps whenever the file was deleted (damaged, removed, too many dead rows):
        whoever keeps the index level starts over."""
        return self.store.resets

    def reset(self) -> None:
        """Drop the index (damaged, or too many dead rows): it is built again from the core."""
        self.store.remove()
        self._seen.clear()

    def vanished(self) -> bool:
        """The file was removed (or replaced) under an open index: start over."""
        db = self.store.db
        if db is None:
            return False
        try:
            st = os.stat(self.store.path)
        except OSError:
            return True
        return self.store.identity is not None and (st.st_dev, st.st_ino) != self.store.identity

    # -- snapshots ----------------------------------------------------------------------

    def snapshot(self, h, keys: Iterable[str] | None = None, versions: dict[str, int] | None = None) -> list[Snapshot]:
        """The new events of the sessions named (all by default). Call under `h.lock`.
        `versions` (the index's record of each session's version) lets a session that
        has not changed since it was indexed be passed over without a look at its events."""
        if self._seen_for != self.store.resets:  # the file went: nothing is known to be indexed
            self._seen.clear()
            self._seen_for = self.store.resets
        out = []
        handles = h.handles
        for key in sorted(handles) if keys is None else sorted(k for k in keys if k in handles):
            handle = handles[key]
            s = handle.session
            if versions is not None and versions.get(key) == s.version and key not in self._seen:
                continue  # indexed as it stands (a session's version moves with every event)
            token = handle.record_token()
            seen = self._seen.get(key)
            start = 0
            if seen is not None and seen[1] == s.epoch and seen[2] <= len(s.events) and seen[0]() is s:
                start = seen[2]
            out.append(
                Snapshot(
                    key=key,
                    source=s.source,
                    sid=s.id,
                    project=project_name(s.cwd),
                    version=s.version,
                    complete=s.complete,
                    session=weakref.ref(s),
                    epoch=s.epoch,
                    start=start,
                    events=s.events[start:],
                    t0=s.started_at,
                    read=handle.read_record if token is not None else None,
                    token=token,
                )
            )
        return out

    def bytes_to_do(self, snaps: list[Snapshot]) -> int:
        return sum(e.length for sn in snaps for e in sn.events if indexed(e))

    # -- indexing -----------------------------------------------------------------------

    def update(self, h, keys: Iterable[str] | None = None, progress: Progress | None = None) -> Result:
        """Index what the core holds and the index lacks (for a one-shot command: under
        the core's lock throughout). Sessions gone from the core leave the results."""
        with h.lock:
            snaps = self.snapshot(h, keys)
            present = set(h.handles) | set(getattr(h, "dormant", ())) if keys is None else None
        return self.index(snaps, progress, present)

    def index(
        self,
        snaps: list[Snapshot],
        progress: Progress | None = None,
        present: set[str] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Result:
        """Index the snapshots' events. `stop()` is asked between write transactions: a
        server shutting down waits for one transaction, not a whole first build."""
        res = Result()
        total = self.bytes_to_do(snaps)
        self.progress = (0, total)
        gen = self.store.resets
        try:
            for sn in snaps:
                if stop is not None and stop():
                    return res
                self._index_session(sn, res, progress, total, gen, stop)
            if present is not None:
                with self.store.write(expect=gen) as db:
                    self.store.mark_absent(db, present)
        except sqlite3.Error as exc:
            if is_damage(exc):
                self.reset()
                raise Damaged(f"{self.store.path}: {exc}") from None
            raise
        return res

    def _index_session(
        self,
        sn: Snapshot,
        res: Result,
        progress: Progress | None,
        total: int,
        gen: int,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        planned = self._plan(sn, res, gen, _events_by_file(sn.events))
        if planned is None:
            return  # read it whole first: nothing of it is written now
        sid, plan = planned
        store = self.store
        for i, (path, fid, evs) in enumerate(plan):
            for chunk in _chunks(evs):
                if stop is not None and stop():
                    return  # the version is not written: the rest is indexed next time
                self._index_chunk(sid, path, fid, chunk, sn.t0, res, sn, gen)
                if progress is not None:
                    progress(res.bytes, total)
                self.progress = (res.bytes, total)
            if i == len(plan) - 1:
                with store.write(expect=gen) as db:
                    store.set_version(db, sid, sn.version)
        s = sn.session()
        if s is not None:
            self._seen[sn.key] = (sn.session, sn.epoch, sn.start + len(sn.events))
        res.sessions += 1

    def _plan(
        self, sn: Snapshot, res: Result, gen: int, by_file: dict[str, list[tuple[Event, int]]]
    ) -> tuple[int, list[tuple[str, int, list[tuple[Event, int]]]]] | None:
        """The session's row and, per file, the row its events go to (a file rewritten
        before what was indexed of it is indexed again whole); None when the session
        must be read whole first. With nothing to index, its version is written now."""
        store = self.store
        with store.write(expect=gen) as db:
            sid = store.session(db, sn.key, sn.source, sn.sid, sn.project)
            known = store.files(db, sid)
            plan: list[tuple[str, int, list[tuple[Event, int]]]] = []
            for path, evs in by_file.items():
                rec = known.get(path)
                if rec is None:
                    plan.append((path, store.new_file(db, sid, path), evs))
                    continue
                fid, done, tail = rec
                same = tail == sn.token if sn.token is not None else _unchanged(path, done, tail)
                if min(e.offset for e, _ in evs) < done and not same:
                    if not sn.complete:
                        res.needs_complete.add(sn.key)
                        return None
                    store.kill_file(db, fid)
                    res.rewritten += 1
                    fid = store.new_file(db, sid, path)
                plan.append((path, fid, evs))
            if not plan:
                store.set_version(db, sid, sn.version)
        return sid, plan

    def _index_chunk(
        self,
        sid: int,
        path: str,
        fid: int,
        evs: list[tuple[Event, int]],
        t0: float | None,
        res: Result,
        sn: Snapshot,
        gen: int,
    ) -> None:
        texts = self._texts(path, [e for e, _ in evs], sn.read)
        last_t = t0 if t0 is not None else time.time()
        store = self.store
        with store.write(expect=gen) as db:
            done = db.execute("SELECT done FROM files WHERE id = ?", (fid,)).fetchone()
            done = int(done[0]) if done else 0
            counter = store.counter(db)
            rows, fts = [], []
            end = done
            for (e, nth), text in zip(evs, texts):
                if e.offset < done:
                    continue  # indexed already (by another process, or before a restart)
                if e.t is not None:
                    last_t = e.t
                end = max(end, e.offset + e.length)
                res.bytes += e.length
                if not text.strip():
                    continue
                rowid = rowid_for(int(last_t * 1000), counter)
                counter += 1
                agent = store.agent(db, sid, e.agent)
                rows.append((rowid, fid, e.offset, e.length, nth, KIND_CODE[e.kind], agent))
                cols: list[str | None] = [None, None, None, None]
                cols[COLUMN_OF[e.kind]] = text
                fts.append((rowid, *cols))
            if counter >= 1 << 21 and rows:
                rows, fts = self._avoid_taken(db, rows, fts)
            store.insert(db, rows, fts)
            store.set_counter(db, counter)
            if end > done:
                if sn.token is not None:
                    tail = sn.token
                else:
                    try:
                        with open(path, "rb") as f:
                            tail = _tail(f, end)
                    except OSError:
                        tail = b""
                store.set_done(db, fid, end, tail, len(rows))
        res.rows += len(rows)

    def _avoid_taken(self, db, rows: list[tuple], fts: list[tuple]) -> tuple[list[tuple], list[tuple]]:
        """Once the counter has wrapped, a rowid may repeat one of the same millisecond:
        move such a row one step on until it is free."""
        taken = self.store.taken(db, [r[0] for r in rows])
        if not taken:
            return rows, fts
        used = set(taken) | {r[0] for r in rows}
        out_rows, out_fts = [], []
        for r, t in zip(rows, fts):
            rid = r[0]
            if rid in taken:
                while rid in used:
                    rid += 1
                used.add(rid)
            out_rows.append((rid, *r[1:]))
            out_fts.append((rid, *t[1:]))
        return out_rows, out_fts

    @staticmethod
    def _texts(path: str, evs: list[Event], read: Callable[[str, int, int], bytes] | None = None) -> list[str]:
        """Each event's text, its record read back where the event does not hold it all
        (by `read`, the source's own, where records are not byte spans of the file)."""
        out: list[str] = []
        f = None
        last: tuple[int, int, bytes] | None = None
        try:
            for e in evs:
                p = None
                if needs_record(e):
                    try:
                        if last is None or last[:2] != (e.offset, e.length):
                            if read is not None:
                                last = (e.offset, e.length, read(path, e.offset, e.length))
                            else:
                                if f is None:
                                    f = open(path, "rb")  # noqa: SIM115 (one open per chunk, closed below)
                                f.seek(e.offset)
                                last = (e.offset, e.length, f.read(e.length))
                        p = piece(last[2], e)
                    except (OSError, ValueError):
                        p = None
                try:
                    out.append(event_text(e, p))
                except Exception:  # a surprising record costs its own text, never the index
                    out.append("")
        finally:
            if f is not None:
                f.close()
        return out


def one_shot(settings, progress: Callable[[str, int], Progress | None] | None = None):
    """A core and its index made level, for a one-shot command (see `make_level`).
    `progress(what, total)` may return a callback for a long phase ("sessions read",
    then "bytes indexed"). Returns (core, index)."""
    index = SearchIndex(settings.huddle_home, settings.folders)
    return make_level(settings, index, progress), index


def make_level(
    settings,
    index: SearchIndex,
    progress: Callable[[str, int], Progress | None] | None = None,
    stop: Callable[[], bool] | None = None,
):
    """Bring `index` level with the session files; returns the core it read them with.
    The core reads through the search's own handle cache (so it resumes where the index
    stopped, not where another command's refresh did) and leaves unread every session
    whose files did not move and whose cached state is the one the index was written
    with; one whose cached state does not match the index is read whole."""
    from huddle.core import FirstRead, Huddle, Keeper, TextMode

    try:
        if index.store.wants_rebuild():
            index.reset()
        versions = index.store.versions()
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise
        index.reset()
        versions = {}
    h = Huddle(settings, keep=Keeper(TextMode(), "search-handles.db"))
    for key in [k for k, d in h.dormant.items() if versions.get(k) != d.version]:
        h.forget(key)  # read again from the start: the index may lack part of it
    asleep = set(h.dormant)
    h.refresh(FirstRead(workers=False, progress=_lazy(progress, "reading sessions") if progress else None))
    # a version says "nothing new" only for a handle that went on from the cache the
    # index was written with (a session read afresh counts its versions anew)
    versions = {k: versions[k] for k in asleep if k in h.handles and k in versions}
    for _attempt in range(2):
        try:
            with h.lock:
                snaps = index.snapshot(h, versions=versions)
                present = set(h.handles) | set(h.dormant)
            total = index.bytes_to_do(snaps)
            res = index.index(snaps, progress("building the search index", total) if progress else None, present, stop)
            for key in sorted(res.needs_complete):
                h.complete(key)
                index.update(h, {key})
            if res.needs_complete and h.keeper is not None:
                h.keeper.save(h)  # those sessions were read whole: keep where they stand
            break
        except Damaged:
            versions = {}
            h = Huddle(settings)  # the index is gone: read everything again
            h.refresh()
    return h


def _lazy(progress: Callable[[str, int], Progress | None], what: str) -> Progress:
    """A callback that asks for its bar only once it knows the total."""
    got: list[Progress | None] = []

    def step(done: int, total: int) -> None:
        if not got:
            got.append(progress(what, total))
        cb = got[0]
        if cb is not None:
            cb(done, total)

    return step


def _events_by_file(events: list[Event]) -> dict[str, list[tuple[Event, int]]]:
    """The events to index, by file, each with which event of its record it is (the
    `-n` of a ref), counted over every event."""
    by_file: dict[str, list[tuple[Event, int]]] = {}
    prev: tuple[str, int, int] | None = None
    nth = 0
    for e in events:
        span = (e.file, e.offset, e.length)
        nth = nth + 1 if span == prev else 0
        prev = span
        if indexed(e):
            by_file.setdefault(e.file, []).append((e, nth))
    return by_file
