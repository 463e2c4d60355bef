"""What huddle writes is the user's alone: folders 0700, files 0600, whatever the umask.

Caches, stored answers, the usage and search indexes, a hosted run's log and trace, the
hub's push state, an export written to a file: each holds conversation text or what
was derived from it. A umask of 000 (or 002 on a shared machine) would make all of it
readable by others, so modes are set, not asked of the umask: a folder huddle makes
(and each parent it makes on the way) is chmod'ed 0700, a file it creates is opened
0600 and fchmod'ed so. An SQLite database is created 0600 before SQLite opens it:
SQLite gives its journal, WAL and shared-memory files the database file's own mode.
Folders and files that were there before are left as their owner set them.
Standard library only.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing costs the status line ~5 ms (it imports re): read by mypy alone
if TYPE_CHECKING:
    from typing import IO, Any

FOLDER = 0o700
FILE = 0o600


def folder(path: str) -> str:
    """`path` as a folder, made (with its missing parents) 0700. A file in the way is
    an OSError ("Not a directory"), as with os.makedirs."""
    path = os.path.abspath(path)
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for p in reversed(missing):
        try:
            os.mkdir(p, FOLDER)
        except FileExistsError:
            if not os.path.isdir(p):
                raise
            continue  # made by another process meanwhile: its mode is its maker's
        os.chmod(p, FOLDER)  # (mkdir's mode passes through the umask)
    if not os.path.isdir(path):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return path


def create(path: str, flags: int = os.O_WRONLY | os.O_TRUNC) -> int:
    """A descriptor of `path` opened with `flags`; created 0600 when it is new (its folder
    made 0700). A file that was there keeps its mode."""
    folder(os.path.dirname(os.path.abspath(path)))
    flags |= os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE)
    except FileExistsError:
        return os.open(path, flags)
    try:
        os.fchmod(fd, FILE)  # (open's mode passes through the umask)
    except OSError:
        os.close(fd)
        raise
    return fd


def opened(path: str, mode: str = "wb") -> IO[Any]:
    """`open(path, mode)` for writing ("wb", "ab", "w", "a"), created 0600 (a `with`
    closes it, as it would `open`'s)."""
    flags = os.O_WRONLY | (os.O_APPEND if mode.startswith("a") else os.O_TRUNC)
    fd = create(path, flags)
    try:
        return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8")
    except BaseException:
        os.close(fd)
        raise


def database(path: str) -> str:
    """`path` ready for sqlite3.connect: its folder 0700, the file created 0600 if new
    (SQLite then makes its -wal, -shm and -journal files with the same mode)."""
    if not os.path.exists(path):
        os.close(create(path, os.O_WRONLY))
    return path
