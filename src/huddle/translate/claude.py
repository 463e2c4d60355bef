"""Translation through the user's own Claude Code: a small pool of warm
`claude -p --input-format stream-json` workers.

A worker is one `claude` process holding one conversation: each request is a user
message on its stdin, each answer the `result` line that ends the turn. A warm worker
answers without Claude Code's start-up; its conversation grows with every message, so
it is recycled after `recycle_after` messages, and ended after `idle_after` seconds
unused. A request goes to the worker with the fewest requests waiting on it; a new
worker starts (up to `size`) when every one has a queue.

The workers run with no tools, no MCP servers, no slash commands, no session saved to
disk (so huddle's own translations never appear among the user's sessions), huddle's
system prompt instead of Claude Code's, in an empty folder of huddle's. Their stream is
read with the hosted source's reader (`sources/hosted/lines.py`), their tokens counted
once per message with its ledger.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

from huddle.model.events import Usage
from huddle.sources.claude.records import Message, usage_of
from huddle.sources.hosted.ledger import StreamLedger
from huddle.sources.hosted.lines import decode_line

POOL_SIZE = 2
RECYCLE_AFTER = 20  # messages a worker answers before a fresh one takes over
IDLE_AFTER = 300.0  # seconds unused before a worker is ended
ANSWER_TIMEOUT = 180.0
DEFAULT_MODEL = "haiku"
SAFE_MODE = "--safe-mode"  # none of the user's hooks, plugins, CLAUDE.md or skills run for huddle's translations


class BackendError(Exception):
    """The model could not be asked (one line, never a secret in it)."""


@dataclass
class Answer:
    text: str
    model: str
    usage: dict[str, int]


def program(env: dict[str, str] | None = None) -> str:
    env = env if env is not None else dict(os.environ)
    found = env.get("HUDDLE_CLAUDE") or shutil.which("claude", path=env.get("PATH"))
    if not found:
        raise BackendError("the `claude` command is not on PATH (install Claude Code, or set an API key)")
    return found


class _Worker:
    def __init__(self, argv: list[str], cwd: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        self.lock = threading.Lock()
        self.waiting = 0  # requests queued on this worker (the pool balances on it)
        self.answered = 0
        self.used = time.monotonic()
        self.buf = b""
        self.ledger = StreamLedger()
        self.model = ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise BackendError(f"claude did not answer within {ANSWER_TIMEOUT:g} s")
            block = os.read(fd, 1 << 16)
            if not block:
                raise BackendError(f"claude ended (exit {self.proc.wait()})")
            self.buf += block
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def ask(self, prompt: str) -> Answer:
        assert self.proc.stdin is not None
        msg = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}}
        try:
            self.proc.stdin.write(json.dumps(msg, ensure_ascii=False).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise BackendError(f"claude is gone: {exc.strerror or exc}") from None
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while True:
            raw = self._line(deadline)
            try:
                line = decode_line(raw)
            except Exception:  # (not a line of the stream: claude's own noise)
                continue
            if line.type == "system" and line.subtype == "init" and line.model:
                self.model = line.model
            elif line.type == "assistant" and isinstance(line.message, Message):
                m = line.message
                self.model = m.model or self.model
                if m.usage is not None and m.model != "<synthetic>":
                    self.ledger.assistant(m.id or "", usage_of(m.usage))
            elif line.type == "result":
                turn = self.ledger.result(_usage_field(line.usage))
                self.answered += 1
                self.used = time.monotonic()
                if line.is_error or line.subtype not in (None, "success"):
                    raise BackendError(f"claude said: {(line.result or line.subtype or 'an error')[:200]}")
                u = turn or Usage()
                return Answer(
                    line.result or "",
                    self.model,
                    {"input": u.input, "output": u.output, "cache_read": u.cache_read, "cache_write": u.cache_write},
                )

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _usage_field(raw) -> Usage | None:
    from huddle.sources.hosted.lines import claude_usage

    try:
        u = claude_usage(bytes(raw))
    except Exception:
        return None
    return usage_of(u) if u is not None else None


class ClaudePool:
    via = "claude"

    def __init__(
        self,
        system: str,
        cwd: str,
        model: str = "",
        size: int = POOL_SIZE,
        recycle_after: int = RECYCLE_AFTER,
        idle_after: float = IDLE_AFTER,
        env: dict[str, str] | None = None,
    ) -> None:
        self.env = env if env is not None else dict(os.environ)
        self.argv = [
            program(self.env),
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--no-session-persistence",
            "--tools",
            "",
            "--strict-mcp-config",
            "--disable-slash-commands",
            SAFE_MODE,
            "--system-prompt",
            system,
            "--model",
            model or DEFAULT_MODEL,
        ]
        self.cwd = cwd
        os.makedirs(cwd, mode=0o700, exist_ok=True)
        self.size = max(1, size)
        self.recycle_after = recycle_after
        self.idle_after = idle_after
        self.workers: list[_Worker] = []
        self.lock = threading.Lock()
        self.started = 0  # processes started, over the pool's life
        self.answered = 0
        self.closed = False
        self.reaper: threading.Thread | None = None
        self.wake = threading.Event()

    def _pick(self) -> _Worker:
        with self.lock:
            if self.closed:
                raise BackendError("translation is stopping")
            self.workers = [w for w in self.workers if w.alive()]
            best = min(self.workers, key=lambda w: w.waiting, default=None)
            if best is None or (best.waiting > 0 and len(self.workers) < self.size):
                best = _Worker(self.argv, self.cwd, self.env)
                self.started += 1
                self.workers.append(best)
                if self.reaper is None:
                    self.reaper = threading.Thread(target=self._reap, name="huddle-translate-idle", daemon=True)
                    self.reaper.start()
            best.waiting += 1
            return best

    def ask(self, prompt: str) -> Answer:
        try:
            return self._ask(prompt)
        except BackendError:
            if SAFE_MODE not in self.argv or self.answered:
                raise
            # a Claude Code older than --safe-mode stops at the unknown option: without it
            self.argv.remove(SAFE_MODE)
            return self._ask(prompt)

    def _ask(self, prompt: str) -> Answer:
        w = self._pick()
        try:
            with w.lock:
                try:
                    answer = w.ask(prompt)
                    self.answered += 1
                    return answer
                except BackendError:
                    self._drop(w)
                    raise
        finally:
            with self.lock:
                w.waiting -= 1
                if w.answered >= self.recycle_after and w.waiting == 0:
                    self._drop_locked(w)

    def _drop(self, w: _Worker) -> None:
        with self.lock:
            self._drop_locked(w)

    def _drop_locked(self, w: _Worker) -> None:
        if w in self.workers:
            self.workers.remove(w)
        threading.Thread(target=w.close, daemon=True).start()

    def _reap(self) -> None:
        while not self.wake.wait(min(10.0, self.idle_after / 2)):
            now = time.monotonic()
            with self.lock:
                for w in [w for w in self.workers if w.waiting == 0 and now - w.used > self.idle_after]:
                    self._drop_locked(w)

    def pids(self) -> list[int]:
        with self.lock:
            return [w.proc.pid for w in self.workers if w.alive()]

    def close(self) -> None:
        with self.lock:
            self.closed = True
            workers, self.workers = self.workers, []
        self.wake.set()
        for w in workers:
            w.close()
