"""huddle's handle cache, in its data folder (never an agent's folder).

`$HUDDLE_HOME/cache/handles.db` (a `Store`) keeps, per session, its incremental
reading state (file identity and offsets, what was derived, the usage events) as a
pickle, and beside it a small head (its files' stamps, and the few fields of its row
that say whether it may sleep: `brief`) and the board row last built from it. A new
`huddle status` reads the heads, and unpickles only the sessions whose files moved (or
whose row could move without them: a live process); the others' rows are the board as
it stands, decoded only where a view asks for them (`Dormant.row`). Written per changed session; a damaged, truncated
or older file is ignored (one line says so) and built again. The status line's
board file beside it is `huddle.io.boardfile`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from huddle.io import answers
from huddle.io.stamps import stamps_of
from huddle.model.rows import Kept, kept
from huddle.sources.base import Handle, Source

from .coldread import Packed, pickled, sleepers, take
from .rowbytes import dumps, json_of, loads
from .scans import ScanRecord
from .store import Store

# Bump when what a read derives changes: a cached session keeps what it derived then.
# (1 to 3 were handles.pickle, one pickle of every handle; 4 is handles.db; 5: reader cursors
# keep ctime and a print, not a tail; 6: heads stamp the files a row shows beyond its own: Codex names;
# 7: a usage-only Claude read names agents and titles as a full read does; 8: rows apart from
# heads, the board's as their JSON; 9: which session holds each response, `tangle` apart from `entangled`.)
FORMAT = 9
BOARD = "handles.db"  # the board's cache
USAGE_INDEX = "usage.db"  # huddle.usage.index
# the stored answer (huddle.io.answers) worked out from each cache's entries
ANSWERS = {BOARD: answers.STATUS, USAGE_INDEX: answers.USAGE}


def cache_dir(huddle_home: str) -> str:
    return os.path.join(huddle_home, "cache")


# A session's row is what a view gives (`save`'s rows: key -> (row, brief)): the row as it
# will be said again, kept beside the head; its brief, in the head, the view's own few
# fields (what sorts and lists it) and the keeper's: `still` (time alone cannot move the
# row: core.modes) and `process` (it names a process, which may go: core.answering).
Row = tuple[Any, dict[str, Any]]


def _blob(h: Handle) -> bytes | None:
    """A handle as the store keeps it: a worker's pickle (a cold read), else pickled here."""
    blob = pickled(h)
    if blob is None:
        import pickle

        try:
            blob = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            return None
    return blob


def head_for(
    h: Handle,
    read_at_ns: int,
    brief: dict[str, Any] | None,
    entangled: bool = False,
    tangle: bool = False,
) -> dict[str, Any]:
    """A handle's head: the stamps of its files and of the folders holding them (a new
    sub-agent file moves its folder before anyone knows of the file), and its row's
    `brief` (the row itself is kept beside the head). `entangled`: it shares responses
    with other sessions (read with them every time); `tangle`: what it shows is decided
    across its folder (Handle.entangled: it sleeps, and its folder wakes with it)."""
    files = h.files()
    dirs = list(dict.fromkeys(os.path.dirname(f) for f in files))
    head: dict[str, Any] = {
        "files": stamps_of([*files, *h.shown_from()], read_at_ns),
        "dirs": stamps_of(dirs, read_at_ns),
        "at": read_at_ns,  # when what the row was built from was read
    }
    if isinstance(brief, dict):
        head["brief"] = brief
    if entangled:
        head["entangled"] = True
    shape = h.shape()
    if shape is not None:
        head["shape"] = shape
    if tangle:
        head["tangle"] = True
        head["ties"] = list(h.ties())
    return head


class Dormant:
    """A cached session not unpickled: its head (stamps, brief) and its row stand for it.
    `raw`: the row as the store keeps it (`row` decodes it). `blob`: a session a worker
    read and packed (core.coldread.Packed), not yet in the store (the next save writes it)."""

    __slots__ = ("__weakref__", "_kept", "blob", "head", "ids", "key", "raw", "version")

    def __init__(
        self,
        key: str,
        version: int,
        head: dict[str, Any],
        blob: bytes | None = None,
        raw: bytes | None = None,
        ids: list[str] | None = None,
    ) -> None:
        self.key = key
        self.version = version
        self.head = head
        self.blob = blob
        self.raw = raw
        self.ids = ids  # a packed one's response ids (core.coldread.Packed), stored with it
        self._kept: tuple[Any, Kept | None] | None = None  # (raw, kept()) made of it

    @property
    def row(self) -> Any:
        return loads(self.raw)

    def kept(self) -> Kept | None:
        """Its board row as brief and JSON (model.rows.Kept), if its head has a board brief:
        made once (a server says every sleeping row at each `status` it answers; the same
        object each time lets what is made of it be kept too: views.said.RowTexts)."""
        if self._kept is not None and self._kept[0] is self.raw:
            return self._kept[1]
        brief = self.head.get("brief")
        if self.raw is None or not isinstance(brief, dict) or "source" not in brief:
            return None
        made = kept(brief, json_of(self.raw))
        self._kept = (self.raw, made)
        return made


def leave_packed(
    packed: dict[str, Packed], new: dict[str, Handle], found: dict[str, Handle], sources: dict[str, Source]
) -> tuple[dict[str, Dormant], set[str]]:
    """A first read's sessions the workers packed (core.coldread.Packed): those whose
    rows no other session has a say in (`sleepers`; only when every session `found` came
    back packed) sleep, with the rows the workers made, taken out of `found`, stored by
    the next save as the workers pickled them; the others are unpickled into `new`.
    Returns (the sleepers, the keys not read by then: the sleepers and what did not
    unpickle, read from their files)."""
    asleep = sleepers(packed) if packed.keys() == found.keys() else set()
    dormant: dict[str, Dormant] = {}
    unread = set(asleep)
    for k, p in packed.items():
        if k in asleep:
            row = p.head.pop("row", None)  # (the worker's head_of gave it: kept beside the head)
            src = k.split(":", 1)[0]
            dormant[k] = Dormant(k, p.version, p.head, blob=p.blob, raw=dumps(row), ids=[f"{src}:{i}" for i in p.ids])
            del found[k]
        elif (h := take(p.blob, sources)) is not None:
            new[k] = h
        else:
            unread.add(k)
    return dormant, unread


def tangled_with(dormant: Mapping[str, Dormant], waking: list[str]) -> list[str]:
    """Reading token counts: the sessions that share responses with others (marked
    `entangled`) sleep while none of their source's moved; when one does, all of that
    source's wake with it, so the one count of each shared response is decided with
    every session holding it at hand (huddle.model.ledger). Returns those to wake too."""
    moved = {k.split(":", 1)[0] for k in waking if dormant[k].head.get("entangled")}
    if not moved:
        return []
    woken = set(waking)
    return [k for k, d in dormant.items() if k not in woken and d.head.get("entangled") and k.split(":", 1)[0] in moved]


def response_ids(h: Handle) -> list[str]:
    """The responses a session holds as the ledger indexes them (huddle.model.ledger:
    its own, not copies marked as such), named with their source."""
    return response_ties([h])[0]


def response_ties(handles: Iterable[Handle]) -> tuple[list[str], set[str]]:
    """What ties these sessions to others through their counts: the responses they hold
    (`response_ids`) and the sessions their copies name as their origin, keyed."""
    from huddle.model import events as ev

    rids: list[str] = []
    named: set[str] = set()
    for h in handles:
        src = h.session.source
        for e in h.session.events:
            if e.kind == ev.USAGE and e.id and not e.copied:
                rids.append(f"{src}:{e.id}")
                if e.origin:
                    named.add(f"{src}:{e.origin}")
    return rids, named


class Stamped:
    """A sleeping session as the board file needs it: its files, stamped when this run
    found them unmoved."""

    def __init__(self, d: Dormant) -> None:
        self.stamps = [f for f in d.head.get("files") or () if f[1] >= 0]

    def files(self) -> list[str]:
        return [f[0] for f in self.stamps]


class HandleCache(ScanRecord):
    def __init__(
        self, huddle_home: str, settings_key: tuple[Any, ...], name: str = BOARD, json_rows: bool = False
    ) -> None:
        # `name`: a reader with its own pace (the search index) keeps its own cache, so
        # what it has seen is never moved on by another command's refresh
        self.path = os.path.join(cache_dir(huddle_home), name)
        self.store = Store(self.path, "handles", FORMAT, settings_key)
        self.versions: dict[str, int] = {}  # key -> the session version stored
        self.heads: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, bytes | None] = {}  # key -> its row as stored (`row_of`)
        # a board's rows are kept as their JSON (said again as they are: core.modes)
        self.json_rows = json_rows
        self._sources: dict[str, Source] = {}
        self.read_at_ns = 0  # when the last read began (the core sets it)
        self.opened: list[Any] = []  # the store's stamp when its heads were read (core.answering)
        self.vouched: list[Any] = []  # scan stamps just found still (stored.patching's look): not looked at again
        # a stored answer was worked out from these entries (and from no other cache's):
        # not said again once they are written (kept for what it hung on: answers.demote)
        if name in ANSWERS:
            self.store.on_write = functools.partial(answers.demote, huddle_home, ANSWERS[name])
        legacy = os.path.join(cache_dir(huddle_home), name.rsplit(".", 1)[0] + ".pickle")
        self._legacy = legacy if legacy != self.path else None

    def head_of(self, h: Handle, given: Row | None) -> dict[str, Any]:
        """A handle's head as this run stamps it, its row with it (in a worker:
        core.coldread.Packed; leave_packed takes the row out)."""
        row, brief = given if given is not None else (None, None)
        return {**head_for(h, self.read_at_ns, brief), "row": row}

    def row_of(self, key: str) -> Any:
        """The row stored for this session (None: none)."""
        return loads(self.raw.get(key))

    def rows(self) -> Iterator[tuple[str, Any]]:
        """Every stored session's row, decoded."""
        for key in self.heads:
            yield key, self.row_of(key)

    @property
    def note(self) -> str | None:
        return self.store.note

    def _open(self, sources: Iterable[Source]) -> None:
        self._sources = {s.name: s for s in sources}
        if self._legacy and os.path.exists(self._legacy):
            try:
                os.unlink(self._legacy)
                self.store.note = f"{self._legacy}: from an older version; read again from the session files"
            except OSError:
                pass
        self.store.open()
        self.opened = self.store.own = self.store.stamp()

    def load(self, sources: Iterable[Source]) -> dict[str, Handle]:
        """Every cached handle, re-attached to the live source objects."""
        self._open(sources)
        for key, (version, head, raw) in self.store.heads().items():
            self.versions[key] = version
            self.heads[key] = head
            self.raw[key] = raw
        return self._unpickle(self.store.all_blobs())

    def load_dormant(self, sources: Iterable[Source], keys: Iterable[str] | None = None) -> dict[str, Dormant]:
        """Every cached session as its head only (see `wake`); or only these `keys`'."""
        self._open(sources)
        out: dict[str, Dormant] = {}
        for key, (version, head, raw) in self.store.heads(keys).items():
            if isinstance(head, dict):
                self.versions[key] = version
                self.heads[key] = head
                self.raw[key] = raw
                out[key] = Dormant(key, version, head, raw=raw)
        return out

    def borrowed(self, name: str, settings_key: tuple[Any, ...]) -> dict[str, Handle]:
        """Every handle another use's cache of these folders holds (`name`, made with
        `settings_key`), read only, each with its pickle (coldread.take: stored here as it
        is); none if it is not there or not of this version."""
        other = Store(os.path.join(os.path.dirname(self.path), name), "handles", FORMAT, settings_key)
        if not other.open_to_read():
            return {}
        try:
            got = {k: take(blob, self._sources) for k, blob in other.all_blobs()}
        finally:
            other.close()
        return {k: h for k, h in got.items() if h is not None and h.session.source in self._sources}

    def wake(self, keys: Iterable[str], dormant: Mapping[str, Dormant] | None = None) -> dict[str, Handle]:
        """The handles of these cached sessions (those that unpickle); one a worker packed
        this run (`dormant[key].blob`) from its pickle, not yet in the store."""
        keys = list(keys)
        packed = {k: d.blob for k in keys if (d := (dormant or {}).get(k)) is not None and d.blob is not None}
        out = {k: h for k, b in packed.items() if (h := take(b, self._sources)) is not None}
        out.update(self._unpickle(self.store.blobs([k for k in keys if k not in packed]).items()))
        return out

    def _unpickle(self, blobs: Iterable[tuple[str, bytes]]) -> dict[str, Handle]:
        import pickle  # (here and in save: a board whose sessions all sleep loads none)

        handles: dict[str, Handle] = {}
        for key, blob in blobs:
            try:
                h = pickle.loads(blob)
            except Exception:
                continue  # that one session is read again from its files
            src = self._sources.get(h.session.source)
            if src is None:
                continue
            h.source = src
            handles[key] = h
        return handles

    def save(
        self,
        handles: Mapping[str, Handle | Dormant],
        rows: Mapping[str, Row] | None = None,
        entangled: set[str] | None = None,
        tangles: set[str] | None = None,
    ) -> None:
        """Write what changed: handles whose session version moved, heads whose row (or
        files) did, and drop the sessions that are gone. `rows`: key -> (row, brief), as
        a view gives them. `entangled`: the sessions that
        share responses with others (never left unread); `tangles`: those whose rows are
        decided across their folder (head_for)."""
        put: dict[str, tuple[int, Any, bytes | None, bytes]] = {}
        heads: dict[str, tuple[int, Any, bytes | None]] = {}
        rows = rows or {}
        tangled = entangled or set()
        tangles = tangles or set()
        packed: list[Dormant] = []
        responses: dict[str, list[str]] = {}
        for key, h in handles.items():
            if isinstance(h, Dormant):
                if h.blob is not None:  # read this run, packed by a worker: stored as it came
                    put[key] = self._packed(key, h, responses)
                    packed.append(h)
                continue
            version = h.session.version
            row, brief = rows.get(key) or (None, None)
            if self.versions.get(key) == version and key in self.heads:
                moved = self._moved_head(key, h, row, brief, key in tangled, key in tangles)
                if moved is not None:
                    heads[key] = (version, *moved)
                continue
            blob = _blob(h)
            if blob is None:
                continue  # a handle that cannot be kept is simply read again next time
            head = head_for(h, self.read_at_ns, brief, key in tangled, key in tangles)
            put[key] = (version, head, dumps(row, self.json_rows), blob)
            responses[key] = response_ids(h)
            self.versions[key] = version
            self.heads[key] = head
            self.raw[key] = put[key][2]
        gone = [k for k in self.versions if k not in handles]
        for k in gone:
            del self.versions[k]
            self.heads.pop(k, None)
            self.raw.pop(k, None)
        if put or heads or gone:
            self.store.write(put, gone, heads=heads, responses=responses)
        for d in packed:
            d.blob = None  # in the store now (woken from there)

    def _packed(self, key: str, d: Dormant, responses: dict[str, list[str]]) -> tuple[int, Any, bytes | None, bytes]:
        """A session a worker read and packed this run: its entry, as it came."""
        assert d.blob is not None
        responses[key] = d.ids or []
        self.versions[key] = d.version
        self.heads[key] = d.head
        self.raw[key] = d.raw
        return (d.version, d.head, d.raw, d.blob)

    def _moved_head(
        self, key: str, h: Handle, row: Row | None, brief: Any, entangled: bool, tangle: bool
    ) -> tuple[Any, bytes | None] | None:
        """A session read to its stored state: its files (a line with no event) or its row
        (time, a process) may have moved. Its head and row, kept here, if they did."""
        old = self.heads[key]
        raw = self.raw.get(key)
        head = head_for(h, self.read_at_ns, brief, entangled, tangle)
        if row is None:
            if "brief" in old:  # (the row stays as stored)
                head["brief"] = old["brief"]
        elif (new := dumps(row, self.json_rows)) != raw and row != self.row_of(key):
            raw = new
        # (the same row read again: kept as it was)
        if raw is self.raw.get(key) and (head == old or {**head, "at": old.get("at")} == old):
            return None
        self.heads[key] = head
        self.raw[key] = raw
        return head, raw

    def forget(self, key: str) -> None:
        """What is stored for this session is not to be kept: the next save writes it
        whole (it stays known, so its source is not taken for having gained a session)."""
        if key in self.versions:
            self.versions[key] = -1
