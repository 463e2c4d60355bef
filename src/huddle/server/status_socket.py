"""A running `huddle serve` answers `huddle status --json` (huddle.io.served): the
command that finds its stored answer stale asks here instead of reading the moved
sessions itself.

The answer is the one the command would give: its watcher reads what was written
before the question (a round on the watcher's own thread, so the pages hear of it as
of any round), then the board is built as the command builds it (no debouncing: a
state is said as the rules decide it), its sleeping rows said as kept. A question from
another environment (other folders) or other code is declined, and so is any before
the first read is done: the command then reads as it always did.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from typing import Any

from huddle.io import answers, served
from huddle.views.said import RowTexts

ACCEPT_WAIT = 1.0  # seconds between looks at whether to stop
CLIENT_WAIT = 10.0  # seconds a connection may take to ask


class StatusSocket:
    def __init__(self, h: Any, watcher: Any) -> None:
        self.h, self.watcher = h, watcher
        self.path = served.socket_path(h.settings.huddle_home)
        self.env = dict(os.environ)  # what the server's folders were named by
        self.code = answers.code()  # huddle's code as this process loaded it
        self.names = _names(h)
        self.texts = RowTexts()  # (the server's thread alone says boards here)
        self.last_error: str | None = None
        self._sock: socket.socket | None = None
        self._ident: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Listen (False, said in `last_error`, when it cannot: another server holds the
        socket, or the path is too long for one)."""
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            os.chmod(folder, 0o700)
            if _listening(self.path):
                self.last_error = f"{self.path}: another huddle serve answers this home"
                return False
            if os.path.lexists(self.path):
                os.unlink(self.path)  # (a server that stopped without removing it)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(self.path)
            os.chmod(self.path, 0o600)
            sock.listen(8)
            sock.settimeout(ACCEPT_WAIT)
        except OSError as exc:
            self.last_error = f"{self.path}: {exc.strerror or exc}"
            return False
        st = os.stat(self.path)
        self._sock, self._ident = sock, (st.st_dev, st.st_ino)
        self._fences()
        self._thread = threading.Thread(target=self._run, name="huddle-status-socket", daemon=True)
        self._thread.start()
        return True

    def _fences(self) -> None:
        """The folder a command leaves its fence in (live.fences), watched with the
        agents' folders from the watcher's next round."""
        if self.watcher is None:
            return
        fences = self.watcher.notices.fences
        folder = served.fence_folder(self.h.settings.huddle_home)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            return  # (no fences: a command stats, as before)
        fences.folder = folder
        fences.clear()
        self.watcher.wake.set()  # (its next round watches the folder)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
            try:  # (only our own: a server started since may hold the path now)
                st = os.lstat(self.path)
                if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) == self._ident:
                    os.unlink(self.path)
            except OSError:
                pass

    def _run(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(CLIENT_WAIT)
                try:
                    self._answer(conn)
                except Exception as exc:  # one question costs itself, never the server
                    self.last_error = f"status socket: {type(exc).__name__}: {exc}"

    def _answer(self, conn: socket.socket) -> None:
        q = served.read_frame(conn)
        why = self.declines(q)
        if why:
            conn.sendall(served.frame({"ok": False, "why": why}))
            return
        pieces, notes = self.board_pieces()
        length = sum(len(p) for p in pieces)
        conn.sendall(served.frame({"ok": True, "notes": notes, "length": length}))
        for piece in pieces:  # (a board of megabytes sent as it stands, never joined)
            conn.sendall(piece)

    def declines(self, q: object) -> str:
        """Why this server cannot answer the question as the asking command would ('' if it can)."""
        if not isinstance(q, dict) or q.get("ask") != "status" or not isinstance(q.get("env"), dict):
            return "not a question this server answers"
        if answers.environment(q["env"], self.names) != answers.environment(self.env, self.names):
            return "another environment: other folders"
        if q.get("code") != self.code:
            return "other code"
        if not self.watcher.started:
            return "the first read is not done"
        fence = q.get("fence")
        if isinstance(fence, str):  # (the command stated nothing: the kernel's notices say what moved)
            return "" if self.watcher.read_now(fence=fence) else "its fence was not seen"
        moved, since, folders = q.get("moved"), q.get("since_ns"), q.get("folders")
        hints = [str(p) for p in moved] if isinstance(moved, list) and isinstance(since, int) else None
        stirred = [str(d) for d in folders] if isinstance(folders, list) else []
        if not self.watcher.read_now(hints, since if hints is not None else None, folders=stirred):
            return "the watcher did not read in time"
        return ""

    def board_pieces(self) -> tuple[list[Any], list[str]]:
        """The board as `huddle status --json` says it, now, in bytes-like pieces
        (oneshot.said_pieces), and its notes."""
        from huddle.oneshot import said_pieces
        from huddle.views.board import board_json

        with self.h.lock:
            data = board_json(self.h, raw=True)
        return said_pieces(data, self.texts), [str(n) for n in data.get("notes", ())]


def _names(h: Any) -> list[str]:
    """The environment's names that name the agents' folders (io.answers.environment:
    as a stored answer's conditions name them, core.answering)."""
    from huddle.sources.registry import source_classes

    return sorted({c.folder_env for c in source_classes().values() if c.folder_env})


def _listening(path: str) -> bool:
    """Whether a server answers at `path` now."""
    if not os.path.exists(path):
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()
