"""The board file the status line reads: `$HUDDLE_HOME/cache/board.bin`.

The last board with every file's size and mtime, for the status line, which must
stay on the standard library and cannot load the handle cache. It is in marshal
form: built into the interpreter, so reading it costs no import and a fraction of
parsing JSON on a path that runs on every message of every session.

Two parts, one after the other: a head the status line reads on every call (the
rows something can still move, the most recent others, the count of all), then
every row. What the status line reads does not grow with a user's history: two
years of idle sessions are in the second part, read only when a live process
names one of them (`read_board(whole=True)`).

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


BOARD_FORMAT = "huddle-board/2"  # 2: a head, then every row
SETTLED = ("idle", "ended")  # a row only a move of its files changes (huddle.model.attention)
RECENT = 64  # rows of settled sessions the head keeps besides the lively ones, the newest first


def board_path(huddle_home: str) -> str:
    return os.path.join(huddle_home, "cache", "board.bin")


def read_board(path: str, whole: bool = True) -> dict[str, Any] | None:
    """The board (every row); or, not `whole`, its head: the rows that are not settled
    and the newest others, with `count` the number of all. None if missing, foreign
    or corrupt."""
    try:
        with open_regular(path, follow=True) as f:
            fmt, data = marshal.load(f)
            if whole and fmt == BOARD_FORMAT and isinstance(data, dict):
                data = {**data, "sessions": marshal.load(f)}
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if fmt != BOARD_FORMAT or not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
        return None
    return data


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
    dirs: list[list[Any]] = []
    for d in watch_dirs:
        try:
            dirs.append([d, os.stat(d).st_mtime_ns])
        except OSError:
            dirs.append([d, None])
    head = {"format": 1, "written_at": time.time(), "dirs": dirs, "folders": dict(folders or {}), "count": len(rows)}
    head["sessions"] = head_rows(rows)
    try:
        atomic_write(board_path(huddle_home), [marshal.dumps((BOARD_FORMAT, head)), marshal.dumps(rows)])
    except (OSError, ValueError):
        pass


def head_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the status line reads every time: every one that is not settled (something
    other than a move of its files can change it, or it is under way), and the RECENT
    newest settled ones (a file moved lately: the next move is likeliest there)."""
    lively = [r for r in rows if r.get("state") not in SETTLED]
    rest = [r for r in rows if r.get("state") in SETTLED]
    rest.sort(key=lambda r: max((f[2] for f in r.get("files") or ()), default=0), reverse=True)
    return lively + rest[:RECENT]
