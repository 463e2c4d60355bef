"""Linux's inotify read blocking (ctypes and the standard library only): the agents'
folders watched with no wake-up at all while nothing moves. watchfiles' loop looks
every 10 ms whether its notify thread saw something (a hundred wake-ups a second on an
idle server, a third of its CPU); here the thread sleeps in `poll` until the kernel has
an event or `interrupt` is called. live.notices falls back to watchfiles where this is
not there (another system, no inotify, the watches exhausted).

Like watchfiles it is a hint only: a folder that came is watched from when it is seen
(what was already in it is named then), and a queue the kernel overflowed names
nothing (`read` returns None: everything may have moved, read it all).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
import threading
from collections.abc import Iterable

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
IN_EXCL_UNLINK = 0x4000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

WATCHED = IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_HOW = WATCHED | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK  # (a link is not followed: as watchfiles, as the scans)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then `len` bytes of NUL-padded name)
_NO_ROOM = (errno.ENOSPC, errno.ENOMEM)  # (the user's watches or the kernel's memory: watch another way)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return libc


class Inotify:
    """Every folder under `roots` watched (links not followed). Raises OSError when the
    kernel cannot watch them all (no inotify, no room for the watches)."""

    def __init__(self, roots: Iterable[str]) -> None:
        self._libc = _libc()  # (AttributeError on a libc with no inotify: the caller's fallback)
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.fd = fd
        self._woken, self._wake = os.pipe()
        self._open = threading.Lock()  # (held to write to the pipe or to close it: a closed fd's number is reused)
        self.closed = False
        self.folders: dict[int, str] = {}
        try:
            for root in roots:
                self._watch_tree(root, [])
        except OSError:
            self.close()
            raise

    def _watch(self, folder: str) -> bool:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), _HOW)
        if wd < 0:
            err = ctypes.get_errno()
            if err in _NO_ROOM:
                raise OSError(err, f"inotify: no room to watch {folder}")
            return False  # (gone already, not a folder, not ours to read: nothing to watch)
        self.folders[wd] = folder
        return True

    def _watch_tree(self, top: str, found: list[str]) -> None:
        """`top` and each folder under it watched; what is in them already named in
        `found` (a folder that came may hold files written before its watch was in place)."""
        todo = [top]
        while todo:
            folder = todo.pop()
            if not self._watch(folder):
                continue
            try:
                with os.scandir(folder) as entries:
                    for e in entries:
                        found.append(e.path)
                        if e.is_dir(follow_symlinks=False):
                            todo.append(e.path)
            except OSError:
                continue

    def read(self, timeout: float | None = None) -> set[str] | None:
        """The paths named by what the kernel says moved, waiting for it up to `timeout`
        seconds (None: until something moves or `interrupt`); empty on a timeout or an
        interrupt; None when the kernel's queue overflowed (what moved is unknown)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(self._woken, select.POLLIN)
        ready = {fd for fd, _ in poller.poll(None if timeout is None else int(timeout * 1000))}
        if self._woken in ready:
            os.read(self._woken, 512)
        if self.fd not in ready:
            return set()
        named: set[str] = set()
        while True:
            try:
                raw = os.read(self.fd, 256 * 1024)
            except BlockingIOError:
                return named
            except InterruptedError:
                continue
            if not self._named(raw, named):
                return None

    def _named(self, raw: bytes, named: set[str]) -> bool:
        """Each event in `raw` named in `named`, folders that came watched; False on an
        overflow."""
        at = 0
        while at + _EVENT.size <= len(raw):
            wd, mask, _cookie, size = _EVENT.unpack_from(raw, at)
            name = raw[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
            at += _EVENT.size + size
            if mask & IN_Q_OVERFLOW:
                return False
            folder = self.folders.get(wd)
            if mask & IN_IGNORED:
                self.folders.pop(wd, None)  # (the folder went, or its watch did)
                continue
            if folder is None:
                continue
            path = os.path.join(folder, os.fsdecode(name)) if name else folder
            named.add(path)
            if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                found: list[str] = []
                try:
                    self._watch_tree(path, found)
                except OSError:
                    return False  # (no room for its watches: what it holds is the poll's)
                named.update(found)
        return True

    def interrupt(self) -> None:
        """A `read` waiting returns now (empty)."""
        with self._open:
            if not self.closed:
                try:
                    os.write(self._wake, b"!")
                except OSError:  # (a full pipe: a read is due already)
                    pass

    def close(self) -> None:
        with self._open:
            if self.closed:
                return
            self.closed = True
            for fd in (self.fd, self._woken, self._wake):
                os.close(fd)

    def __enter__(self) -> Inotify:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
