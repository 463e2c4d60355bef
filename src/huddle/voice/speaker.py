"""The speaker: a queue of lines in front of the one speaking worker (voice/worker.py).

One line at a time; "needs you" lines go first and are kept longest. The queue drops
stale lines rather than fall behind: a line waits at most `stale_after` seconds, and
past `pending_max` waiting lines the oldest ordinary one goes. The worker starts on the
first line (never before), and a worker that crashes or hangs is started again, at most
`restarts` times in `window` seconds; after that the speaker stops and says why.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

STALE_AFTER = 20.0  # seconds an ordinary line may wait for its turn
URGENT_STALE_AFTER = 120.0  # and a "needs you" line
PENDING_MAX = 3  # ordinary lines waiting; past this the oldest is dropped
RESTARTS = 3  # worker starts after a failure, within WINDOW
WINDOW = 60.0
START_TIMEOUT = 60.0  # seconds for the worker to load its engine
LINE_TIMEOUT = 60.0  # seconds to speak one line


_SENTENCE = re.compile(r"(?<=[.!?…])\s+(?=\S)")
SENTENCE_MIN = 12  # characters: a shorter sentence ("Done.") goes with the next


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for s in _SENTENCE.split(text.strip()):
        if out and len(out[-1]) < SENTENCE_MIN:
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    return [s for s in out if s] or [text]


@dataclass
class Line:
    text: str
    session: str = ""
    agent: str = ""  # who says it
    cast: int = 0  # the agent's place in its session: its voice
    urgent: bool = False  # "needs you": first, and kept longest
    born: float = field(default_factory=time.monotonic)  # when the line appeared


@dataclass
class Clip:
    n: int
    line: Line
    pcm: bytes
    rate: int
    voice: str
    engine: str
    seconds: float  # synthesis time
    ready: float = field(default_factory=time.monotonic)

    @property
    def duration(self) -> float:
        return len(self.pcm) / 2 / self.rate if self.rate else 0.0

    def wav(self) -> bytes:
        return wav_bytes(self.pcm, self.rate)


def wav_bytes(pcm: bytes, rate: int) -> bytes:
    """A 16-bit mono WAV file of `pcm`."""
    n = len(pcm)
    head = b"RIFF" + (36 + n).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    head += (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + rate.to_bytes(4, "little")
    head += (rate * 2).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    return head + b"data" + n.to_bytes(4, "little") + pcm


class WorkerError(Exception):
    """The worker crashed, hung or said something else: start another."""


class Unavailable(WorkerError):
    """The engine cannot run here: starting again would not help."""


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, engine: str, env: dict[str, str] | None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "huddle.voice.worker", engine],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # Ctrl+C in the terminal is the parent's to handle
        )
        self.buf = b""
        try:
            hello = self.header(time.monotonic() + START_TIMEOUT)
        except WorkerError:
            self.close()
            raise
        if not hello.get("ready"):
            self.close()
            raise Unavailable(str(hello.get("error") or "the worker did not start"))
        self.engine = str(hello.get("engine", engine))
        self.voices = [str(v) for v in hello.get("voices", ())] or ["default"]

    def _fill(self, deadline: float) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise WorkerError("the worker did not answer in time")
        block = os.read(fd, 1 << 16)
        if not block:
            raise WorkerError(f"the worker ended ({self.proc.poll()})")
        self.buf += block

    def header(self, deadline: float) -> dict:
        while b"\n" not in self.buf:
            self._fill(deadline)
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerError("the worker said something else") from None

    def body(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def speak(self, rid: int, text: str, voice: str) -> tuple[bytes, int, float]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"id": rid, "text": text, "voice": voice}).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise WorkerError(f"the worker is gone: {exc}") from None
        deadline = time.monotonic() + LINE_TIMEOUT
        h = self.header(deadline)
        if not h.get("ok"):
            raise ValueError(str(h.get("error") or "not spoken"))
        return self.body(int(h["bytes"]), deadline), int(h["rate"]), float(h.get("seconds", 0.0))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()  # its loop ends
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Speaker:
    def __init__(
        self,
        engine: str = "",
        on_clip: Callable[[Clip], None] | None = None,
        stale_after: float = STALE_AFTER,
        pending_max: int = PENDING_MAX,
        restarts: int = RESTARTS,
        window: float = WINDOW,
        env: dict[str, str] | None = None,
    ) -> None:
        self.engine = engine
        self.on_clip = on_clip
        self.stale_after = stale_after
        self.pending_max = pending_max
        self.restarts = restarts
        self.window = window
        self.env = env
        self.pending: deque[Line] = deque()
        self.cond = threading.Condition()
        self.worker: _Worker | None = None
        self.failures: deque[float] = deque()
        self.stopped = ""  # why the speaker gave up ("" while it speaks)
        self.dropped = 0  # lines dropped as stale
        self.spoken = 0
        self.numbers = itertools.count(1)
        self.closing = False
        self.thread: threading.Thread | None = None

    # -- the queue -------------------------------------------------------------------

    def say(self, line: Line) -> None:
        with self.cond:
            if self.closing or self.stopped:
                self.dropped += 1
                return
            if line.urgent:  # after the other urgent ones, before every ordinary one
                i = sum(1 for x in self.pending if x.urgent)
                self.pending.insert(i, line)
            else:
                self.pending.append(line)
                ordinary = [x for x in self.pending if not x.urgent]
                if len(ordinary) > self.pending_max:
                    self.pending.remove(ordinary[0])
                    self.dropped += 1
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="huddle-voice", daemon=True)
                self.thread.start()
            self.cond.notify()

    def _next(self) -> Line | None:
        with self.cond:
            while True:
                if self.closing:
                    return None
                now = time.monotonic()
                while self.pending:
                    line = self.pending.popleft()
                    if now - line.born <= (URGENT_STALE_AFTER if line.urgent else self.stale_after):
                        return line
                    self.dropped += 1
                self.cond.wait()

    def _run(self) -> None:
        while True:
            line = self._next()
            if line is None:
                return
            # sentence by sentence: the first is heard while the next is made (Kokoro
            # makes a sentence in about the time it takes to say it on two busy cores)
            for part in sentences(line.text):
                try:
                    clip = self.speak(replace(line, text=part))
                except (WorkerError, ValueError):
                    break
                if self.on_clip is not None:
                    self.on_clip(clip)
                if self.closing:
                    return

    # -- the worker ------------------------------------------------------------------

    def speak(self, line: Line) -> Clip:
        """Speak one line now, on this thread (the queue's, or `huddle say`'s)."""
        why = "the worker failed"
        for _ in range(self.restarts + 1):
            try:
                w = self._worker()
                voice = w.voices[line.cast % len(w.voices)]
                n = next(self.numbers)
                pcm, rate, seconds = w.speak(n, line.text, voice)
            except WorkerError as exc:
                why = str(exc)
                if self.stopped or self.closing:
                    break
                self._failed(why)
                continue
            self.spoken += 1
            return Clip(n, line, pcm, rate, voice, w.engine, seconds)
        raise WorkerError(self.stopped or why)

    def _worker(self) -> _Worker:
        if self.stopped:
            raise WorkerError(self.stopped)
        w = self.worker
        if w is not None:
            if w.alive():
                return w
            self._failed(f"the worker ended ({w.proc.returncode})")  # a crash between lines counts too
            if self.stopped:
                raise WorkerError(self.stopped)
        try:
            self.worker = _Worker(self.engine, self.env)
        except Unavailable as exc:
            self.stopped = str(exc)
            raise
        return self.worker

    def _failed(self, why: str) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        now = time.monotonic()
        self.failures.append(now)
        while self.failures and now - self.failures[0] > self.window:
            self.failures.popleft()
        if len(self.failures) > self.restarts:
            self.stopped = (
                f"voices stopped: the speaking worker failed {len(self.failures)} times in {self.window:g} s ({why})"
            )
            with self.cond:
                self.dropped += len(self.pending)
                self.pending.clear()

    def status(self) -> dict:
        w = self.worker
        return {
            "engine": w.engine if w is not None else self.engine or None,
            "running": w is not None and w.alive(),
            "pid": w.proc.pid if w is not None and w.alive() else None,
            "pending": len(self.pending),
            "spoken": self.spoken,
            "dropped": self.dropped,
            "stopped": self.stopped or None,
        }

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.pending.clear()
            self.cond.notify_all()
        w = self.worker
        if w is not None and w.alive():
            w.proc.kill()  # a line being spoken ends now: its reader sees the pipe close
        if self.thread is not None:
            self.thread.join(timeout=LINE_TIMEOUT)
        if self.worker is not None:
            self.worker.close()
            self.worker = None
