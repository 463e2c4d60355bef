"""`huddle host`: one process (one asyncio loop, no threads) that runs an agent,
logs everything that passes to `D/events.jsonl` and serves `D/host.sock` (the
calls are in `serving`). It keeps the last entries in memory for live readers,
stops the agent's whole process tree cleanly, and never runs it unlogged.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from huddle.answer.protocols import pick
from huddle.io import private, procs

from . import orphans, proctree
from .asking import Asking
from .log import EventLog, LogError, as_json
from .paths import SOCK_NAME, log_path
from .process import AgentProcess, StartError
from .serving import Serving

RING_ENTRIES = 4096  # entries kept in memory for live readers (older ones: from the file)
RING_BYTES = 16 << 20
SYNC_EVERY = 0.2  # seconds between fdatasyncs of streamed output


class Host:
    def __init__(
        self,
        dir: str,
        argv: list[str],
        socket: str | None = None,
        cwd: str | None = None,
        grace: float = 3.0,
        name: str = "",
        protocol: str | None = None,
        prompt: str = "",
    ):
        self.dir = os.path.abspath(dir)
        self.argv = argv
        self.socket = os.path.abspath(socket) if socket else os.path.join(self.dir, SOCK_NAME)
        self.cwd = cwd
        self.grace = grace
        self.name = name
        self.log = EventLog(log_path(self.dir))
        self.ring: dict[int, bytes] = {}
        self.ring_first = 1
        self.ring_bytes = 0
        self.wake = asyncio.Event()
        # the protocol the agent speaks on its pipes, when huddle can answer it (huddle.answer)
        self.channel = pick(argv, os.path.abspath(cwd or os.getcwd()), protocol, prompt)
        self.agent = AgentProcess(self.channel.command() if self.channel else argv, cwd, self._on_line)
        self.asking = Asking(self, self.channel)
        self.tree = proctree.Tree()
        self.exited_seq: int | None = None
        self.exit_info: dict | None = None
        self.done = asyncio.Event()  # `exited` is in the log
        self.broken: str | None = None  # why the log cannot be written
        self.stop_task: asyncio.Task | None = None
        self.fast = False
        self.tasks: set[asyncio.Task] = set()
        self._sync_pending = False
        self.serving = Serving(self)  # the calls on the socket

    def status(self) -> dict[str, Any]:
        return {
            "dir": self.dir,
            "host_pid": os.getpid(),
            "pid": self.agent.pid,
            "running": self.agent.running,
            "stopping": self.stop_task is not None,
            "last_seq": self.log.last_seq,
            "readers": self.serving.readers(),
            "exited": self.exit_info,
            "broken": self.broken,
            "protocol": self.asking.protocol,
            "asks": self.asking.listing(),
        }

    # -- the log -------------------------------------------------------------------

    def record(self, kind: str, fields: dict | None = None, raw: bytes | None = None, sync: bool = False) -> int | None:
        if self.broken:
            return None
        try:
            seq, data = self.log.append(kind, fields, raw)
            if sync:
                self.log.sync()
            elif not self._sync_pending:
                self._sync_pending = True
                asyncio.get_running_loop().call_later(SYNC_EVERY, self._sync)
        except LogError as exc:
            self._fail(str(exc))
            return None
        self.ring[seq] = data
        self.ring_bytes += len(data)
        while len(self.ring) > RING_ENTRIES or (self.ring_bytes > RING_BYTES and len(self.ring) > 1):
            self.ring_bytes -= len(self.ring.pop(self.ring_first))
            self.ring_first += 1
        self.serving.let_go_behind(seq)
        self.wake.set()
        self.wake = asyncio.Event()
        return seq

    def _sync(self) -> None:
        self._sync_pending = False
        if self.broken:
            return
        try:
            self.log.sync()
        except LogError as exc:
            self._fail(str(exc))

    def _fail(self, msg: str) -> None:
        """The log cannot be written: say so and stop the agent rather than run it unlogged."""
        if self.broken:
            return
        self.broken = msg
        if self.agent.proc is None:
            print(f"huddle host: {msg}; the agent was not started", file=sys.stderr, flush=True)
            return
        print(f"huddle host: {msg}; stopping the agent rather than run it unlogged", file=sys.stderr, flush=True)
        self.spawn(self.stop(fast=True, by="log"))

    def _note(self, text: str) -> None:
        self.record("note", {"text": text})
        print(f"huddle host: {text}", file=sys.stderr, flush=True)

    def _on_line(self, kind: str, line: bytes) -> None:
        if self.done.is_set():
            return  # a leftover process still writing after `exited`: this run's log is closed
        if kind == "stdout":
            raw = as_json(line)
            if raw is not None:
                if self.record("stdout", raw=raw) is not None and self.asking.wants(raw):
                    self.asking.output(raw)  # (logged first: the ask entry follows what the agent said)
                return
        self.record(kind, {"text": line.decode("utf-8", "replace")})

    # -- life ----------------------------------------------------------------------

    async def run(self) -> int:
        try:
            private.folder(self.dir)
        except OSError as exc:
            return _say(f"cannot create {self.dir}: {exc.strerror}", 2)
        try:
            self.log.open()
        except LogError as exc:
            return _say(str(exc), 2)
        self.ring_first = self.log.last_seq + 1
        try:
            return await self._run()
        finally:
            self.log.close()

    async def _run(self) -> int:
        try:
            server = await self.serving.listen()
        except OSError as exc:
            return _say(f"cannot listen on {self.socket}: {exc.strerror or exc}", 2)
        try:
            if self.log.dropped:
                self.record("note", {"text": f"dropped {self.log.dropped} bytes of a line cut short"})
            me = os.getpid()
            if (
                self.record(
                    "host",
                    {"host_pid": me, "host_start": procs.start_time(me), "socket": self.socket, "dir": self.dir},
                    sync=True,
                )
                is None
            ):
                return 2  # nothing is started when the log cannot be written
            self.asking.restore()
            return await self._host()
        finally:
            server.close()
            self.serving.unlisten()

    async def _host(self) -> int:
        proctree.become_subreaper()
        signals: list[int] = []  # a signal before the agent runs is answered once it does
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, lambda: self._on_signal() if self.agent.exited else signals.append(1))
        await orphans.sweep(os.path.dirname(self.dir), self.dir, self._note)  # never an agent run unlogged
        try:
            pid = await self.agent.start()
        except StartError as exc:
            print(f"huddle host: {exc}", file=sys.stderr, flush=True)
            self._write_exited({"status": 127, "signal": None, "reason": str(exc), "stopped": False})
            await self._linger()
            return 127
        fields: dict[str, Any] = {
            "pid": pid,
            "start": procs.start_time(pid),
            "argv": self.agent.argv,
            "cwd": os.path.abspath(self.cwd or os.getcwd()),
        }
        if self.name:
            fields["name"] = self.name
        if self.channel is not None:
            fields["protocol"] = self.channel.name
        try:
            self.record("started", fields, sync=True)
        finally:
            self.agent.read_output()
        if self.channel is not None and not self.broken:
            self.asking.apply(self.channel.start())
        for _ in signals:
            self._on_signal()
        watch = self.spawn(self._watch_tree())
        code = await self.agent.wait()
        if self.stop_task is not None:
            await self.stop_task
        else:
            await self.agent.drain_pipes(self.grace)
            left = self.tree.living()
            if left:
                self.record("note", {"text": f"{len(left)} process(es) the agent started still run", "pids": left})
            self._write_exited(_exit_fields(code, stopped=False))
        watch.cancel()
        await self._linger()
        if self.broken:
            return 1
        info = self.exit_info
        assert info is not None  # both ways above wrote `exited`
        return int(info["status"])

    def _on_signal(self) -> None:
        """SIGINT, SIGTERM, SIGHUP: stop the agent cleanly; a second one hurries."""
        self.spawn(self.stop(fast=self.stop_task is not None, by="signal"))

    def to_agent(self, raw: bytes) -> int | None:
        """One line to the agent's stdin, logged first (never sent unlogged)."""
        seq = self.record("stdin", raw=raw, sync=True)
        if seq is not None:
            self.agent.write(raw + b"\n")
        return seq

    def _write_exited(self, info: dict) -> None:
        self.asking.end("the agent exited")
        self.exit_info = info
        self.exited_seq = self.record("exited", info, sync=True)
        if self.exited_seq is None:
            self.exited_seq = self.log.last_seq  # unlogged: readers end at what there is
        self.done.set()
        self.wake.set()

    async def _linger(self) -> None:
        """Let attached readers and pending replies finish (bounded), then go."""
        for _ in range(200):
            pending = [t for t in self.tasks if not t.done()]
            if not self.serving.readers() and not pending:
                break
            await asyncio.sleep(0.02)
        for c in list(self.serving.conns):
            try:
                await asyncio.wait_for(c.writer.drain(), timeout=1.0)
            except (TimeoutError, ConnectionError):
                pass
            c.writer.close()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        t = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)
        return t

    async def _watch_tree(self) -> None:
        while True:
            self.tree.snapshot()
            self.tree.reap(keep=self.agent.pid)
            await asyncio.sleep(0.5)

    # -- stopping ------------------------------------------------------------------

    async def stop(self, fast: bool = False, by: str = "socket") -> None:
        """Close stdin, wait; SIGTERM the tree, wait; SIGKILL what is left. A second
        call while stopping skips the waits."""
        if self.done.is_set() or self.agent.exited is None:
            return
        if self.stop_task is None and not self.agent.running:
            await self.done.wait()  # it exited by itself; its `exited` is on the way
            return
        if self.stop_task is None:
            self.fast = fast
            self.stop_task = asyncio.get_running_loop().create_task(self._stop(by))
        elif fast:
            self.fast = True
        await asyncio.shield(self.stop_task)

    async def _stop(self, by: str) -> None:
        a = self.agent
        self.asking.end("the agent is being stopped")
        self.record("stopping", {"step": "closing stdin", "by": by}, sync=True)
        a.close_stdin()
        await self._until(lambda: not a.running, self.grace, hurried=0.0)
        if a.running or self.tree.living():
            pids = self.tree.signal_all(signal.SIGTERM, also_group=a.pid if a.running else None)
            self.record("stopping", {"step": "SIGTERM", "pids": pids}, sync=True)
            await self._until(lambda: not a.running and not self.tree.living(), self.grace, hurried=0.2)
        if a.running or self.tree.living():
            pids = self.tree.signal_all(signal.SIGKILL, also_group=a.pid if a.running else None)
            self.record("stopping", {"step": "SIGKILL", "pids": pids}, sync=True)
            for _ in range(500):  # a process stuck in the kernel cannot be waited for forever
                if not (a.running or self.tree.living()):
                    break
                await asyncio.sleep(0.02)
                self.tree.signal_all(signal.SIGKILL)
        code = await a.wait()
        self.tree.reap(keep=a.pid)
        await a.drain_pipes(min(self.grace, 1.0))
        self._write_exited(_exit_fields(code, stopped=True))

    async def _until(self, cond, seconds: float, hurried: float) -> None:
        """Wait until `cond()` or `seconds` pass; a hurried stop (`now`, a second
        Ctrl-C, a log that cannot be written) waits `hurried` at most."""
        waited = 0.0
        while not cond() and waited < (min(seconds, hurried) if self.fast else seconds):
            await asyncio.sleep(0.02)
            waited += 0.02


def _exit_fields(code: int, stopped: bool) -> dict:
    if code < 0:
        name = proctree.SIGNAL_NAMES.get(-code, f"signal {-code}")
        return {"status": 128 - code, "signal": name, "reason": f"killed by {name}", "stopped": stopped}
    return {"status": code, "signal": None, "reason": f"exit status {code}", "stopped": stopped}


def _say(msg: str, code: int) -> int:
    print(f"huddle host: {msg}", file=sys.stderr, flush=True)
    return code


def serve(
    dir: str,
    argv: list[str],
    socket: str | None = None,
    cwd: str | None = None,
    grace: float = 3.0,
    name: str = "",
    protocol: str | None = None,
    prompt: str = "",
) -> int:
    """Run a host until its agent exits; return the agent's exit status."""

    async def main() -> int:
        host = Host(dir, argv, socket=socket, cwd=cwd, grace=grace, name=name, protocol=protocol, prompt=prompt)
        return await host.run()

    return asyncio.run(main())
