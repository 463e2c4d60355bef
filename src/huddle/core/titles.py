"""Titles decided across sessions (Source.settle: Claude Code 1.0-2.0 summary records,
which title other sessions of their folder): after a round of reads, in which folders
they can have moved, which sessions are tied to what moved (Handle.ties), and the
settling itself over those alone. Functions of the core (Huddle calls them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from huddle.sources import Handle, guarded

from .keeper import folder_of

if TYPE_CHECKING:
    from .huddle import Huddle, Round


def touched(core: Huddle, found: dict[str, Handle], r: Round) -> dict[str, set[str] | None]:
    """The folders where a title decided across the folder can move this round, with
    what moved: anything (a session came or went; one read new bytes that named what
    it did not before), or the ties of sessions whose titles are so decided that read
    new bytes (an append elsewhere never moves a title: summaries.py)."""
    heads = core.cache.heads if core.cache is not None else {}
    touched: dict[str, set[str] | None] = {f: None for f in r.gone_at.values() if f}
    for key in r.moved:
        h = found.get(key)
        head = heads.get(key)
        if h is None or not (head is None or head.get("tangle") or guarded("tangle", h.entangled)):
            continue
        folder = folder_of(h.files())
        ties = set(guarded("ties", h.ties) or ())
        was = head.get("ties") if head is not None else None
        if not ties or not isinstance(was, list) or not ties <= set(was):
            touched[folder] = None  # (one new may copy a leaf; one that names more, anything)
        elif (before := touched.get(folder, set())) is not None:
            touched[folder] = before | ties
    touched.pop("", None)
    return touched


def tied(core: Huddle, found: dict[str, Handle], r: Round) -> set[str]:
    """The sessions whose titles are worked out again: every one of a folder where
    anything moved; else those tied to what moved (sharing a tie, and theirs, and so
    on: a title is decided among the sessions holding its leaf and the one naming it),
    awake or asleep (the keeper wakes those)."""
    if not r.touched:
        return set()
    by_folder, tangled = _touched_members(core, found, r)
    out: set[str] = set()
    for folder, ties in r.touched.items():
        members = by_folder.get(folder, {})
        if folder not in tangled:
            continue  # (no title there is decided across the folder)
        out.update(members if ties is None else _tied_through(members, ties))
    return out


def _touched_members(
    core: Huddle, found: dict[str, Handle], r: Round
) -> tuple[dict[str, dict[str, list[str]]], set[str]]:
    """Per touched folder, its sessions (awake or asleep) and their ties; and the folders
    where a title is decided across the folder at all."""
    by_folder: dict[str, dict[str, list[str]]] = {}  # folder -> key -> its ties
    tangled: set[str] = set()
    for key, h in found.items():
        folder = folder_of(h.files())
        if folder in r.touched:
            by_folder.setdefault(folder, {})[key] = list(guarded("ties", h.ties) or ())
            if guarded("tangle", h.entangled):
                tangled.add(folder)
    for key, d in core.dormant.items():
        folder = folder_of([f[0] for f in d.head.get("files") or ()])
        if folder in r.touched:
            by_folder.setdefault(folder, {})[key] = list(d.head.get("ties") or ())
            if d.head.get("tangle"):
                tangled.add(folder)
    return by_folder, tangled


def _tied_through(members: dict[str, list[str]], ties: set[str]) -> set[str]:
    """The sessions holding one of `ties`, and those holding one of theirs, and so on."""
    holders: dict[str, list[str]] = {}
    for key, mine in members.items():
        for t in mine:
            holders.setdefault(t, []).append(key)
    out: set[str] = set()
    todo, seen = list(ties), set(ties)
    while todo:
        for key in holders.get(todo.pop(), ()):
            if key not in out:
                out.add(key)
                for t in members[key]:
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
    return out


def settle(core: Huddle, found: dict[str, Handle], r: Round, notes: list[str]) -> set[str]:
    """What one session's files say about another's row (Source.settle), worked out
    among the sessions it can move in this round (`tied`), all of them at hand."""
    core.settled_in = set(r.touched)
    changed: set[str] = set()
    keys = r.settle | r.moved  # (what a session's own read says of it beyond its events: a source's to add)
    for src in core.sources:
        mine = {key: found[key] for key in keys if key in found and key.startswith(src.name + ":")}
        if mine:
            changed |= guarded(f"{src.name} settle", src.settle, mine, on_error=notes.append) or set()
    return changed
