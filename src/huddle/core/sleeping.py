"""Sessions left unread (a lazy core): which cached sessions may sleep, which a scan or a
live signal wakes, and waking them from the cache. Functions of the core (Huddle
delegates), as whole.py's are."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from huddle.io.stamps import unmoved
from huddle.model.attention import IDLE_AFTER, YOUR_TURN
from huddle.sources import Handle, guarded
from huddle.sources.base import Source

from .cache import Dormant

if TYPE_CHECKING:
    from .huddle import Huddle

# A row in one of these states stays as it is while its files and the source's live
# signals stand still: time alone moves neither (see huddle.model.attention.after_quiet).
SETTLED = ("ended", "idle")


def sleeps(core: Huddle, d: Dormant, seen: dict[str, int] | None = None) -> bool:
    """A cached session may stay unread: its row is settled, nothing it was read from
    moved, and nothing it shows depends on another session's files. Reading for token
    counts, any row is settled, and one sharing responses sleeps too (cache.tangled_with).
    The row is judged by its brief (core.cache.brief_of): the row itself stays undecoded."""
    if core.text_only:
        return unmoved(d.head, seen)
    brief = d.head.get("brief")
    if core.settings.usage_only:
        return isinstance(brief, dict) and unmoved(d.head, seen)
    still = isinstance(brief, dict) and settled(core, brief, d.head)
    return still and not d.head.get("entangled") and unmoved(d.head, seen)


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
    tangled = {folder_of(h.files()) for h in known.values() if h.entangled()} - {""}
    woken = [
        k
        for k, d in core.dormant.items()
        if k.startswith(mine)
        and (k in moved or (tangled and folder_of([f[0] for f in d.head.get("files") or ()]) in tangled))
    ]
    lost = wake(core, woken)
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
) -> tuple[dict[str, Handle], set[str]]:
    """After the scans: a sleeping session the scan still finds sleeps on (the fresh
    handle the scan made for it is dropped: nothing it was read from moved), unless
    its live signals moved, or a session of its source came or went (a new file may
    copy its history, and the one count of a shared response is decided over all of
    a source's sessions: see huddle.model.ledger). Only the `scanned` sources' sessions
    can be gone. Returns (found, keys gone)."""
    gone = {k for k in core.dormant if k not in found and k.split(":", 1)[0] in scanned}
    for k in gone:
        del core.dormant[k]
    known = core.cache.versions if core.cache is not None else {}
    stirred = {k.split(":", 1)[0] for k in found if k not in known and k not in core.handles}
    stirred |= {k.split(":", 1)[0] for k in gone | ((set(known) | set(core.handles)) - set(found))}
    # a sleeping session the scan gives other files than it was read from (Handle.regrouped)
    # is read again from its start, and, as after a session came, its source's others
    regrouped = {k for k, d in core.dormant.items() if k in found and _regrouped(found[k], d)}
    for k in regrouped:
        del core.dormant[k]
    stirred |= {k.split(":", 1)[0] for k in regrouped}
    stirred &= scanned
    # a title given across a folder (huddle.sources.base.Handle.entangled) is decided
    # with every session of that folder at hand
    tangled = {folder_of(h.files()) for h in found.values() if h.entangled()} - {""}
    woken = [
        k
        for k, d in core.dormant.items()
        if k in live_moved
        or k.split(":", 1)[0] in stirred
        or (tangled and folder_of([f[0] for f in d.head.get("files") or ()]) in tangled)
    ]
    if woken:
        wake(core, woken)  # unmoved: what was read is what the scan would find
        found.update((k, core.handles[k]) for k in woken if k in core.handles)
    return {k: h for k, h in found.items() if k not in core.dormant}, gone


def _regrouped(h: Handle, d: Dormant) -> bool:
    try:
        return bool(h.regrouped([f[0] for f in d.head.get("files") or ()]))
    except Exception:  # (an adapter's bug: reading it again is never wrong)
        return True


def folder_of(files: list[str]) -> str:
    return os.path.dirname(files[0]) if files else ""
