"""Stored answers: `huddle status --json` said again without reading anything, while
nothing it was worked out from has moved (`$HUDDLE_HOME/cache/status.bin`).

A one-shot board on which every session slept (its row settled, its files unmoved)
and no source was scanned is a function of what it looked at: the session files and
the folders a new session would move (the cache's heads and scan stamps), each
source's live signals (`Source.live_inputs`), the price file, the environment that
names the folders, and huddle's own code. `save` keeps the answer with all of those;
`load` gives it back only if every one is as it was, so it is what the full path
would say. A write to the board's handle cache drops it (`drop`): the rows the board is
built from may have changed.

`huddle usage --json` keeps its answer the same way (`usage.bin`), from a run of the
usage index that read no session: the sums of every session, stamped as the heads
are; a write to the index drops it.

Standard library only: `huddle status --json` looks here before importing anything.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
import zlib

from .boardfile import atomic_write
from .stamps import SETTLE_NS, came_files, dirs_still, folders_unmoved, ident, moved_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

FORMAT = "huddle-answer/5"  # (4: an index for stored.patching; 5: the answer as written, not marshalled)
# The file: MAGIC, the header's length (8 bytes, little-endian), the header (marshalled:
# the conditions' checksum and themselves, the answer's and the index's checksums and
# lengths), the index, the answer. The answer, most of the file, is written and said as
# it stands: never copied into or out of a marshalled whole.
MAGIC = (FORMAT + "\n").encode()
# What the environment can change: huddle's own settings, the XDG folders, HOME, and
# every variable an agent's folder is named by (the sources' `folder_env`, and any
# of theirs that starts with the agent's name).
ENV_PREFIXES: tuple[str, ...] = ("HUDDLE_", "XDG_", "CLAUDE", "CODEX", "VIBE", "GEMINI", "OPENCODE")
ENV_PREFIXES += ("COPILOT", "QWEN", "PI_CODING", "GSD_CODING", "KILO", "CLINE")


# moved session files beyond which a stale answer is not patched (stored.patching): none
# (the patch reads what the whole path would of the sessions that moved, and no more)
PATCHABLE = 1 << 30
STATUS = "status.bin"  # `huddle status --json`
USAGE = "usage.bin"  # `huddle usage --json` (huddle.usage.index)
STORED = {"status": STATUS, "usage": USAGE}
DEMOTED = ".stale"  # beside an answer: one no longer said, kept for what it hung on (`demote`)  # the operations said from a stored answer, and which


def answer_path(huddle_home: str, name: str = STATUS) -> str:
    return os.path.join(huddle_home, "cache", name)


def environment(env: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    named = set(names)
    return {k: v for k, v in env.items() if k == "HOME" or k in named or k.startswith(ENV_PREFIXES)}


def code() -> list[Any]:
    """Every file of huddle's package (a new version, or an edited checkout, is new
    code), and the import path's folders (a plugin installed or removed moves its folder)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (huddle/io/..)
    files: list[tuple[str, int, int]] = []
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            todo.append(e.path)
                    elif not e.name.endswith((".pyc", ".tmp")):
                        try:
                            st = e.stat()
                        except OSError:
                            continue
                        files.append((e.path, st.st_size, st.st_mtime_ns))
        except OSError:
            continue
    files.sort()
    # (not the first: the script's own folder, or the working folder under `python -m`)
    paths = [(p, ident(p)) for p in sys.path[1:] if p]
    return [files, paths]


def save(
    huddle_home: str,
    text: str | bytes,
    notes: list[str],
    conditions: dict[str, Any],
    started_ns: int,
    name: str = STATUS,
    index: Any = None,
) -> bool:
    """Keep `text` (and the notes said beside it) as the answer while `conditions`
    hold. Not kept if an input moved around the run (from `started_ns` on): what was
    read may not be what its stamp says. `index`: what stored.patching needs to work
    the answer out again when only some sessions' files moved (decoded only then)."""
    inputs = conditions.get("inputs") or []
    for _path, st in inputs:
        if st is not None and st[1] >= started_ns - SETTLE_NS:  # (mtime: as the heads are stamped)
            drop(huddle_home, name)
            return False
    data = {**conditions, "notes": list(notes), "code": code()}
    data["saved_ns"] = time.time_ns()  # (a server whose whole read began after it holds what it said: io.served)
    # the newest files first: the one most likely to have moved next time is looked at
    # before the others (a miss costs a stat or two, not the home's)
    data["files"] = sorted(conditions.get("files") or (), key=_newest_first)
    data["env"] = environment(os.environ, conditions.get("names") or ())
    try:
        payload = marshal.dumps(data)
        said = text if isinstance(text, bytes) else text.encode()  # (the answer as written: no parse to say it)
        part = marshal.dumps(index)
        header = marshal.dumps((zlib.crc32(payload), payload, zlib.crc32(said), len(said), zlib.crc32(part), len(part)))
        parts = [MAGIC, len(header).to_bytes(8, "little"), header, part, said]
        atomic_write(answer_path(huddle_home, name), parts)
    except (OSError, ValueError):  # (ValueError: something marshal cannot keep)
        return False
    return True


def _newest_first(stamp: list[Any]) -> Any:
    mtime = stamp[2] if len(stamp) > 2 else None
    return -mtime if isinstance(mtime, int) else 0


class Stale:
    """A stored answer some session files moved under (and nothing else it hangs on):
    its conditions, its text, its index, and those files. `came`, when folders its
    sources' scans looked at moved: per folder, the files that came there, which only a
    reader that knows the folder's files can say, and what went from it (a running
    server: io.served; stored.patching, knowing every stored session's files from the
    index, places those a source places without its scan, and leaves the rest whole)."""

    __slots__ = ("_unchecked", "came", "data", "index", "moved", "said")

    def __init__(
        self,
        data: dict[str, Any],
        said: memoryview,
        index: Any,
        moved: list[str],
        came: dict[str, list[str]] | None = None,
        unchecked: _Rest | None = None,
    ) -> None:
        self.data, self.said, self.index, self.moved = data, said, index, moved
        self.came = came
        # (the text and the index, not yet read: a server asked needs neither; `usable`
        # reads and checks them before anything is patched from them)
        self._unchecked = unchecked

    def usable(self, say: Callable[[str], None]) -> bool:
        """Whether its text and index are as saved and it has an index (decoded now if it
        was not); a damaged one is said (`say`, one line)."""
        if self._unchecked is not None:
            rest = self._unchecked
            self._unchecked = None
            try:
                part, self.said = rest.read()
                if zlib.crc32(self.said) != rest.said_crc or zlib.crc32(part) != rest.index_crc:
                    raise ValueError("damaged")
                self.index = marshal.loads(part)
            except (OSError, ValueError, TypeError, EOFError):
                say(f"{rest.path}: damaged; worked out again")
                return False
        return self.index is not None


def load(huddle_home: str, name: str = STATUS) -> tuple[tuple[memoryview, list[str]] | None, str | None]:
    """(the stored answer, UTF-8, and its notes, if nothing it was worked out from
    moved; one line if the file was there but not to be trusted: torn, damaged,
    another version's)."""
    hit, _stale, problem = look(huddle_home, name)
    return hit, problem


def look(
    huddle_home: str, name: str = STATUS, most: int = 0, came: bool = False
) -> tuple[tuple[memoryview, list[str]] | None, Stale | None, str | None]:
    """(the stored answer and its notes, if nothing it was worked out from moved; else,
    if only session files did, at most `most` of them, and it kept an index: the answer
    as `Stale` (`came`: also when files came in its scans' folders, named in
    `Stale.came`); one line if the file was there but not to be trusted). What it hangs on
    is checked before the answer's own checksum (the answer is most of the file; on a
    miss it is never looked at). The answer is a view of the file as read (bytes-like)."""
    path = answer_path(huddle_home, name)
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed by the `with f` below: a missing file is its own case)
    except OSError:
        return None, (_demoted(huddle_home, name, most) if came else None), None
    with f:
        try:
            head = f.read(len(MAGIC) + 8)
            if not head.startswith(MAGIC):
                raw = head + f.read()  # (an older answer says which it is)
                return None, None, f"{path}: {'from another version' if _older(raw) else 'damaged'}; worked out again"
            (crc, payload, said_crc, said_len, index_crc, index_len) = _header(head, f)
            if zlib.crc32(payload) != crc:
                raise ValueError("torn")
            data = marshal.loads(payload)
            since = _moved_since(data, most, came)
            if since is None:
                return None, None, None
            moved, news = since
            notes = data["notes"]
            if came and (moved or news is not None or data.get("volatile")):  # (a server's question)
                # (its index and text not read yet: a server asked needs neither; `usable` reads them)
                rest = _Rest(path, f.tell(), index_len, said_len, said_crc, index_crc)
                return None, Stale(data, memoryview(b""), None, moved, news, rest), None
            part, said = _rest(f, index_len, said_len)
        except OSError:
            return None, None, f"{path}: unreadable; worked out again"
        except (KeyError, TypeError, ValueError, EOFError):  # not what save wrote
            return None, None, f"{path}: damaged; worked out again"
    try:
        if not isinstance(notes, list) or zlib.crc32(said) != said_crc:
            raise ValueError("shape")
        if zlib.crc32(part) != index_crc:
            raise ValueError("index")
        if data.get("volatile") and not most:
            return None, None, None  # (rows time can move: never said as they stand)
        if moved or news is not None or data.get("volatile"):
            index = marshal.loads(part)
            return None, (Stale(data, said, index, moved, news) if index is not None else None), None
    except (KeyError, TypeError, ValueError, EOFError):  # not what save wrote
        return None, None, f"{path}: damaged; worked out again"
    return (said, [str(n) for n in notes]), None, None


def _header(head: bytes, f: Any) -> tuple[Any, ...]:
    """The header `save` wrote (after MAGIC and its length, `head`), read from `f`."""
    n = int.from_bytes(head[len(MAGIC) :], "little")
    if n > os.fstat(f.fileno()).st_size:  # (a damaged length asks for no more than is there)
        raise ValueError("torn")
    raw = f.read(n)
    if len(raw) != n:
        raise ValueError("torn")
    header = marshal.loads(raw)
    if not isinstance(header, tuple) or len(header) != 6:
        raise ValueError("header")
    return header


def _rest(f: Any, index_len: int, said_len: int) -> tuple[memoryview, memoryview]:
    """(the index, the answer) read on from the header (`_header`)."""
    view = memoryview(f.read())
    if len(view) != index_len + said_len:
        raise ValueError("torn")
    return view[:index_len], view[index_len:]


class _Rest:
    """Where a stored answer's index and text stand in its file, read when a Stale needs
    them (`Stale.usable`): the file as it is then must be the one the header came from
    (the checksums say so)."""

    __slots__ = ("at", "index_crc", "index_len", "path", "said_crc", "said_len")

    def __init__(self, path: str, at: int, index_len: int, said_len: int, said_crc: int, index_crc: int) -> None:
        self.path, self.at, self.index_len, self.said_len = path, at, index_len, said_len
        self.said_crc, self.index_crc = said_crc, index_crc

    def read(self) -> tuple[memoryview, memoryview]:
        with open(self.path, "rb") as f:
            f.seek(self.at)
            return _rest(f, self.index_len, self.said_len)


def _moved_since(
    data: dict[str, Any], most: int, came: bool = False
) -> tuple[list[Any], dict[str, list[str]] | None] | None:
    """(the session files that moved since the answer was worked out, and, if `came`
    and scanned folders moved, per such folder the files that came in it (else None);
    at most `most` in all), if nothing else it hangs on did: the environment, the inputs,
    the scanned folders (but for files that came in them, when `came`), the code (None:
    something did)."""
    if data["env"] != environment(os.environ, data["names"]):
        return None
    if any(ident(p) != st for p, st in data["inputs"]):
        return None
    moved = moved_files(data["files"], most)
    if moved is None:
        return None
    seen: dict[str, int] = {}
    news: dict[str, list[str]] | None = None
    if not all(dirs_still(s, seen) for s in data["scans"]):
        news = came_files(data["scans"], {f[0] for f in data["files"]}, most - len(moved)) if came else None
        if news is None:
            return None
    if not folders_unmoved(data["folders"], seen):
        return None
    return (moved, news) if data["code"] == code() else None


def _parts(raw: bytes) -> tuple[tuple[Any, ...], memoryview, memoryview]:
    """(the header, the index, the answer) of a file as `save` writes it; raises
    ValueError (or TypeError, EOFError) on anything else."""
    if not raw.startswith(MAGIC):
        raise ValueError("magic")
    view = memoryview(raw)
    at = len(MAGIC) + 8
    n = int.from_bytes(view[len(MAGIC) : at], "little")
    header = marshal.loads(view[at : at + n])
    if not isinstance(header, tuple) or len(header) != 6:
        raise ValueError("header")
    index_len = header[5]
    return header, view[at + n : at + n + index_len], view[at + n + index_len :]


def kept_conditions(huddle_home: str, name: str = STATUS) -> dict[str, Any] | None:
    """What a stored answer hangs on, as saved (None: no such answer); for tools and
    tests, which look inside."""
    try:
        with open(answer_path(huddle_home, name), "rb") as f:
            header, _part, _said = _parts(f.read())
        data = marshal.loads(header[1])
    except (OSError, ValueError, TypeError, EOFError):
        return None
    return data if isinstance(data, dict) else None


def _older(raw: bytes) -> bool:
    """Whether `raw` is an answer an earlier huddle wrote (a marshalled tuple, its
    format first)."""
    if raw.startswith(b"huddle-answer/"):
        return True
    try:
        kept = marshal.loads(raw)
    except (ValueError, EOFError, TypeError):
        return False
    return isinstance(kept, tuple) and bool(kept) and str(kept[0]).startswith("huddle-answer/")


def drop(huddle_home: str, name: str = STATUS) -> None:
    try:
        os.unlink(answer_path(huddle_home, name))
    except OSError:
        pass


def demote(huddle_home: str, name: str = STATUS) -> None:
    """The answer never said again, but kept as a record of what it hung on (`.stale`
    beside it): the cache it was worked out with was written (a server's round), and
    what moved on disk since it was saved is still what a running server must read of
    a command's question (`look`'s `came`)."""
    path = answer_path(huddle_home, name)
    try:
        os.replace(path, path + DEMOTED)
    except OSError:
        pass


def _demoted(huddle_home: str, name: str, most: int) -> Stale | None:
    """A demoted answer (`demote`) as a Stale for a server's question only: its files
    that moved and came (never said, never patched: `came` is always given)."""
    try:
        with open(answer_path(huddle_home, name) + DEMOTED, "rb") as f:
            head = f.read(len(MAGIC) + 8)
            if not head.startswith(MAGIC):
                return None
            crc, payload, *_ = _header(head, f)  # (its index and text: never read)
        if zlib.crc32(payload) != crc:
            return None
        data = marshal.loads(payload)
        since = _moved_since(data, most, came=True)
    except (OSError, KeyError, TypeError, ValueError, EOFError):
        return None
    return Stale(data, memoryview(b""), None, since[0], since[1] or {}) if since is not None else None
