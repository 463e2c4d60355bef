"""`huddle status --json` answered by a running `huddle serve` of the same home.

A server keeps the board up to date as the files move; a one-shot command that finds
its stored answer stale (huddle.io.answers) asks it instead of reading the moved
sessions itself: the server reads what was written before the question (a refresh
round of its own watcher) and says the board as the command would have. The question
goes over a Unix socket in huddle's own folder (`$HUDDLE_HOME/run`, 0700: only its
user can connect) and carries what the answer hangs on besides the files: the
environment (the folders it names) and huddle's code. A server that differs in either,
or has not finished its first read, declines, and the command reads as it always did.
A command asks first with a fence (live.fences: a file it makes in `run/fences`, which
a server watching through the kernel reads after every write made before it), having
stated nothing; a server that cannot see fences declines, and the command then states
the files its stored answer hangs on and names the ones that moved.

Standard library only: the command asks before importing anything of huddle's core.
"""

from __future__ import annotations

import _socket  # (not socket: its enums cost a command 3 ms of a 50 ms answer)
import marshal
import os
import time

from .answers import code

TYPE_CHECKING = False
if TYPE_CHECKING:
    from socket import socket
    from typing import Any

SOCKET = "serve.sock"
FENCES = "fences"
ASK_MAX = 4 << 20  # a question past this is no question of huddle's
WAIT = 60.0  # seconds a command waits on an answer: a hang guard, far above a server's round


def socket_path(huddle_home: str) -> str:
    return os.path.join(huddle_home, "run", SOCKET)


def fence_folder(huddle_home: str) -> str:
    """Where a command leaves its fence before it asks (live.fences)."""
    return os.path.join(huddle_home, "run", FENCES)


def question(
    what: str,
    moved: list[str] | None = None,
    since_ns: int | None = None,
    folders: list[str] | None = None,
    code_now: list[Any] | None = None,
) -> dict[str, Any]:
    """What a command asks: the answer's name, its environment, huddle's code as it is;
    and, from a stale stored answer (io.answers.Stale), the only session files that
    moved or came since it was saved at `since_ns`, and the scanned `folders` that moved
    (files came in them: the server checks none it knows there went): a server whose
    last whole read began after that reads just those (everything else is as both saw
    it), else it reads it all. `code_now`: io.answers.code() as the caller just found it
    (a stale answer's, checked against it), not stamped again."""
    q: dict[str, Any] = {"ask": what, "env": dict(os.environ), "code": code() if code_now is None else code_now}
    if moved is not None and since_ns is not None:
        q["moved"], q["since_ns"], q["folders"] = list(moved), since_ns, list(folders or ())
    return q


def frame(value: Any) -> bytes:
    data = marshal.dumps(value)
    return len(data).to_bytes(8, "little") + data


def read_frame(sock: socket | _socket.socket, most: int = ASK_MAX) -> Any:
    """One framed value from `sock` (raises ValueError on a short or oversized one)."""
    head = _read(sock, 8)
    n = int.from_bytes(head, "little")
    if n > most:
        raise ValueError(f"a frame of {n} bytes")
    return marshal.loads(_read(sock, n))


def _read(sock: socket | _socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        part = sock.recv(min(n - got, 1 << 20))
        if not part:
            raise ValueError("cut short")
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _body(sock: _socket.socket, n: int) -> bytearray | None:
    """The answer's `n` bytes, received in place (a board of megabytes copied once), or
    None if the server said more or fewer."""
    if not 0 <= n <= 1 << 32:
        return None
    body = bytearray(n)
    view, got = memoryview(body), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            return None
        got += k
    return None if sock.recv(1) else body


def ask(
    huddle_home: str,
    what: str = "status",
    moved: list[str] | None = None,
    since_ns: int | None = None,
    folders: list[str] | None = None,
    code_now: list[Any] | None = None,
    fenced: bool = False,
) -> tuple[bytes | bytearray, list[str]] | None:
    """(the answer, UTF-8, and its notes) from a server running on this home (`moved`,
    `since_ns`, `folders`, `code_now`: see `question`; `fenced`: nothing stated, a
    fence left instead: live.fences); None when there is none, it declines, or
    anything goes wrong (the command reads itself)."""
    path = socket_path(huddle_home)
    if not os.path.exists(path):
        return None
    fence = None
    if fenced:
        fence = _fence(huddle_home)
        if fence is None:
            return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(WAIT)
    try:
        sock.connect(path)
        q = question(what, moved, since_ns, folders, code_now)
        if fence is not None:
            q["fence"] = os.path.basename(fence)
        sock.sendall(frame(q))
        head = read_frame(sock)
        if not isinstance(head, dict) or not head.get("ok") or not isinstance(head.get("length"), int):
            return None
        body = _body(sock, head["length"])
        if body is None:
            return None
        return body, [str(n) for n in head.get("notes") or ()]
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        sock.close()
        if fence is not None:
            try:
                os.unlink(fence)
            except OSError:
                pass


def _fence(huddle_home: str) -> str | None:
    """A new file in the fence folder (live.fences): made after every write this
    command could have seen, so a server that reads its creation has read those too.
    None when there is no such folder (a server that takes no fences)."""
    path = os.path.join(fence_folder(huddle_home), f"{os.getpid()}-{time.time_ns()}")
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError:
        return None
    return path
