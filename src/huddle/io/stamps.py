"""Stamps of files and folders (size, mtime, ctime): how huddle tells, without reading
a file, that it is what was read. The handle cache's heads and scan stamps and the
stored answers (`huddle.io.answers`) are both checked here, so both mean the same by
"unmoved". Standard library only: the fast paths import it before anything else.
"""

from __future__ import annotations

import os

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
        here = came.setdefault(d, [])
        try:
            with os.scandir(d) as entries:
                for e in entries:
                    if e.is_symlink():
                        return None
                    if e.is_dir(follow_symlinks=False):
                        if e.path not in folders:
                            return None
                    elif not e.is_file(follow_symlinks=False):
                        return None
                    elif e.path not in known:
                        n += 1
                        if n > most:
                            return None
                        here.append(e.path)
        except OSError:
            return None
    return came
