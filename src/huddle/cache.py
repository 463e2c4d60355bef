"""huddle's own cache, in its data folder (never an agent's folder).

Two files under `$HUDDLE_HOME/cache/`:

- `handles.pickle`: each session's incremental reading state (file identity and
  offsets, what was derived, the usage events), so a new `huddle status` reads only
  the files that changed, and only their new bytes. Keyed by each file's identity
  and size through the readers' cursors; written atomically; a corrupt or foreign
  cache is ignored (one line says so) and rebuilt.
- `board.bin`: the last board with every file's size and mtime, for the status
  line, which must stay on the standard library and cannot load the pickle. It is
  in marshal form: built into the interpreter, so reading it costs no import and a
  fraction of parsing JSON on a path that runs on every message of every session.

This module is on the status line's path: standard library imports only.
"""

from __future__ import annotations

import marshal
import os
import time

from . import __version__

FORMAT = f"huddle-cache/1 {__version__}"
BOARD_FORMAT = "huddle-board/1"


def board_path(huddle_home: str) -> str:
    return os.path.join(huddle_home, "cache", "board.bin")


def read_board(path: str) -> dict | None:
    """The board the status line reads; None if missing, foreign or corrupt."""
    try:
        with open(path, "rb") as f:
            fmt, data = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if fmt != BOARD_FORMAT or not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
        return None
    return data


def cache_dir(huddle_home: str) -> str:
    return os.path.join(huddle_home, "cache")


def _atomic_write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class HandleCache:
    def __init__(self, huddle_home: str, settings_key: tuple):
        self.path = os.path.join(cache_dir(huddle_home), "handles.pickle")
        self.settings_key = settings_key  # a cache made for other folders is not ours
        self.blobs: dict[str, tuple[int, bytes]] = {}  # key -> (session version, pickle)
        self.note: str | None = None

    def load(self, sources) -> dict:
        """The cached handles, re-attached to the live source objects."""
        import pickle  # not at the top: the status line imports this module too

        try:
            with open(self.path, "rb") as f:
                data = pickle.load(f)
        except FileNotFoundError:
            return {}
        except Exception as exc:
            self.note = f"{self.path}: unreadable cache ignored ({type(exc).__name__})"
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("settings") != self.settings_key:
            return {}
        by_name = {s.name: s for s in sources}
        handles = {}
        for key, blob in data.get("handles", {}).items():
            try:
                h = pickle.loads(blob)
            except Exception:
                continue  # that one session is read again from its files
            src = by_name.get(h.session.source)
            if src is None:
                continue
            h.source = src
            handles[key] = h
            self.blobs[key] = (h.session.version, blob)
        return handles

    def save(self, handles: dict) -> None:
        import pickle

        out = {}
        for key, h in handles.items():
            cached = self.blobs.get(key)
            if cached is not None and cached[0] == h.session.version:
                out[key] = cached[1]
                continue
            try:
                blob = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                continue  # a handle that cannot be kept is simply read again next time
            self.blobs[key] = (h.session.version, blob)
            out[key] = blob
        for key in self.blobs.keys() - out.keys():
            del self.blobs[key]
        data = {"format": FORMAT, "settings": self.settings_key, "written": time.time(), "handles": out}
        try:
            _atomic_write(self.path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            self.note = f"{self.path}: cannot write the cache ({exc.strerror})"


def dirs_moved(stamps) -> bool:
    """Whether any folder's mtime moved since it was stamped ([path, mtime_ns or None])."""
    for path, mtime in stamps:
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            if mtime is not None:
                return True
    return False


def files_moved(stamps) -> bool:
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


def file_stamps(paths) -> list:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        out.append([p, st.st_size, st.st_mtime_ns])
    return out


def write_board(huddle_home: str, board: dict, handles: dict, watch_dirs: list[str]) -> None:
    """The board for the status line, with what it needs to tell that it is stale."""
    rows = []
    for s in board.get("sessions", []):
        h = handles.get(f"{s['source']}:{s['id']}")
        rows.append(
            {
                "id": s["id"],
                "source": s["source"],
                "title": s.get("title", ""),
                "project": s.get("project", ""),
                "state": s.get("state"),
                "state_since": s.get("state_since"),
                "waiting_for": s.get("waiting_for"),
                "tokens": s.get("tokens", 0),
                "cost_usd": (s.get("cost") or {}).get("usd"),
                "files": file_stamps(h.files()) if h is not None else [],
            }
        )
    dirs = []
    for d in watch_dirs:
        try:
            dirs.append([d, os.stat(d).st_mtime_ns])
        except OSError:
            dirs.append([d, None])
    data = {"format": 1, "written_at": time.time(), "sessions": rows, "dirs": dirs}
    try:
        _atomic_write(board_path(huddle_home), marshal.dumps((BOARD_FORMAT, data)))
    except OSError:
        pass
