"""Whether a one-shot board may be kept as `huddle status --json`'s stored answer
(`huddle.io.answers`), and what it must find unmoved to be said again.

A board qualifies when every session slept on its cached row (a row time alone
cannot move, over files that had not moved), was read only for another's sake, or was
read this run and kept by it (the store's stamp says no other process wrote between:
`Store.own`; a row time can move is named "volatile"), every source with a sessions
folder was spared its scan, and each says which files its live signals come from
(`Source.live_inputs`). Such a board is worked out from stamped things only, so
while they stand still, it is what the full path would say. The usage index's run
(`huddle usage --json`) is kept on the same terms, without the live signals: counting
tokens, none matters; and one that read and kept what it read (a first read too) on
the heads and scan stamps it wrote, which the next run finds unmoved before it
sleeps on the sums kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from huddle.io.stamps import ident, unmoved
from huddle.sources.registry import source_classes

if TYPE_CHECKING:
    from .huddle import Huddle


def conditions(
    h: Huddle, also: list[str], stored_at: list[Any] | None = None, volatile: list[str] | None = None
) -> dict[str, Any] | None:
    """What the board `h` just built (or, on a core reading token counts only, the usage
    it counted) hangs on, and the files `also` (the user's prices); None if it cannot be
    stored. `stored_at` (a partial core, stored.patching: the store's stamp after it kept
    what it read): the sessions read this run stand on their new heads, if their rows
    are settled; what they hang on is the part of a board's conditions they are. A whole
    core whose store moved by its own writes alone (`Store.own`) is taken as one: its
    sessions stand on the heads, its sources on the scan stamps this run wrote (on a
    core counting tokens, every session read: its sums are a function of files).
    `volatile` (a board): a session whose row time or a process can move does not keep
    the board from being stored; it is named here ("volatile"), and such an answer is
    never said as it stands: stored.patching builds those rows again, as a whole read
    would (it wakes every unsettled session)."""
    cache = h.cache
    if not h.lazy or cache is None or cache.note or not h.settings.huddle_home:
        return None  # (the cache was not what it should be)
    if h.partial != (stored_at is not None):
        return None  # (a partial core's answer is made whole by stored.patching)
    now = cache.store.stamp()
    if not cache.opened or now != (stored_at or cache.opened):
        if stored_at is not None or h.partial or now != cache.store.own:
            return None  # another process wrote the cache meanwhile
        # (what this run read it kept, no other writing between: its sessions stand on
        # the heads it wrote, as a partial core's do, and its scans on their new stamps)
        stored_at = now
    usage = h.settings.usage_only
    heads = _heads(h, stored_at, usage, volatile)
    found = _source_inputs(h, usage) if heads is not None else None
    if heads is None or found is None:
        return None
    inputs, scans = found
    inputs.extend([p, ident(p)] for p in also)
    # every head's stamps, one list of files and one of folders (a project's folder holds
    # many sessions: it is looked at once); the folder a session's shape is decided in is
    # the scans' to watch (core.modes.unmoved_but_shaped: a session that came beside it)
    files = [f for head in heads for f in head.get("files") or ()]
    folders = list({tuple(f): f for head in heads for f in head.get("dirs") or () if f[0] != _shaped(head)}.values())
    names = sorted({c.folder_env for c in source_classes().values() if c.folder_env})
    out = {"inputs": inputs, "scans": scans, "files": files, "folders": folders, "names": names}
    if volatile:
        out["volatile"] = sorted(volatile)
    return out


def _heads(h: Huddle, stored_at: list[Any] | None, usage: bool, volatile: list[str] | None) -> list[Any] | None:
    """Every session's cached head, if each row stands on it (else it is named in
    `volatile`, when given; None when not)."""
    cache = h.cache
    assert cache is not None
    heads = [d.head for d in h.dormant.values()]
    for key in h.handles:
        head = cache.heads.get(key)
        if head is None:
            return None
        if stored_at is not None and usage:
            stands = True  # (read this run, kept on the head it stands on: its sums are a function of files)
        elif stored_at is not None and not head.get("entangled"):
            stands = _settled_row(h, key, head)  # (else time alone can move its row)
        else:
            stands = _read_only_for_others(h, key, head, usage)
        if not stands:
            if volatile is None:
                return None
            volatile.append(key)
        heads.append(head)
    return heads


def _source_inputs(h: Huddle, usage: bool) -> tuple[list[list[Any]], list[Any]] | None:
    """The files each source's answer hangs on (its config, its live signals; the roots
    of one with no sessions folder yet) and its last scan's stamps; None when a source
    was scanned this run."""
    assert h.cache is not None
    inputs: list[list[Any]] = []
    scans: list[Any] = []
    stamps = h.cache.meta().get("scans") or {}
    for src in h.sources:
        inputs.extend([p, ident(p)] for p in src.config_files())
        roots = src.roots()
        if not roots:
            continue
        if not src.exists():
            # no sessions folder: what would make one moves a root or a watched folder
            inputs.extend([p, ident(p)] for p in dict.fromkeys([*roots, *src.watch_dirs()]))
            continue
        # (counting tokens, no live signal matters; a scan this run is stamped as it
        # ended, before a usage core's conditions are asked with `stored_at`)
        live = [] if usage else src.live_inputs() if src.name in h.spared else None
        if live is None or not stamps.get(src.name):
            return None
        scans.append(stamps[src.name])
        inputs.extend([p, ident(p)] for p in live)
    return inputs, scans


def _read_only_for_others(h: Huddle, key: str, head: dict[str, Any], usage: bool = False) -> bool:
    """A session read though nothing of its own moved: one whose row hangs on others'
    files (a response it shares, a title another gives) is read with them every time.
    Its row is still a function of files if its source's live signals are files only,
    and it is settled (time alone cannot move it), over files that stood still. (Its
    usage sums are a function of files alone.)"""
    if not head.get("entangled") or not unmoved(head):
        return False
    return usage or _settled_row(h, key, head)


def _settled_row(h: Huddle, key: str, head: dict[str, Any]) -> bool:
    """Whether a session's row, as just given to the keeper, is a function of its files:
    its source's live signals are files only, and time alone cannot move it (its brief
    says it is still, and names no process, which may be gone)."""
    src = getattr(h.handles[key], "source", None)
    brief = head.get("brief")
    if not getattr(src, "rows_from_files", False) or not isinstance(brief, dict) or brief.get("process"):
        return False  # (a process it names is looked at on every read: it may be gone)
    return bool(brief.get("still"))


def _shaped(head: dict[str, Any]) -> str | None:
    shape = head.get("shape")
    return shape[0] if isinstance(shape, list) and shape else None
