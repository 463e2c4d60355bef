"""The hosted agent: a child process whose stdin, stdout and stderr the host owns.

Lines are handed out whole (chunks split anywhere are reassembled here); the exit
is noticed through a pidfd, so the host needs no threads and no SIGCHLD handler.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
from collections.abc import Callable
from functools import partial

from huddle.errors import HostingError

MAX_LINE = 64 << 20  # a longer run without a newline is handed out in pieces


PR_SET_PDEATHSIG = 1


def _die_with(host: int) -> Callable[[], None]:
    """Run in the agent's process before it execs: SIGTERM when the host dies, however
    it dies (kill -9 included), so it never runs on unlogged. (One that ignores SIGTERM
    is stopped by the next host: orphans.py.)"""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)  # (loaded before the fork: nothing to load after it)

    def arm() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != host:  # the host died before the prctl took hold
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


class StartError(HostingError):
    """The command could not be started; the message says why."""


class _Lines(asyncio.Protocol):
    def __init__(self, kind: str, on_line: Callable[[str, bytes], None], closed: asyncio.Future[None]):
        self.kind = kind
        self.on_line = on_line
        self.closed = closed
        self.rest = b""
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (before any byte is read: the agent's first lines wait for the log's "started")
        self.transport = transport
        if isinstance(transport, asyncio.ReadTransport):
            transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        if b"\n" not in data:
            self.rest += data
            if len(self.rest) >= MAX_LINE:
                piece, self.rest = self.rest, b""
                self.on_line(self.kind, piece)
            return
        parts = (self.rest + data).split(b"\n")
        self.rest = parts.pop()
        for line in parts:
            self.on_line(self.kind, line[:-1] if line.endswith(b"\r") else line)

    def eof_received(self) -> bool:
        self._flush()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._flush()
        if not self.closed.done():
            self.closed.set_result(None)

    def _flush(self) -> None:
        if self.rest:
            piece, self.rest = self.rest, b""
            self.on_line(self.kind, piece)


class _Stdin(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self.open = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False


class AgentProcess:
    def __init__(self, argv: list[str], cwd: str | None, on_line: Callable[[str, bytes], None]):
        self.argv = argv
        self.cwd = cwd
        self.on_line = on_line
        self.proc: subprocess.Popen[bytes] | None = None
        self.exited: asyncio.Future[int] | None = None  # -> the return code, once started
        self._pipes: list[asyncio.Future[None]] = []
        self._readers: list[_Lines] = []
        self._stdin: asyncio.WriteTransport | None = None
        self._stdin_proto: _Stdin | None = None
        self._pidfd = -1

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self) -> int:
        """Start it; its pid."""
        loop = asyncio.get_running_loop()
        try:
            self.proc = proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                start_new_session=True,  # terminal signals reach the host, which stops it cleanly
                preexec_fn=_die_with(os.getpid()),
            )
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename and exc.filename != self.argv[0] else ""
            raise StartError(f"cannot start {shlex.join(self.argv)}: {exc.strerror or exc}{where}") from None
        except (ValueError, subprocess.SubprocessError) as exc:
            raise StartError(f"cannot start {shlex.join(self.argv)}: {exc}") from None
        self.exited = loop.create_future()
        self._stdin, self._stdin_proto = await loop.connect_write_pipe(_Stdin, proc.stdin)
        for kind, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            closed: asyncio.Future[None] = loop.create_future()
            self._pipes.append(closed)
            _t, reader = await loop.connect_read_pipe(partial(_Lines, kind, self.on_line, closed), pipe)
            self._readers.append(reader)
        self._watch_exit(loop, proc)
        return proc.pid

    def read_output(self) -> None:
        """Its output read from now on (`start` leaves it unread: a line it writes at once
        was logged before the "started" entry, under load)."""
        for reader in self._readers:
            if isinstance(reader.transport, asyncio.ReadTransport) and not reader.transport.is_closing():
                reader.transport.resume_reading()

    async def wait(self) -> int:
        """The exit status, once it has exited."""
        if self.exited is None:
            raise RuntimeError("the agent was not started")
        return await self.exited

    def _watch_exit(self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]) -> None:
        try:
            self._pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            loop.create_task(self._poll_exit(proc))
            return
        loop.add_reader(self._pidfd, self._on_pidfd, loop, proc)

    def _on_pidfd(self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]) -> None:
        loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = -1
        self._set_exit(proc.wait())

    async def _poll_exit(self, proc: subprocess.Popen[bytes]) -> None:
        while proc.poll() is None:
            await asyncio.sleep(0.05)
        self._set_exit(proc.returncode)

    def _set_exit(self, code: int) -> None:
        if self.exited is not None and not self.exited.done():
            self.exited.set_result(code)

    @property
    def running(self) -> bool:
        return self.exited is not None and not self.exited.done()

    @property
    def stdin_open(self) -> bool:
        return (
            self._stdin is not None
            and self._stdin_proto is not None
            and self._stdin_proto.open
            and not self._stdin.is_closing()
        )

    def stdin_waiting(self) -> int:
        """Bytes written to its stdin that it has not read yet, past what the pipe holds."""
        return self._stdin.get_write_buffer_size() if self._stdin is not None else 0

    def write(self, data: bytes) -> None:
        """To its stdin; the caller asked `stdin_open` first."""
        if self._stdin is not None:
            self._stdin.write(data)

    def close_stdin(self) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.close()

    async def drain_pipes(self, timeout: float) -> None:
        """Wait for stdout and stderr to end: a grandchild may hold them open, so
        not for longer than `timeout`."""
        if self._pipes:
            await asyncio.wait(self._pipes, timeout=timeout)
