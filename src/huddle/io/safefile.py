"""Opening a file another program owns, safely: the one way huddle opens agent files.

An agent folder can hold anything: a FIFO named like a transcript (a plain `open()`
blocks until someone writes to it, for ever, with the core's lock held), a device,
a socket, a symlink to the user's other files, a side file grown to gigabytes.
Here:
- `open_regular` opens with O_NONBLOCK (a FIFO or device cannot block the open),
  then checks with fstat that what it opened is a regular file; a symlink is
  followed only while it stays in the file's own folder (or a given one), so no
  reader shows text from outside the agent's folders;
- `read_small` reads a side file whole, up to a cap (past it: `TooBig`);
- `read_json` is `read_small` + `json.loads` for the small JSON files agents
  rewrite in place: retried once when cut, never raising.

Standard library only: the status line uses it too. Refusals are OSErrors whose
text is a short reason ("a FIFO, not a regular file"), so callers that already
turn an OSError into one line say the right thing.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing costs the status line ~10 ms
if TYPE_CHECKING:
    from typing import BinaryIO

SIDE_MAX = 4 << 20  # a side file (registry entry, meta, lock, CURRENT, config) past 4 MB is not one
DOC_MAX = 256 << 20  # a document that can only be parsed whole (a Vibe chunk or state file)

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegular(OSError):
    """Not a regular file (a FIFO, a device, a socket, a folder)."""


class TooBig(OSError):
    """A small file that is not small (`cap`: the size it was read with)."""

    cap: int | None = None


class Escapes(OSError):
    """A symlink that leads out of the folder it was found in."""


def kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def inside(path: str, folder: str) -> bool:
    """Whether `path`, symlinks resolved, lies in `folder` (resolved too)."""
    root = os.path.realpath(folder).rstrip(os.sep) + os.sep
    return (os.path.realpath(path) + os.sep).startswith(root)


def open_fd(path: str, within: str | None = None, follow: bool = False) -> int:
    """A descriptor on `path`, which must be a regular file. A symlink (the file
    itself) is followed only while it stays in the file's own folder, or in `within`
    when given; `follow` follows any (a user's own config linked from elsewhere).
    Raises OSError (FileNotFoundError, PermissionError, NotRegular, Escapes...)."""
    if follow:
        fd = os.open(path, _OPEN_FLAGS)
    else:
        try:
            fd = os.open(path, _OPEN_FLAGS | os.O_NOFOLLOW)  # no symlink: nothing to resolve
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            if not inside(path, within if within is not None else (os.path.dirname(path) or ".")):
                raise Escapes(errno.EACCES, "a symlink out of the agent's folder, not followed", path) from None
            fd = os.open(path, _OPEN_FLAGS)  # a loop of symlinks fails here, with its own reason
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, f"{kind_of(st.st_mode)}, not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def regular(path: str) -> None:
    """Raises NotRegular when `path` (symlinks followed) is there but is no regular
    file: for a file another library opens by name (SQLite would block on a FIFO)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegular(errno.EINVAL, f"{kind_of(st.st_mode)}, not a regular file", path)


def open_regular(path: str, within: str | None = None, follow: bool = False) -> BinaryIO:
    """`open(path, "rb")` for a file huddle does not own: never blocks, regular files only."""
    return os.fdopen(open_fd(path, within, follow), "rb")


def read_small(path: str, cap: int = SIDE_MAX, within: str | None = None, follow: bool = False) -> bytes:
    """A small file's bytes; `TooBig` past `cap` (its bytes are not kept)."""
    with open_regular(path, within, follow) as f:
        data: bytes = f.read(cap + 1)
    if len(data) > cap:
        exc = TooBig(errno.EFBIG, f"over {cap:,} bytes, not read", path)
        exc.cap = cap  # (remembered with it: the file is said while it stays past it)
        raise exc
    return data


def read_json(path: str, cap: int = SIDE_MAX, within: str | None = None) -> object | None:
    """A small JSON file that may be rewritten in place: read, re-read once if it does
    not parse; None when it cannot be had (missing, not a regular file, too big, not
    JSON, nested too deep). A file that cannot be read at all is remembered (below)."""
    import json  # here, not at the top: the status line imports this module and not json

    for attempt in range(2):
        try:
            val: object = json.loads(read_small(path, cap, within))
        except FileNotFoundError:
            forget(path)
            return None
        except OSError as exc:
            if attempt or isinstance(exc, (NotRegular, TooBig, Escapes)):
                remember(path, exc, cap)
                return None  # re-reading will not help
            continue
        except (ValueError, RecursionError):
            continue  # half-written, or not JSON: the caller's next round
        forget(path)
        return val
    return None


# -- what could not be read, until it can -----------------------------------------------
#
# A side file or folder that cannot be read is skipped where it is met (a session must
# not fail for a registry entry, a board for a folder). So that it is still said, the
# place that skips it remembers it here, and the core lists what is remembered under its
# agent folders as notes, checking each again on every refresh: a note goes when its
# cause does, whether or not anything else changed. Keyed by path, so the several cores
# a process may hold (tests, the demo) each see only their own folders.

_unreadable: dict[str, tuple[str, int | None]] = {}  # path -> (why, the size cap it was read with)


def remember(path: str, exc: OSError, cap: int | None = None) -> None:
    """`path` could not be read (a missing file is no problem and is forgotten)."""
    if isinstance(exc, FileNotFoundError):
        _unreadable.pop(path, None)
        return
    if isinstance(exc, PermissionError):  # a folder that cannot be entered: it is the one to name
        up = os.path.dirname(path)
        while up and up != os.path.dirname(up) and not os.access(up, os.X_OK):
            path, up = up, os.path.dirname(up)
    # a size cap is what a re-check holds the file to (without one it found it readable, and forgot it)
    cap = (exc.cap if cap is None else cap) if isinstance(exc, TooBig) else None
    _unreadable[path] = (exc.strerror or str(exc), cap)


def forget(path: str) -> None:
    _unreadable.pop(path, None)


def stamp(path: str) -> tuple[int, int, int, int] | None:
    """What says a side file changed: (mtime, ctime, size, inode). ctime moves with a
    chmod too, so a file made readable again is read again. None when it is missing, or
    cannot even be looked at (a symlink loop, a folder it is in cannot be entered:
    remembered)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        remember(path, exc)
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


def listdir(path: str) -> list[os.DirEntry[str]]:
    """A folder's entries; [] when it cannot be listed (remembered unless it is missing)."""
    try:
        with os.scandir(path) as it:
            out = list(it)
    except OSError as exc:
        remember(path, exc)
        return []
    forget(path)
    return out


def plain_file(entry: os.DirEntry[str]) -> bool:
    """Whether a listed entry is a file to read: a regular file, or a symlink to one in
    the same folder. Anything else named like a session file is remembered (a FIFO, a
    symlink out, a loop), so the board says it was skipped."""
    try:
        if entry.is_file(follow_symlinks=False):
            return True
        if entry.is_dir(follow_symlinks=False):
            return False
        os.close(open_fd(entry.path))
    except OSError as exc:
        remember(entry.path, exc)
        return False
    return True


def plain_path(path: str) -> bool:
    """`plain_file` for a path: a regular file, or a symlink to one in the same folder;
    anything else but a folder or nothing is remembered."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            return True
        if stat.S_ISDIR(st.st_mode):
            return False
        os.close(open_fd(path))
    except FileNotFoundError:
        return False
    except OSError as exc:
        remember(path, exc)
        return False
    return True


def _still_unreadable(path: str, cap: int | None) -> str | None:
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(path):
                return None
        fd = open_fd(path)
        size = os.fstat(fd).st_size
        os.close(fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    return f"over {cap:,} bytes, not read" if cap is not None and size > cap else None


def unreadable(roots: list[str]) -> list[str]:
    """One line per remembered file or folder under `roots` that still cannot be read;
    the others are forgotten."""
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots if r)
    out: list[str] = []
    said: list[str] = []
    for path in sorted(p for p in list(_unreadable) if (p + os.sep).startswith(prefixes)):
        cap = _unreadable.get(path, ("", None))[1]
        why = _still_unreadable(path, cap)
        if why is None:
            forget(path)
            continue
        _unreadable[path] = (why, cap)
        if any(path.startswith(folder + os.sep) for folder in said):
            continue  # inside a folder already said: one line for the one problem
        said.append(path)
        out.append(f"{path}: {why} (skipped)")
    return out
