"""Every file under the agents' session folders, counted: read into a session (a
handle's `files()`), known as not a session, or not read (huddle.model.files). What a
scan said of the files it gave no handle is the source's (`Source.files`); a session
that came out of its files with nothing in it is said here: an empty file is not a
session, a file with bytes huddle read nothing from is not read (a format huddle does
not know), never a row that is simply missing. `status --json` carries the counts
(`files`); views/doctor.py says every file.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from huddle.model.files import UNKNOWN_VERSION, FileNote
from huddle.model.rows import Kept, Row
from huddle.sources.base import guarded

_EMPTY = {"empty": True}  # (the row of a session known only as empty)

if TYPE_CHECKING:
    from huddle.core import Huddle
    from huddle.sources.base import Handle


class Account:
    """One agent's files."""

    def __init__(self, name: str, folders: list[str], exists: bool) -> None:
        self.name = name
        self.folders = folders
        self.exists = exists  # its sessions folder is here
        self.unplaced: Callable[[str, int], tuple[bool, str]] | None = None  # its source's Source.unplaced
        self.sessions: set[str] = set()
        self.not_sessions: list[FileNote] = []
        self.not_read: list[FileNote] = []
        self.erred: list[FileNote] = []  # sessions listed with an error (on the board too)

    def counts(self) -> dict[str, int]:
        return {"sessions": len(self.sessions), "not_sessions": len(self.not_sessions), "not_read": len(self.not_read)}


def _empty_files(paths: Iterable[tuple[str, int]], out: Account) -> None:
    """A session with nothing in it: each of its files as not a session or not read,
    and why, as its source says (`Source.unplaced`)."""
    for path, size in paths:
        if size == -1:
            continue  # (not there: a file a row shows, such as Codex's names, that is not written yet)
        said = guarded(f"{out.name} unplaced", out.unplaced, path, size) if out.unplaced else None
        read, why = said or (False, f"{UNKNOWN_VERSION}: no record huddle reads")
        (out.not_sessions if read else out.not_read).append(FileNote(path, why))


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def accounts(h: Huddle, rows: Mapping[str, object] | Collection[str], scans: bool = True) -> dict[str, Account]:
    """Per agent with a folder here, its files. `rows`: the board rows by session key
    (built or kept: `empty` says a session came out with nothing in it), or the keys of
    the sessions whose row is empty. `scans=False`: the sessions' files alone, not what
    the sources' scans said of the files they gave no session."""
    if not isinstance(rows, Mapping):
        rows = dict.fromkeys(rows, _EMPTY)
    out: dict[str, Account] = {}
    for src in h.sources:
        if src.roots():
            folders = list(src.files.folders) or [r for r in src.roots() if r]
            acc = out[src.name] = Account(src.name, folders, guarded(f"{src.name} exists", src.exists) or False)
            acc.unplaced = src.unplaced
            if scans:
                acc.not_sessions.extend(src.files.not_sessions)
                acc.not_read.extend(src.files.not_read)
    for key, handle in h.handles.items():
        if (mine := out.get(key.split(":", 1)[0])) is not None:
            _awake(mine, key, handle, rows.get(key))
    _asleep_all(out, getattr(h, "dormant", {}), rows)
    for acc in out.values():  # a file a session reads is no file left out; each file said once
        acc.not_read = list({n.path: n for n in acc.not_read if n.path not in acc.sessions}.values())
        said = acc.sessions | {n.path for n in acc.not_read}
        acc.not_sessions = list({n.path: n for n in acc.not_sessions if n.path not in said}.values())
    return out


def _said(row: object) -> tuple[bool, str]:
    """(whether a row came out empty, its error): a row built or kept, or a brief as a
    head keeps it (its plain values: core.cache)."""
    if isinstance(row, Row):
        return bool(row.empty), row.error or ""
    if isinstance(row, Kept):
        return bool(row.empty), ""  # (an error is no part of a brief)
    if isinstance(row, Mapping):
        return bool(row.get("empty")), str(row.get("error") or "")
    return False, ""


def _awake(acc: Account, key: str, handle: Handle, row: object) -> None:
    files = [*handle.files(), *handle.shown_from()]
    if _said(row)[0]:
        _empty_files(((f, _size(f)) for f in handle.files()), acc)
        return
    acc.sessions.update(files)
    if handle.session.error:
        acc.erred.append(FileNote(files[0] if files else key, handle.session.error))


# What each sleeping session said of its files, while it sleeps (a session moved wakes):
# a server counts the files of every board it says and of every round that moved.
_slept: weakref.WeakKeyDictionary[Any, tuple[tuple[bool, str], object, Account]] = weakref.WeakKeyDictionary()


# The last counts of every sleeping session's files, while the same sessions sleep with
# the same rows (a tuple of them: threads read it whole). Two: a server's round counts
# with the rows it built, its answers with the kept rows too, and they take turns.
_last_asleep: tuple[tuple[Any, dict[str, Account]], ...] = ()


def _asleep_all(out: dict[str, Account], dormant: Mapping[str, Any], rows: Mapping[str, object]) -> None:
    """Each sleeping session's files into its agent's account (`_asleep_said`), summed
    once while the same sessions sleep with the same rows."""
    global _last_asleep
    key = (tuple(dormant.values()), tuple([rows.get(k) for k in dormant]), [(n, a.unplaced) for n, a in out.items()])
    kept = _last_asleep
    last = next((each for each in kept if each[0] == key), None)
    if last is None:
        parts = {}
        for name, acc in out.items():
            parts[name] = Account(name, [], False)
            parts[name].unplaced = acc.unplaced
        for k, d in dormant.items():
            if (mine := parts.get(k.split(":", 1)[0])) is not None:
                _asleep_said(mine, k, d, rows.get(k) or d.head.get("brief"))
        last = (key, parts)
        _last_asleep = (last, *kept[:1])
    for name, part in last[1].items():
        acc = out[name]
        acc.sessions |= part.sessions
        acc.not_sessions.extend(part.not_sessions)
        acc.not_read.extend(part.not_read)
        acc.erred.extend(part.erred)


def _asleep_said(acc: Account, key: str, d: Any, row: object) -> None:
    """A sleeping session's (core.cache.Dormant) files into its agent's account: read
    into a session, or, one that came out empty, each not a session or not read, as its
    source says (that looks inside the files: said once per what its row says)."""
    said = _said(row)
    empty, error = said
    stamps = d.head.get("files") or ()
    if not empty:
        acc.sessions.update(str(f[0]) for f in stamps)
        if error:
            acc.erred.append(FileNote(str(stamps[0][0]) if stamps else key, error))
        return
    hit = _slept.get(d)
    if hit is None or hit[0] != said or hit[1] != acc.unplaced:
        part = Account(acc.name, [], False)
        part.unplaced = acc.unplaced
        _empty_files([(str(f[0]), int(f[1])) for f in stamps], part)
        hit = _slept[d] = (said, acc.unplaced, part)
    acc.not_sessions.extend(hit[2].not_sessions)
    acc.not_read.extend(hit[2].not_read)


def file_counts(h: Huddle, rows: Mapping[str, object] | Collection[str]) -> dict[str, dict[str, int]]:
    """`status --json`'s `files`: per agent, how many files are read into sessions, known
    as not sessions, not read."""
    return {name: acc.counts() for name, acc in accounts(h, rows).items() if acc.exists}


def sessions_counts(h: Huddle, rows: Mapping[str, object] | Collection[str]) -> dict[str, dict[str, int]]:
    """`file_counts` of the core's sessions alone (a partial core's: stored.patching)."""
    return {name: acc.counts() for name, acc in accounts(h, rows, scans=False).items() if acc.exists}


def shifted(
    counts: Mapping[str, Mapping[str, int]],
    before: Mapping[str, Mapping[str, int]],
    after: Mapping[str, Mapping[str, int]],
) -> dict[str, dict[str, int]]:
    """A board's `files` once some sessions moved: their counts `before` taken out, the
    ones `after` put in (`sessions_counts` of a core holding just them)."""
    out = {name: dict(c) for name, c in counts.items()}
    for name in before.keys() | after.keys():
        mine = out.setdefault(name, {"sessions": 0, "not_sessions": 0, "not_read": 0})
        for what in ("sessions", "not_sessions", "not_read"):
            was, now = before.get(name, {}).get(what, 0), after.get(name, {}).get(what, 0)
            mine[what] = max(0, mine.get(what, 0) - was + now)
    return out
