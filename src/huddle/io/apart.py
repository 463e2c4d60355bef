"""One function of huddle's run in a fresh Python process of its own process group.

A long-lived server reads what leaves memory behind (a first read, a first search-index
build) in a child: what the child's heap kept goes when it exits. The child is in a
process group of its own from its first instruction, so Ctrl+C at the terminal reaches
only the server, which ends the child's whole group (it and the workers it forks) when
it stops; a child that met Ctrl+C while importing printed a traceback. Standard library
only, and no multiprocessing: its spawn start cannot make a group.

The child is told (module, function, argument) as a pickle on its stdin (its length
first); it calls `function(argument, say)`, where `say(line)` reaches the parent's
`heard`, and its last line is its result: "done" alone, or "done <one line saying what
went wrong>". The parent holds the child's stdin open while it waits: a parent killed
outright (SIGKILL, the OOM killer, `os._exit` past its exit deadline) closes it, and the
child then ends its whole group at once, instead of reading on for nobody.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

CHILD = "from huddle.io.apart import child_main; child_main()"
DONE = "done"


def run_apart(
    module: str,
    function: str,
    argument: Any,
    stopping: Callable[[], bool],
    heard: Callable[[str], None] | None = None,
) -> str | None:
    """Run `module.function(argument, say)` in a child; None when it is done, else one
    line saying why not ("stopped": `stopping()` said so, and the child's group ended)."""
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # (it says what went wrong on its last line)
            process_group=0,
        )
    except OSError as exc:
        return f"could not start it ({exc.strerror or exc})"
    assert child.stdin is not None and child.stdout is not None
    result: str | None = "ended without a word"
    try:
        try:
            told = pickle.dumps((module, function, argument))
            child.stdin.write(len(told).to_bytes(8, "little") + told)
            child.stdin.flush()  # (held open, not closed: the child's lifeline)
        except OSError:
            pass  # (it ended at once: its exit says so)
        result = _listen(child, stopping, heard)
        return result
    finally:
        try:
            child.stdin.close()  # (the child's lifeline: a child still working ends its group)
        except OSError:
            pass
        if child.poll() is None and result is not None:
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except OSError:
                pass
        child.wait()
        child.stdout.close()


def _listen(
    child: subprocess.Popen[bytes], stopping: Callable[[], bool], heard: Callable[[str], None] | None
) -> str | None:
    """The child's lines until it exits (its last word: None when done) or `stopping()`."""
    assert child.stdout is not None
    result: str | None = "ended without a word"
    with selectors.DefaultSelector() as sel:
        sel.register(child.stdout, selectors.EVENT_READ)
        while True:
            if stopping():
                return "stopped"
            if not sel.select(0.2):
                continue
            line = child.stdout.readline().decode("utf-8", "replace").rstrip("\n")
            if not line:
                return result  # its end: it exited
            if line == DONE or line.startswith(DONE + " "):
                result = line[len(DONE) + 1 :] or None
            elif heard is not None:
                heard(line)


def child_main() -> None:
    """The child's side (CHILD)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (its group is its own: only a kill of the server's)
    out = sys.stdout

    def say(line: str) -> None:
        out.write(line.replace("\n", " ") + "\n")
        out.flush()

    note = ""
    finished = threading.Event()
    try:
        import importlib

        module, function, argument = pickle.loads(_told())
        threading.Thread(target=_lifeline, args=(finished,), daemon=True).start()
        getattr(importlib.import_module(module), function)(argument, say)
    except Exception as exc:
        note = f" {type(exc).__name__}: {exc}"
    finished.set()
    say(DONE + note)


def _told() -> bytes:
    """What the parent wrote on stdin: its length (8 bytes), then the pickle."""
    return _exactly(int.from_bytes(_exactly(8), "little"))


def _exactly(n: int) -> bytes:
    data = b""
    while len(data) < n:
        piece = os.read(0, n - len(data))
        if not piece:
            raise EOFError("the parent said nothing")
        data += piece
    return data


def _lifeline(finished: threading.Event) -> None:
    """Wait for the end of stdin: the parent closed it, or was killed. A child still at
    its work then ends its whole group (itself and the workers it forked): nobody waits
    for what it would read."""
    try:
        while os.read(0, 1 << 16):
            pass
    except OSError:
        pass
    if not finished.is_set():
        os.killpg(0, signal.SIGTERM)  # (as the parent ends it: the default, an end at once)
