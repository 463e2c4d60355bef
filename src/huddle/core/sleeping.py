"""Sessions left unread (a lazy core): which cached sessions may sleep, which a scan or a
live signal wakes, and waking them from the cache. Functions of the core (Huddle
delegates), as whole.py's are."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from huddle.io.stamps import files_unmoved, folders_unmoved, unmoved
from huddle.model import events as ev
from huddle.model.attention import IDLE_AFTER, YOUR_TURN
from huddle.sources import Handle, guarded
from huddle.sources.base import Source

from .cache import Dormant
from .reading import refresh_one

if TYPE_CHECKING:
    from .huddle import Huddle

# A row in one of these states stays as it is while its files and the source's live
# signals stand still: time alone moves neither (see huddle.model.attention.after_quiet).
SETTLED = ("ended", "idle")


def sleeps(core: Huddle, d: Dormant, seen: dict[str, int] | None = None) -> bool:
    """A cached session may stay unread: its row is settled, nothing it was read from
    moved, and it shares no response with another session (the ledger decides over all
    of those at once). One whose title is decided across its folder sleeps too: its
    folder wakes whole when anything in it moves (`settle_moved`). Reading for token
    counts, any row is settled, and one sharing responses sleeps too (cache.tangled_with).
    The row is judged by its brief (core.cache.brief_of): the row itself stays undecoded."""
    if core.text_only:
        return unmoved(d.head, seen)
    brief = d.head.get("brief")
    if core.settings.usage_only:
        return isinstance(brief, dict) and unmoved_but_shaped(d.head, seen)
    still = isinstance(brief, dict) and settled(core, brief, d.head)
    return still and not d.head.get("entangled") and unmoved_but_shaped(d.head, seen)


def unmoved_but_shaped(head: dict[str, Any], seen: dict[str, int] | None = None) -> bool:
    """Nothing the head was stamped from moved, but the folder its shape is decided in
    (Handle.shape: a session came or went beside it), whose moves the scan judges
    (`keep_dormant`: the same shape sleeps on)."""
    shape = head.get("shape")
    if not isinstance(shape, list) or not shape:
        return unmoved(head, seen)
    dirs = [d for d in head.get("dirs") or () if d[0] != shape[0]]
    return files_unmoved(head.get("files") or ()) and folders_unmoved(dirs, seen)


def settled(core: Huddle, row: dict[str, Any], head: dict[str, Any]) -> bool:
    """Whether time alone cannot move this row, or its brief (huddle.model.attention.after_quiet):
    ended or idle; or your turn with only background work left, no process known,
    and files that had stood still past the idle time when the row was built (what
    nothing vouches for had gone idle by then: only a move wakes it); or a session
    with nothing in it (off the board until a line or a live process comes)."""
    state = row.get("state")
    if state in SETTLED or row.get("empty"):
        return True
    if state != YOUR_TURN or not row.get("background") or row.get("pid") is not None:
        return False
    newest = max((f[2] for f in head.get("files") or () if f[1] >= 0), default=None)
    at = head.get("at")
    quiet_ns = 2 * float(getattr(core, "idle_after", IDLE_AFTER)) * 1e9  # a margin past it
    return newest is not None and isinstance(at, int) and at - newest > quiet_ns


def between_scans(core: Huddle, src: Source, notes: list[str]) -> tuple[set[str], bool]:
    """A source still since its last scan: its live signals only (usage: none). Returns
    the keys they moved, whose sleeping sessions are woken as after a scan, and
    whether that did (False: scan it after all)."""
    if core.settings.usage_only:
        return set(), True
    mine = src.name + ":"
    known = {k: h for k, h in core.handles.items() if k.startswith(mine)}
    moved = guarded(f"{src.name} live signals", src.between_scans, known, on_error=notes.append)
    if moved is None:
        return set(), False
    lost = wake(core, [k for k in core.dormant if k.startswith(mine) and k in moved])
    return {k for k in moved if k in core.handles or k in lost}, not lost


def wake(core: Huddle, keys: Iterable[str]) -> set[str]:
    """Returns the keys that did not unpickle (the scan reads them again)."""
    keys = [k for k in keys if k in core.dormant]
    if not keys or core.cache is None:
        return set()
    for key, h in core.cache.wake(keys, core.dormant).items():
        core.handles[key] = h
    for key in keys:
        core.dormant.pop(key, None)
    return {k for k in keys if k not in core.handles}


def keep_dormant(
    core: Huddle, found: dict[str, Handle], live_moved: set[str], scanned: set[str]
) -> tuple[dict[str, Handle], set[str], dict[str, str], set[str]]:
    """After the scans: a sleeping session the scan still finds sleeps on (the fresh
    handle the scan made for it is dropped: nothing it was read from moved), unless
    its live signals moved. A session that came (or one read again from its start: the
    scan gives it other files, Handle.regrouped) wakes the sleeping ones it shares
    responses with once it is read (`wake_partners`); one that went shared none with
    a sleeping one (a session that shares responses never sleeps). Only the `scanned`
    sources' sessions can be gone. Returns (found, keys gone, the folder each gone one
    was in, keys read again from their start)."""
    gone = {k for k in core.dormant if k not in found and k.split(":", 1)[0] in scanned}
    gone_at = {k: dormant_folder(core.dormant.pop(k)) for k in gone}
    regrouped = {k for k, d in core.dormant.items() if k in found and _regrouped(found[k], d)}
    # (one whose shape the scan decides otherwise now: its folder was made, an agent file given)
    regrouped |= {k for k, d in core.dormant.items() if k in found and "shape" in d.head and _reshaped(found[k], d)}
    for k in regrouped:
        del core.dormant[k]
    woken = [k for k in core.dormant if k in live_moved]
    if woken:
        wake(core, woken)  # unmoved: what was read is what the scan would find
        found.update((k, core.handles[k]) for k in woken if k in core.handles)
    return {k: h for k, h in found.items() if k not in core.dormant}, gone, gone_at, regrouped


def wake_partners(core: Huddle, found: dict[str, Handle], fresh: set[str]) -> set[str]:
    """Sessions read from their start this round (new ones, regrouped ones) may hold
    copies of a sleeping session's responses (a resume or fork into a new file): the
    sleeping sessions the store says hold any of their responses, or that their copies
    name (`origin`), wake, so the ledger decides the one count of each with all of them
    at hand. A holder the store names that is no more (its entry went since) leaves it
    unsure: then every sleeping session of that source wakes. Returns the keys woken."""
    if not fresh or not core.dormant or core.cache is None:
        return set()
    rids: list[str] = []
    named: set[str] = set()
    for k in fresh:
        h = found.get(k)
        if h is None:
            continue
        src = h.session.source
        for e in h.session.events:
            if e.kind == ev.USAGE and e.id and not e.copied:
                rids.append(f"{src}:{e.id}")
                if e.origin:
                    named.add(f"{src}:{e.origin}")
    if not rids:
        return set()
    holders = core.cache.store.holders(rids)
    if holders is None:  # (the store cannot say: as before it could, the sources' sessions wake)
        holders = set()
        named |= {k for k in core.dormant if k.split(":", 1)[0] in {r.split(":", 1)[0] for r in rids}}
    unsure = {k.split(":", 1)[0] for k in holders if k not in core.dormant and k not in found}
    want = [k for k in core.dormant if k in holders or k in named or k.split(":", 1)[0] in unsure]
    if not want:
        return set()
    lost = wake(core, want)
    woken = set()
    for k in want:
        if k not in lost and k in core.handles:
            found[k] = core.handles[k]
            refresh_one(found[k])
            woken.add(k)
    return woken


def settle_moved(
    core: Huddle, found: dict[str, Handle], moved: set[str], gone_at: dict[str, str], notes: list[str]
) -> set[str]:
    """After a round of reads: what one session's files say about another's row (a title
    another file of its folder gives: Source.settle), worked out again only in the
    folders where something that can move it moved: a session came or went, or one
    whose row is decided across its folder (Handle.entangled) read new bytes. Such a
    folder's sleeping sessions wake first (unmoved: reading them costs a stat), so the
    decision is made with all of them at hand. Returns the keys whose rows it changed."""
    core.settled_in = set()
    if not moved:
        return set()
    heads = core.cache.heads if core.cache is not None else {}
    touched = {f for f in gone_at.values() if f}
    for k in moved:
        h = found.get(k)
        if h is None:
            continue
        if k not in heads or heads[k].get("tangle") or guarded("tangle", h.entangled):
            touched.add(folder_of(h.files()))  # (one not in the cache is new: it may copy a leaf)
    touched.discard("")
    core.settled_in = touched
    if core.dormant and touched:
        tangled = {folder_of(h.files()) for h in found.values() if guarded("tangle", h.entangled)}
        tangled |= {dormant_folder(d) for d in core.dormant.values() if d.head.get("tangle")}
        group = [k for k, d in core.dormant.items() if dormant_folder(d) in touched & tangled]
        if group:
            lost = wake(core, group)
            for k in group:
                if k not in lost and k in core.handles:
                    found[k] = core.handles[k]
                    refresh_one(found[k])
    changed: set[str] = set()
    for src in core.sources:
        mine = {k: h for k, h in found.items() if k.startswith(src.name + ":") and folder_of(h.files()) in touched}
        if mine:
            changed |= guarded(f"{src.name} settle", src.settle, mine, on_error=notes.append) or set()
    return changed


def dormant_folder(d: Dormant) -> str:
    return folder_of([f[0] for f in d.head.get("files") or ()])


def _reshaped(h: Handle, d: Dormant) -> bool:
    try:
        return h.shape() != d.head["shape"]
    except Exception:  # (an adapter's bug: reading it again is never wrong)
        return True


def _regrouped(h: Handle, d: Dormant) -> bool:
    try:
        return bool(h.regrouped([f[0] for f in d.head.get("files") or ()]))
    except Exception:  # (an adapter's bug: reading it again is never wrong)
        return True


def folder_of(files: list[str]) -> str:
    return os.path.dirname(files[0]) if files else ""
