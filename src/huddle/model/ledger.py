"""A model response counted once across sessions.

A resumed or forked session's file can hold copies of another session's records
(Claude Code 1.0.x resumes and forks into a new file with the whole history, and only
recent versions mark a copy as one). A response, named by its source and id, that
appears in several sessions counts in the session where it first appeared: the one
its copies name as theirs (`origin`, when a source knows it), else the one that
started first (then ended first, then by key). Its other copies stay in their timelines, marked
`counted_in` that session, and out of their session's totals. So the board's sessions
add up to what `huddle usage` counts, and the two never disagree on a session.

Kept up to date incrementally: a round of reads costs a look at each session's event
count and the new usage events, never a walk over every timeline.
"""

from __future__ import annotations

from . import events as ev
from .session import Session


def _first(s: Session) -> tuple[bool, float, float, str]:
    # A copy starts when its original did (the records keep their times) but cannot end
    # before the copy was made.
    return (s.started_at is None, s.started_at or 0.0, s.updated_at or 0.0, s.key)


class Ledger:
    def __init__(self) -> None:
        # A response is named "source:id": a string, not a (source, id) tuple: a tuple per
        # response made the cyclic collector run a third more often over a cold read.
        self.first: dict[str, str] = {}  # "source:response id" -> first session key seen
        self.multi: dict[str, set[str]] = {}  # ids in two sessions or more -> their keys
        self.ids_of: dict[str, list[str]] = {}  # session key -> the ids it holds
        self.stamp: dict[str, tuple[int, int, int]] = {}  # key -> (id(session), epoch, events indexed)
        self.origin: dict[str, str] = {}  # response -> the session id a copy of it names

    def sync(self, sessions: dict[str, Session]) -> set[str]:
        """Index what is new, settle who counts each shared response. Returns the keys
        whose totals changed."""
        gone = [k for k in self.stamp if k not in sessions]
        for key in gone:
            self._forget(key)
        touched = bool(gone)
        for key, s in sessions.items():
            st = self.stamp.get(key)
            if st is not None and st[0] == id(s) and st[1] == s.epoch and st[2] == len(s.events):
                continue
            start = 0
            if st is not None and st[0] == id(s) and st[1] == s.epoch and st[2] <= len(s.events):
                start = st[2]
            else:
                self._forget(key)
            self._index(key, s, start)
            touched = True
        # (a session gone can leave the last copy of a response: counted where it is again)
        if not touched or not (self.multi or gone):
            return set()
        return self._settle(sessions)

    def _index(self, key: str, s: Session, start: int) -> None:
        mine = self.ids_of.setdefault(key, [])
        src = s.source + ":"
        events = s.events
        usage = ev.USAGE  # (a local: looked up once, not per event of every session)
        for e in events[start:] if start else events:
            if e.kind != usage or not e.id or e.copied:
                continue
            rid = src + e.id
            if e.origin:
                self.origin[rid] = e.origin
            owner = self.first.setdefault(rid, key)
            if owner != key:
                keys = self.multi.get(rid)
                if keys is None:
                    keys = self.multi[rid] = {owner}
                if key not in keys:
                    keys.add(key)
                    mine.append(rid)
            elif not mine or mine[-1] != rid:
                mine.append(rid)
        self.stamp[key] = (id(s), s.epoch, len(events))

    def _forget(self, key: str) -> None:
        self.stamp.pop(key, None)
        for rid in self.ids_of.pop(key, ()):
            keys = self.multi.get(rid)
            if keys is None:
                if self.first.get(rid) == key:
                    del self.first[rid]
                continue
            keys.discard(key)
            if self.first.get(rid) == key and keys:
                self.first[rid] = next(iter(keys))
            if len(keys) < 2:
                del self.multi[rid]

    def _settle(self, sessions: dict[str, Session]) -> set[str]:
        owner_of: dict[str, dict[str, str]] = {}  # session key -> {response id: the key counting it}
        for rid, keys in self.multi.items():
            present = [sessions[k] for k in keys if k in sessions]
            if not present:
                continue
            named = self.origin.get(rid)
            owner = next((s.key for s in present if named and s.id == named), "") or min(present, key=_first).key
            resp = rid[len(present[0].source) + 1 :]  # (the id, past "source:")
            for s in present:
                owner_of.setdefault(s.key, {})[resp] = "" if s.key == owner else owner
        changed = set()
        for key, s in sessions.items():
            want = owner_of.get(key)
            if want is None and not s.counted_elsewhere:
                continue
            if _mark(s, want or {}):
                changed.add(key)
        return changed


def mark_as(whole: Session, held: Session) -> None:
    """A session read whole again (and not kept) counts each response where its held copy
    was told to (the ledger decided over every session the core holds)."""
    want = {e.id: e.counted_in for e in held.events if e.kind == ev.USAGE and e.counted_in and e.id}
    if want or whole.counted_elsewhere:
        _mark(whole, want)


def _mark(s: Session, want: dict[str, str]) -> bool:
    """Set `counted_in` on this session's usage events as `want` says (response id ->
    the session counting it, "" for this one); recount when anything moved."""
    moved = False
    n = 0
    for e in s.events:
        if e.kind != ev.USAGE or e.copied:
            continue
        where = want.get(e.id, "")
        if e.counted_in != where:
            e.counted_in = where
            moved = True
        if where:
            n += 1
    s.counted_elsewhere = n
    if moved:
        s.recount_usage()
    return moved
