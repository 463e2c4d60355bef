"""Stamps of files and folders (size, mtime, ctime): how huddle tells, without reading
a file, that it is what was read. The handle cache's heads and scan stamps and the
stored answers (`huddle.io.answers`) are both checked here, so both mean the same by
"unmoved". Standard library only: the fast paths import it before anything else.
"""

from __future__ import annotations

import os
from stat import S_ISDIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

SETTLE_NS = 1_000_000_000  # a file that moved this close to its read is looked at again next time


def stamps_of(paths: Iterable[str], read_at_ns: int, folders: bool = False) -> list[list[Any]]:
    """[path, size, mtime_ns] per file ([path, -1, -1] for one that is not there). One
    that moved around the read (`read_at_ns`, when it began) gets a stamp that never
    matches: what was half seen is read again rather than trusted. `folders`: [path,
    mtime_ns, ctime_ns] (ctime: a folder made unreadable, or readable again, is listed
    again; a scan that met an unreadable one left a note and was not stamped)."""
    out: list[list[Any]] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append([p, -1, -1])
            continue
        if st.st_mtime_ns >= read_at_ns - SETTLE_NS:
            out.append([p, -2, -2])
        elif folders:
            out.append([p, st.st_mtime_ns, st.st_ctime_ns])
        else:
            out.append([p, st.st_size, st.st_mtime_ns])
    return out


def unmoved(head: dict[str, Any], seen: dict[str, int] | None = None) -> bool:
    """Whether nothing the head was stamped from has moved since. `seen`: the folders'
    mtimes looked at already this run (a project's folder holds many sessions)."""
    return files_unmoved(head.get("files") or ()) and folders_unmoved(head.get("dirs") or (), seen)


def files_unmoved(stamps: Iterable[list[Any]]) -> bool:
    """Whether each file is as stamped ([path, size, mtime_ns]; -1: not there)."""
    return moved_files(stamps, 0) == []


def moved_files(stamps: Iterable[list[Any]], most: int) -> list[str] | None:
    """The files not as stamped, or None when more than `most` are."""
    moved: list[str] = []
    for path, size, mtime in stamps:
        try:
            st = os.stat(path)
        except OSError:
            if size == -1:
                continue
        else:
            if st.st_size == size and st.st_mtime_ns == mtime:
                continue
        if len(moved) >= most:
            return None
        moved.append(path)
    return moved


def folders_unmoved(stamps: Iterable[list[Any]], seen: dict[str, int] | None = None) -> bool:
    """Whether each folder's mtime is as stamped (a head's "dirs": [path, size, mtime_ns]).
    `seen`, if given, keeps each folder's mtime (-1: not there) for the next call."""
    for path, _size, mtime in stamps:
        now = seen.get(path) if seen is not None else None
        if now is None:
            try:
                now = os.stat(path).st_mtime_ns
            except OSError:
                now = -1
            if seen is not None:
                seen[path] = now
        if now != mtime:
            return False
    return True


def dirs_still(stamps: Any, seen: dict[str, int] | None = None) -> bool:
    """Whether none of these folders (`stamps_of(..., folders=True)`) moved since.
    `seen`, if given, keeps each folder's mtime for `folders_unmoved` (the same folders
    are often in both: each is looked at once)."""
    if not isinstance(stamps, list) or not stamps:
        return False
    try:
        for d, mtime, ctime in stamps:
            try:
                st = os.stat(d)
            except OSError:
                if seen is not None:
                    seen[d] = -1
                if mtime != -1:
                    return False
                continue
            if seen is not None:
                seen[d] = st.st_mtime_ns
            if st.st_mtime_ns != mtime or st.st_ctime_ns != ctime:
                return False
    except (TypeError, ValueError):  # not what stamps_of wrote: scan
        return False
    return True


def ident(path: str) -> list[int] | None:
    """A file's or folder's stamp: size, mtime, ctime (a chmod), inode (replaced); None
    when it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def came_files(scans: Any, known: set[str], most: int) -> dict[str, list[str]] | None:
    """Per folder of the scans' (`dirs_still`'s stamps) that moved, the files in it no
    stamp in `known` names: sessions that came since (a reader that knows the folder's
    files also sees what went). None when a folder that moved holds what only a scan
    can say (a folder no stamp names, a link, anything but a file), is gone, or more
    than `most` files came."""
    try:
        stamps = [(d, mtime, ctime) for s in scans for d, mtime, ctime in s]
    except (TypeError, ValueError):
        return None
    folders = {d for d, _m, _c in stamps}
    came: dict[str, list[str]] = {}
    n = 0
    for d, mtime, ctime in stamps:
        try:
            st = os.stat(d)
        except OSError:
            if mtime == -1:
                continue
            return None
        if st.st_mtime_ns == mtime and st.st_ctime_ns == ctime:
            continue
        got = _listing(d, folders, known)
        if got is None:
            return None
        came[d] = got[1]
        n += len(got[1])
        if n > most:
            return None
    return came


def explained(stamps: Any, known: set[str], read_at_ns: int) -> tuple[list[list[Any]], list[str]] | None:
    """A scan's stamps (`stamps_of(..., folders=True)`) taken again, and the files that
    came, when each of its folders that moved holds only what its last scan found:
    files `known` (a session reads them) or stamped, folders stamped, and files that
    came (for Source.came to place); nothing known or stamped went. None when only a
    scan can say what moved: a stamped file that moved, a new folder, a link, anything
    but a file, a folder that went. Each folder is stamped before it is listed: what
    comes after the listing moves it again."""
    try:
        paths = {p for p, _m, _c in stamps}
    except (TypeError, ValueError):
        return None
    fresh: list[list[Any]] = []
    came: list[str] = []
    held: dict[str, set[str]] | None = None
    for p, mtime, ctime in stamps:
        try:
            st = os.stat(p)
        except OSError:
            if mtime != -1:
                return None
            fresh.append([p, -1, -1])
            continue
        if st.st_mtime_ns == mtime and st.st_ctime_ns == ctime:
            fresh.append([p, mtime, ctime])
            continue
        if not S_ISDIR(st.st_mode):
            return None
        if held is None:
            known = known | paths
            held = {}
            for f in known:
                held.setdefault(os.path.dirname(f), set()).add(f)
        got = _listing(p, paths, known)
        if got is None:
            return None
        listed, new = got
        came.extend(new)
        if not held.get(p, set()) <= listed:
            return None  # (a session's file or a stamped folder went: the scan says what is left)
        settled = st.st_mtime_ns < read_at_ns - SETTLE_NS
        fresh.append([p, st.st_mtime_ns, st.st_ctime_ns] if settled else [p, -2, -2])
    return fresh, came


def _listing(folder: str, folders: set[str], known: set[str]) -> tuple[set[str], list[str]] | None:
    """(every entry of a folder that moved, its files not `known`); None when it holds
    what only a scan can say: a folder not in `folders`, a link, anything but a file."""
    listed: set[str] = set()
    new: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                listed.add(e.path)
                if e.is_symlink():
                    return None
                if e.is_dir(follow_symlinks=False):
                    if e.path not in folders:
                        return None
                elif not e.is_file(follow_symlinks=False):
                    return None
                elif e.path not in known:
                    new.append(e.path)
    except OSError:
        return None
    return listed, new
