"""What the handle cache keeps of its sources' last scans (core.cache.HandleCache is
one): the folders each scan looked at, stamped, so a run whose folders stood still
skips the scan (`still_sources`); what each said of the files it gave no session,
said again while spared (`scan_files`); and what a scan keeps for the next one
(Source.memo: `recall`). All of it in the store's meta."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from huddle.io.safefile import unreadable
from huddle.io.stamps import dirs_still, explained, stamps_of
from huddle.sources.base import Source

if TYPE_CHECKING:
    from .store import Store


class ScanRecord:
    """The scans' part of the handle cache (its `store`, `heads`, `read_at_ns` and
    `vouched` are the cache's own)."""

    store: Store
    heads: dict[str, dict[str, Any]]
    read_at_ns: int
    vouched: list[Any]

    def meta(self) -> dict[str, Any]:
        return self.store.meta

    def set_meta(self, **kv: Any) -> None:
        self.store.write({}, meta=kv)

    def folder_stamps(self, src: Source) -> list[list[Any]]:
        """Every folder a new session of this source would move: its own, and each
        folder from its root down to each of its cached files (a new day's folder moves
        its month's)."""
        roots = {os.path.normpath(r) for r in src.roots()}
        dirs: dict[str, None] = dict.fromkeys(src.watch_dirs())
        mine = src.name + ":"
        for key, head in self.heads.items():
            if not key.startswith(mine):
                continue
            for f in head.get("files") or ():
                d = os.path.dirname(f[0])
                while d and d not in dirs and os.path.normpath(d) not in roots and d != os.path.dirname(d):
                    dirs[d] = None
                    d = os.path.dirname(d)
        return stamps_of(dirs, self.read_at_ns, folders=True)

    def still_sources(self) -> set[str]:
        """The sources none of whose folders a session could appear in (or vanish from)
        moved since their last scan, which had nothing to say (a lazy core skips their scans).
        None while the store said something this run (a damaged entry left out is a session
        only a scan finds again)."""
        if self.store.note:
            return set()
        stamps = self.meta().get("scans")
        if not isinstance(stamps, dict):
            return set()
        return {name for name, st in stamps.items() if st in self.vouched or dirs_still(st)}

    def explain(self, name: str, known: set[str]) -> tuple[list[list[Any]], list[str]] | None:
        """A source whose folders moved since its last scan, though nothing a scan would
        find anew came or went in them (io.stamps.explained: every file in them `known`,
        or one that came, to be placed): its stamps taken again and the files that came.
        None when only its scan can say what moved."""
        stamps = (self.meta().get("scans") or {}).get(name)
        if not isinstance(stamps, list) or not stamps or self.store.note:
            return None
        return explained(stamps, known, self.read_at_ns)

    def restamp(self, stamps: dict[str, list[list[Any]]]) -> None:
        """Sources spared their scans by `explain`, stamped as it found them (after the
        heads of the sessions that came are written: never a stamp that hides one)."""
        kept = dict(self.meta().get("scans") or {})
        kept.update((name, st) for name, st in stamps.items() if name in kept)
        self.set_meta(scans=kept)

    def stamp_scans(self, sources: Iterable[Source], scanned: dict[str, bool]) -> None:
        """After the scans: their sources' folders, for `still_sources` next time (a scan
        that failed or left a note is done again), and what each said of the files it
        gave no session (`Source.files`: said again while the scan is spared: `scan_files`)."""
        import msgspec

        stamps = dict(self.meta().get("scans") or {})
        files = dict(self.meta().get("files") or {})
        for src in sources:
            if src.name in scanned:
                clean = scanned[src.name] and not src.notes and not unreadable(src.roots())
                # (a file it gave no session, stamped: one that grows a session's head is scanned for)
                said = stamps_of(sorted(src.files.placed()), self.read_at_ns, folders=True)
                stamps[src.name] = self.folder_stamps(src) + said if clean else None
                files[src.name] = msgspec.to_builtins(src.files) if clean else None
        memos = dict(self.meta().get("memos") or {})
        for src in sources:
            if scanned.get(src.name):
                memos[src.name] = src.memo()
        memos = {k: v for k, v in memos.items() if v}
        kept = {"scans": {k: v for k, v in stamps.items() if v}, "files": {k: v for k, v in files.items() if v}}
        if memos != (self.meta().get("memos") or {}):
            kept["memos"] = memos  # (written when it changed only: a history's memo is large and still)
        self.set_meta(**kept)

    def recall(self, sources: Iterable[Source]) -> None:
        """Each source given what its last scan kept (Source.memo: stamp_scans)."""
        memos = self.meta().get("memos") or {}
        for src in sources:
            if src.name in memos:
                src.recall(memos[src.name])

    def scan_files(self, src: Source) -> None:
        """A source spared its scan says of its files what its last scan said (stamp_scans)."""
        import msgspec

        from huddle.model.files import Files

        kept = (self.meta().get("files") or {}).get(src.name)
        if kept is not None:
            try:
                src.files = msgspec.convert(kept, Files)
            except msgspec.ValidationError:  # (another version's: the next scan says it again)
                pass
