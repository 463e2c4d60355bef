"""One unified Vibe store on disk: CURRENT -> manifest -> documents + chunks -> journal.

Only what the current manifest names is followed (stale chunks and generations
linger). The writer may publish a new generation at any moment: CURRENT is replaced
atomically and older generations are deleted. A load that loses a file to that, or
finds CURRENT moved once it is done, starts again from the new CURRENT. While the
generation stays the same, its journal segment is read with a LineReader, so a
refresh costs the appended lines only; on a new generation the rest of the old
segment is read first, then the new snapshot, then the new segment.

The store is read, never written: no locks are taken, no hashes are required to
verify (the samples' paths were anonymised, so their digests do not match).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import msgspec

from huddle.errors import InputError
from huddle.io.reader import GONE, RESET, LineReader
from huddle.io.safefile import DOC_MAX, SIDE_MAX, read_small, stamp
from huddle.model import times
from huddle.model.times import parse_time
from huddle.sources.base import drain

from . import records as vr

T = TypeVar("T")
_GENERATION = re.compile(r"^\d{16}$")
_CHUNK = re.compile(r"^[0-9a-f]{16,128}$")
_RETRIES = 5


class StoreError(InputError):
    """The store cannot be read: one line that names the file and what was wrong."""


class _Missing(Exception):
    pass


class Unparsed(StoreError):
    """A store file that is not JSON (yet): CURRENT caught half-written, say."""


class Rewritten(Exception):
    """The live journal segment was cut or rewritten in place: what was read from it is wrong."""


class Loaded:
    """The state of one generation: history entries, public envelope, runtime state."""

    def __init__(self, folder: str, cur: vr.Current, manifest: vr.Manifest):
        self.folder = folder
        self.generation = cur.generation
        self.sequence = manifest.snapshot_sequence or cur.snapshot_sequence
        self.minor = cur.store_format_minor
        self.created_at = parse_time(manifest.created_at)
        self.execution_state = manifest.execution_state or ""
        self.entries: list[tuple[vr.Entry, str, int, int]] = []  # entry, file, offset, length
        self.snapshot = vr.Snapshot()
        self.runtime = vr.RuntimeDoc()
        self.meta: vr.StoreMeta | None = None
        self.segment = ""
        self.chunks: list[str] = []  # the history's chunks, in order (only new ones are in `entries`)
        self.problems: list[tuple[str, int, str]] = []


class Sink(Protocol):
    def snapshot(self, loaded: Loaded) -> None: ...
    def record(self, path: str, off: int, n: int, rec: vr.Record, usage_only: bool = False) -> None: ...
    def base(self, seq: int, usage: vr.TokenUsage | None, t: float | None) -> None: ...
    def problem(self, path: str, off: int, what: str) -> None: ...


def _read(path: str, cap: int = SIDE_MAX) -> bytes:
    """A store file whole (they are JSON documents), through safefile: a regular file,
    in its folder, under its cap (CURRENT and manifests are small; chunks and state
    documents get DOC_MAX)."""
    try:
        return read_small(path, cap)
    except FileNotFoundError:
        raise _Missing(path) from None
    except OSError as exc:
        raise StoreError(f"{path}: {exc.strerror or exc}") from None


def _decode(decode: Callable[[bytes], T], data: bytes, path: str) -> T:
    try:
        return decode(data)
    except msgspec.ValidationError as exc:  # a DecodeError too: caught first
        raise StoreError(f"{path}: unexpected shape ({exc})") from None
    except msgspec.DecodeError as exc:
        raise Unparsed(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise Unparsed(f"{path}: nested too deep") from None


def _inside(folder: str, rel: str, what: str) -> str:
    """A path a manifest names, kept inside the store."""
    if not rel or rel.startswith("/") or ".." in rel.split("/"):
        raise StoreError(f"{folder}: the manifest names an odd {what} path {rel!r}")
    return os.path.join(folder, rel)


class StoreReader:
    def __init__(self, folder: str):
        self.folder = folder
        self.current_path = os.path.join(folder, "CURRENT")
        self.generation = ""
        self.journal: LineReader | None = None
        self.loads = 0  # generations loaded (for tests and the bench)
        self.gone = False
        self._current_key: tuple[int, ...] | None = ()  # CURRENT's stamp when last read: unchanged, same generation
        # Chunks are content-addressed and sealed: one already read holds the same
        # entries in the same state, so a new generation costs only its new chunks.
        self.chunks_read: set[str] = set()
        self.read_from: set[str] = set()  # chunk and segment files events may point into

    def files(self) -> list[str]:
        """What this store was read from and still has: CURRENT (replaced with each
        generation), the live segment, and the chunks and older segments events name."""
        live = [self.current_path] + ([self.journal.path] if self.journal is not None else [])
        return live + sorted(p for p in self.read_from - set(live) if os.path.exists(p))

    def poll(self, sink: Sink) -> None:
        """Read what changed: a new generation (old segment's rest, snapshot, new segment)
        or the current segment's appended lines."""
        key = stamp(self.current_path)  # ctime too: a chmod back is a change
        if key is None:
            self.gone = bool(self.generation) and not os.path.isdir(self.folder)
            return  # a store being created, or one deleted (2.26 closes sub-agents so); a loop is a note
        self.gone = False
        if key == self._current_key and self.journal is not None:
            self._drain(self.journal, sink)
            return
        try:
            cur = self._current()
        except Unparsed:
            if self.journal is None:
                raise  # nothing read yet: the row says it
            # CURRENT is rewritten in place: caught half-written, the generation read stands
            # until a good one replaces it (its stamp is left old: read again next time)
            self._drain(self.journal, sink)
            return
        if cur.generation != self.generation:
            if self.journal is not None:
                self._drain(self.journal, sink)
            loaded = self._load()
            self._earlier_usage(loaded, sink)
            for path, off, what in loaded.problems:
                sink.problem(path, off, what)
            sink.snapshot(loaded)
            self.generation = loaded.generation
            self.journal = LineReader(loaded.segment)
            self.loads += 1
        self._current_key = key
        if self.journal is not None:
            self._drain(self.journal, sink)

    # -- journal -------------------------------------------------------------------

    def _drain(self, reader: LineReader, sink: Sink, usage_only: bool = False, upto: int = -1) -> None:
        status = reader.check()
        if status == GONE:
            return
        if status == RESET and reader is self.journal:
            raise Rewritten(reader.path)  # the journal only grows: cut or rewritten, read the store again
        self.read_from.add(reader.path)

        def feed(off: int, line: bytes) -> None:
            rec = _record(reader.path, off, line, sink)
            if rec is not None and (upto < 0 or rec.sequence <= upto):
                sink.record(reader.path, off, len(line), rec, usage_only)

        drain(reader, sink, feed)

    # -- generations ---------------------------------------------------------------

    def _current(self) -> vr.Current:
        try:
            data = _read(self.current_path)
        except _Missing:
            raise StoreError(f"{self.current_path}: missing") from None
        cur = _decode(vr.decode_current, data, self.current_path)
        if cur.store_format != vr.STORE_FORMAT:
            raise StoreError(f"{self.current_path}: unknown store format {cur.store_format!r}")
        if cur.store_format_minor > vr.KNOWN_MINOR:
            raise StoreError(
                f"{self.current_path}: store format minor {cur.store_format_minor} is newer than "
                f"huddle understands (up to {vr.KNOWN_MINOR})"
            )
        if not _GENERATION.match(cur.generation):
            raise StoreError(f"{self.current_path}: odd generation name {cur.generation!r}")
        return cur

    def _load(self) -> Loaded:
        """The generation CURRENT names, consistent: retried while the writer moves on."""
        for _ in range(_RETRIES):
            cur = self._current()
            try:
                loaded = self._load_generation(cur)
            except _Missing as miss:
                if self._current().generation != cur.generation:
                    continue  # deleted under us by a newer generation: read that one
                raise StoreError(
                    f"{self.current_path} names generation {cur.generation}, but {miss.args[0]} is missing"
                ) from None
            if self._current().generation == cur.generation:
                self.chunks_read.update(loaded.chunks)
                return loaded
        raise StoreError(f"{self.current_path}: the generation kept changing while it was read")

    def _load_generation(self, cur: vr.Current) -> Loaded:
        gdir = os.path.join(self.folder, "generations", cur.generation)
        mpath = os.path.join(gdir, "manifest.json")
        manifest = _decode(vr.decode_manifest, _read(mpath), mpath)
        loaded = Loaded(self.folder, cur, manifest)
        ps = manifest.projection_state
        if ps is None:
            raise StoreError(f"{mpath}: names no projection state")
        ppath = _inside(gdir, ps.path or "projection-state.json", "projection state")
        doc = _decode(vr.decode_projection, _read(ppath, DOC_MAX), ppath)
        self.read_from.add(ppath)
        snap = doc.snapshot or vr.Snapshot()
        loaded.snapshot = snap
        inline = snap.history.entries if snap.history is not None else []
        self._entries(loaded, ppath, b"", inline)
        for digest in ps.chunks or ():
            if not _CHUNK.match(digest):
                raise StoreError(f"{mpath}: odd chunk name {digest!r}")
            loaded.chunks.append(digest)
            if digest in self.chunks_read:
                continue
            cpath = os.path.join(self.folder, "chunks", digest + ".json")
            data = _read(cpath, DOC_MAX)
            self.read_from.add(cpath)
            self._entries(loaded, cpath, data, _decode(vr.decode_chunk, data, cpath))
        rs = manifest.runtime_state
        if rs is not None:
            rpath = _inside(gdir, rs.path or "runtime-state.json", "runtime state")
            loaded.runtime = _decode(vr.decode_runtime, _read(rpath, DOC_MAX), rpath)
        seg = manifest.recovery_journal_segment
        if seg is None or not seg.path:
            raise StoreError(f"{mpath}: names no journal segment")
        loaded.segment = _inside(self.folder, seg.path, "journal")
        loaded.meta = _store_meta(os.path.join(self.folder, "meta.json"))
        return loaded

    @staticmethod
    def _entries(loaded: Loaded, path: str, data: bytes, raws: list[Any]) -> None:
        pos = 0
        for raw in raws:
            b = bytes(raw)
            # chunks are compact arrays: the entry starts right after the previous one
            off = data.find(b, pos, pos + len(b) + 8) if data else -1
            if off >= 0:
                pos = off + len(b)
            try:
                loaded.entries.append((vr.decode_entry(b), path, off, len(b)))
            except msgspec.DecodeError as exc:
                loaded.problems.append((path, off, f"history entry of unexpected shape ({exc})"))
            except RecursionError:
                loaded.problems.append((path, off, "history entry nested too deep"))

    def _earlier_usage(self, loaded: Loaded, sink: Sink) -> None:
        """Per-call usage lives only in the journal, and the segments before the current
        one go with their generations. The previous generation (kept until the next is
        published) gives its cumulative totals and its segment's calls, unless that is the
        generation this reader followed; whatever is gone is covered by the totals.
        Best effort: a vanished file just means less detail."""
        gens = os.path.join(self.folder, "generations")
        try:
            older = sorted(n for n in os.listdir(gens) if _GENERATION.match(n) and n < loaded.generation)
        except OSError:
            return
        if not older or older[-1] <= self.generation:
            return  # read live already (its segment was drained before this load)
        gdir = os.path.join(gens, older[-1])
        try:
            manifest = vr.decode_manifest(_read(os.path.join(gdir, "manifest.json")))
            ps, seg = manifest.projection_state, manifest.recovery_journal_segment
            if ps is None or seg is None:
                return
            ppath = _inside(gdir, ps.path or "projection-state.json", "projection state")
            doc = vr.decode_projection(_read(ppath, DOC_MAX))
            segment = _inside(self.folder, seg.path, "journal")
        except (_Missing, StoreError, msgspec.MsgspecError, OSError, RecursionError):
            return
        info = doc.snapshot.session if doc.snapshot is not None else None
        t = times.millis(info.createdAt) if info is not None and info.createdAt else None
        sink.base(manifest.snapshot_sequence, info.tokenUsage if info is not None else None, t)
        if segment != loaded.segment:  # an empty generation shares its segment with the next
            self._drain(LineReader(segment), sink, usage_only=True, upto=loaded.sequence)


def _record(path: str, off: int, line: bytes, sink: Sink) -> vr.Record | None:
    try:
        return vr.decode_record(line)
    except msgspec.ValidationError as exc:  # a DecodeError too: caught first
        sink.problem(path, off, f"journal record of unexpected shape ({exc})")
    except msgspec.DecodeError as exc:
        sink.problem(path, off, f"not JSON ({exc})")
    except RecursionError:
        sink.problem(path, off, "not JSON (nested too deep)")
    return None


def _store_meta(path: str) -> vr.StoreMeta | None:
    try:
        return vr.decode_store_meta(_read(path))
    except (_Missing, StoreError, OSError, msgspec.MsgspecError, RecursionError):
        return None
