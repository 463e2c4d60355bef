"""Real stand-ins for running agents, for the live tests: a process that a Claude Code
registry file (`sessions/<pid>.json`) names, a process that holds a Codex thread-writer
lock or a Vibe session lock with a real flock, and a reader of the server's SSE stream.

Nothing here is mocked: huddle sees real pids in /proc, real flocks in /proc/locks, real
files rewritten in place, and reads them through its real watcher and server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx

from conftest import SAMPLES
from huddle.sources import Settings

# Seconds from a change on disk to every surface. The promise is a second, and
# bench/bench_surfaces.py measures it (0.6-1.1 s medians); the suite asserts no timing:
# only that a change arrives by its own signal, long before the 45 s poll it replaced,
# with room for a loaded machine.
WITHIN = 8.0


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def wait_until(fn: Callable[[], object], deadline: float, what: str, step: float = 0.01):
    """Poll `fn` until it returns something true, at most until `deadline` (time.time())."""
    while True:
        got = fn()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError(f"{what}: not seen within the deadline (last: {got!r})")
        time.sleep(step)


# -- Claude Code: a live process and its registry file -----------------------------------


def proc_start(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read().decode()
    return stat[stat.rfind(")") + 2 :].split()[19]


class ClaudeProcess:
    """A real process standing in for Claude Code, and the registry file it keeps,
    rewritten in place (not atomically) like Claude Code does."""

    def __init__(self, config: Path, session_id: str, status: str = "busy"):
        self.proc = subprocess.Popen(["sleep", "600"])
        self.pid = self.proc.pid
        self.path = config / "sessions" / f"{self.pid}.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.base = {
            "pid": self.pid,
            "sessionId": session_id,
            "cwd": "/home/dev/live/solo/proj",
            "startedAt": int(time.time() * 1000),
            "procStart": proc_start(self.pid),
            "version": "2.1.332",
            "kind": "interactive",
            "entrypoint": "cli",
            "name": "proj",
        }
        self.set(status)

    def set(self, status: str, waiting_for: str | None = None) -> None:
        """Rewrite the file; statusUpdatedAt moves only when the status does (as Claude Code's)."""
        now = int(time.time() * 1000)
        if status != getattr(self, "status", None):
            self.status, self.status_at = status, now
        rec = {**self.base, "status": status, "updatedAt": now, "statusUpdatedAt": self.status_at}
        if waiting_for:
            rec["waitingFor"] = waiting_for
        with open(self.path, "w") as f:  # in place, as Claude Code rewrites it
            f.write(json.dumps(rec, separators=(",", ":")))

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def claude_live(root: Path, snapshot: str = "03-working-bash-running") -> tuple[Settings, str, Path]:
    """One live-state snapshot's config dir without its (dead) registry file:
    (settings, session id, config dir)."""
    src = SAMPLES / "claude-live" / snapshot / "config"
    config = root / "claude"
    shutil.copytree(src / "projects", config / "projects")
    (config / "sessions").mkdir()
    sid = json.loads((SAMPLES / "claude-live" / snapshot / "truth.json").read_text())["session_id"]
    none = str(root / "none")
    return (
        Settings(folders={"claude": str(config), "codex": none, "vibe": none}, huddle_home=str(root / "hh")),
        sid,
        config,
    )


# -- a lock held by another process --------------------------------------------------------

_HOLD = r"""
import fcntl, json, os, sys, time
lock, meta, sid, acquired = sys.argv[1:5]
if meta:  # Vibe: who holds it, beside the lock
    with open(meta + ".tmp", "w") as f:
        json.dump({"acquired_at": acquired, "lease_version": 1, "process_id": os.getpid(), "session_id": sid}, f)
    os.replace(meta + ".tmp", meta)
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", time.time(), flush=True)
for line in sys.stdin:  # until told to let go: a clean unload removes the files
    if not line.startswith("run "):
        break
    import subprocess  # a command the agent runs: a child of the holder, as Codex's are
    child = subprocess.Popen(["bash", "-c", "read _", line[4:].rstrip("\n")], stdin=subprocess.PIPE)
    print("running", child.pid, time.time(), flush=True)
os.unlink(lock)
if meta:
    os.unlink(meta)
"""


class LockHolder:
    """Another process takes `lock` with an exclusive flock (and, for Vibe, writes its
    `.lock.json`); `release()` lets go as a clean exit would."""

    def __init__(self, lock: Path, meta: Path | None = None, session_id: str = ""):
        args = [sys.executable, "-c", _HOLD, str(lock), str(meta or ""), session_id, iso_now()]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        said = self.proc.stdout.readline().split()
        assert said[:1] == ["held"], said
        self.taken_at = float(said[1])  # when the flock was taken, by the holder's own clock read
        self.pid = self.proc.pid

    def run(self, cmd: str) -> tuple[int, float]:
        """The holder starts a child carrying `cmd` in its argv (`bash -c 'read _' CMD`: it
        runs until the holder lets go), as a command Codex runs sits below its process:
        (the child's pid, when it started)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"run {cmd}\n")
        self.proc.stdin.flush()
        said = self.proc.stdout.readline().split()
        assert said[:1] == ["running"], said
        return int(said[1]), float(said[2])

    def release(self) -> None:
        self.proc.communicate("\n", timeout=10)  # a clean exit; its pipes closed

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


# -- the server's stream -----------------------------------------------------------------


class Stream:
    """The SSE stream read on a thread; each message kept with the time it arrived."""

    def __init__(self, url: str):
        self.url = url
        self.msgs: list[tuple[float, str, dict]] = []
        self.cond = threading.Condition()
        self.hello = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        if not self.hello.wait(20):
            raise AssertionError("the stream never said hello")

    def _read(self) -> None:
        cur: dict = {}
        with httpx.stream("GET", self.url + "api/stream", timeout=None) as r:
            for line in r.iter_lines():
                if self.stop.is_set():
                    return
                if line.startswith(":"):
                    continue
                if not line:
                    if "event" in cur:
                        with self.cond:
                            self.msgs.append((time.time(), cur["event"], json.loads(cur["data"])))
                            self.cond.notify_all()
                        if cur["event"] == "hello":
                            self.hello.set()
                    cur = {}
                    continue
                k, _, v = line.partition(": ")
                cur[k] = v

    def row(self, key: str, pred: Callable[[dict], bool], after: float, deadline: float) -> tuple[float, dict]:
        """The first board message after `after` with the row `key` matching `pred`."""
        with self.cond:
            while True:
                for t, kind, data in self.msgs:
                    if t < after or kind != "board":
                        continue
                    for r in data.get("sessions", ()):
                        if f"{r['source']}:{r['id']}" == key and pred(r):
                            return t, r
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(f"stream: no row {key} matching within the deadline")
                self.cond.wait(left)

    def close(self) -> None:
        self.stop.set()


def api_row(url: str, key: str) -> dict | None:
    for r in httpx.get(url + "api/sessions", timeout=10).json()["sessions"]:
        if f"{r['source']}:{r['id']}" == key:
            return r
    return None
