"""The board file the status line reads: `$HUDDLE_HOME/cache/board.bin`.

The last board with every file's size and mtime, for the status line, which must
stay on the standard library and cannot load the handle cache. It is in marshal
form: built into the interpreter, so reading it costs no import and a fraction of
parsing JSON on a path that runs on every message of every session.

Three parts, one after the other: a head the status line reads on every call (the
rows something can still move, the most recent others, the count of all); then
every row, each kept apart in its own marshal bytes by its key ("source:id"); then
per row what the head is chosen by (settled or not, its newest file's mtime). What
the status line reads does not grow with a user's history: two years of idle
sessions are in the second part, read only when a live process names one of them
(`read_board(whole=True)`, `read_row`). A board patched after a few sessions moved
(stored.patching) rewrites their rows and takes every other one as its bytes stand,
decoding none (`read_kept`, `write_kept`).

This module is on the status line's path: standard library imports only.
"""

from __future__ import annotations

import marshal
import os
import time

from . import private
from .safefile import open_regular

TYPE_CHECKING = False  # typing itself costs the status line ~10 ms (it imports re and enum)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, Protocol

    class HasFiles(Protocol):
        """A session's handle, as far as the board file needs it."""

        def files(self) -> list[str]: ...


BOARD_FORMAT = "huddle-board/3"  # 2: a head, then every row; 3: each row's bytes apart, an index
SETTLED = ("idle", "ended")  # a row only a move of its files changes (huddle.model.attention)
RECENT = 64  # rows of settled sessions the head keeps besides the lively ones, the newest first


def board_path(huddle_home: str) -> str:
    return os.path.join(huddle_home, "cache", "board.bin")


def read_board(path: str, whole: bool = True) -> dict[str, Any] | None:
    """The board (every row); or, not `whole`, its head: the rows that are not settled
    and the newest others, with `count` the number of all. None if missing, foreign
    or corrupt."""
    got = _read(path, 2 if whole else 1)
    if got is None:
        return None
    if whole:
        try:
            return {**got[0], "sessions": [marshal.loads(b) for b in got[1].values()]}
        except (ValueError, EOFError, TypeError):
            return None
    head: dict[str, Any] = got[0]
    return head


def read_row(path: str, key: str) -> dict[str, Any] | None:
    """One row of the board file by its key ("source:id"), the others left as bytes."""
    got = _read(path, 2)
    blob = got[1].get(key) if got is not None else None
    try:
        row = marshal.loads(blob) if isinstance(blob, bytes) else None
    except (ValueError, EOFError, TypeError):
        return None
    return row if isinstance(row, dict) else None


def read_kept(path: str) -> tuple[dict[str, Any], dict[str, bytes], dict[str, list[Any]]] | None:
    """(the head, every row's bytes by key in board order, each row's index entry:
    [settled, newest mtime]), no row decoded: what `write_kept` takes."""
    got = _read(path, 3)
    return None if got is None else (got[0], got[1], got[2])


def _read(path: str, parts: int) -> list[Any] | None:
    """The head and the next `parts - 1` parts of a board file of this format, each of
    the shape it must have; None if missing, foreign or corrupt."""
    try:
        with open_regular(path, follow=True) as f:
            fmt, head = marshal.load(f)
            if fmt != BOARD_FORMAT or not isinstance(head, dict) or not isinstance(head.get("sessions"), list):
                return None
            out: list[Any] = [head]
            for _ in range(parts - 1):
                part = marshal.load(f)
                if not isinstance(part, dict):
                    return None
                out.append(part)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return out


def atomic_write(path: str, data: bytes | list[bytes]) -> None:
    """`data` (or its parts, one after the other: nothing joined) as the file at `path`,
    whole or not at all."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with private.opened(tmp, "wb") as f:  # (its folder made too)
        for part in [data] if isinstance(data, bytes) else data:
            f.write(part)
    os.replace(tmp, path)


def dirs_moved(stamps: Iterable[list[Any]]) -> bool:
    """Whether any folder's mtime moved since it was stamped ([path, mtime_ns or None])."""
    for path, mtime in stamps:
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            if mtime is not None:
                return True
    return False


def files_moved(stamps: Iterable[list[Any]]) -> bool:
    """Whether any file changed size or mtime, or vanished, since it was stamped
    ([path, size, mtime_ns])."""
    for path, size, mtime in stamps:
        try:
            st = os.stat(path)
        except OSError:
            return True
        if st.st_size != size or st.st_mtime_ns != mtime:
            return True
    return False


def file_stamps(paths: Iterable[str]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        out.append([p, st.st_size, st.st_mtime_ns])
    return out


def _stamps_of(h: HasFiles) -> list[list[Any]]:
    stamps = getattr(h, "stamps", None)  # stamped already (a session huddle's cache left unread)
    return stamps if stamps is not None else file_stamps(h.files())


def write_board(
    huddle_home: str,
    board: dict[str, Any],
    handles: Mapping[str, HasFiles],
    watch_dirs: list[str],
    folders: Mapping[str, str] | None = None,
) -> None:
    """The board for the status line, with what it needs to tell that it is stale, and
    the agents' folders it was read from (the status line overlays Claude Code's live
    registry from the same folder, resolved once, by the sources)."""
    rows = [board_row(s, handles.get(f"{s['source']}:{s['id']}")) for s in board.get("sessions", [])]
    write_rows(huddle_home, rows, watch_dirs, folders)


def board_row(s: Mapping[str, Any], h: HasFiles | None) -> dict[str, Any]:
    """One board row as the board file keeps it, with its session's files stamped."""
    return {
        "id": s["id"],
        "source": s["source"],
        "title": s.get("title", ""),
        "project": s.get("project", ""),
        "state": s.get("state"),
        "state_since": s.get("state_since"),
        "waiting_for": s.get("waiting_for"),
        "background": bool(s.get("background")),
        "tokens": s.get("tokens", 0),
        "cost_usd": (s.get("cost") or {}).get("usd"),
        "files": _stamps_of(h) if h is not None else [],
        "next_change": _seconds(s.get("next_change")),
    }


def _seconds(when: object) -> float | None:
    """A row's ISO time (huddle.model.times.iso's form) as unix seconds, so the status
    line compares it with the clock without parsing a date."""
    if not isinstance(when, str):
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def write_rows(
    huddle_home: str, rows: list[dict[str, Any]], watch_dirs: list[str], folders: Mapping[str, str] | None = None
) -> None:
    """The board file of these rows (`board_row`), the watched folders stamped now."""
    keyed: dict[str, dict[str, Any] | None] = {key_of(r): r for r in rows}
    index = {key_of(r): entry_of(r) for r in rows}
    write_kept(huddle_home, keyed, {}, index, watch_dirs, folders)


def write_kept(
    huddle_home: str,
    rows: Mapping[str, dict[str, Any] | None],
    kept: Mapping[str, bytes],
    index: Mapping[str, list[Any]],
    watch_dirs: list[str],
    folders: Mapping[str, str] | None = None,
) -> None:
    """The board file of these rows, in their order (key -> the row, or None: the row
    as `kept` holds its bytes, decoded only if the head shows it), each with its
    `index` entry (`entry_of`). The watched folders are stamped now."""
    dirs: list[list[Any]] = []
    for d in watch_dirs:
        try:
            dirs.append([d, os.stat(d).st_mtime_ns])
        except OSError:
            dirs.append([d, None])
    head = {"format": 1, "written_at": time.time(), "dirs": dirs, "folders": dict(folders or {}), "count": len(rows)}
    try:
        head["sessions"] = [r if (r := rows[k]) is not None else marshal.loads(kept[k]) for k in head_keys(index)]
        blobs = {k: marshal.dumps(r) if r is not None else kept[k] for k, r in rows.items()}
        parts = [marshal.dumps((BOARD_FORMAT, head)), marshal.dumps(blobs), marshal.dumps(dict(index))]
        atomic_write(board_path(huddle_home), parts)
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        pass


def key_of(row: Mapping[str, Any]) -> str:
    return f"{row.get('source')}:{row.get('id')}"


def entry_of(row: Mapping[str, Any]) -> list[Any]:
    """What the head is chosen by, of one row: [settled, its newest file's mtime]."""
    return [row.get("state") in SETTLED, max((f[2] for f in row.get("files") or ()), default=0)]


def head_keys(index: Mapping[str, list[Any]]) -> list[str]:
    """The rows the status line reads every time, by key: every one that is not settled
    (something other than a move of its files can change it, or it is under way), and the
    RECENT newest settled ones (a file moved lately: the next move is likeliest there)."""
    lively = [k for k, e in index.items() if not e[0]]
    rest = [k for k, e in index.items() if e[0]]
    rest.sort(key=lambda k: index[k][1], reverse=True)
    return lively + rest[:RECENT]
