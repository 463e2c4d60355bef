"""Where a hosted run keeps its files, and how to reach a Unix socket whose path
is longer than the kernel allows in an address (108 bytes)."""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager

from huddle.io.folders import RUN_LOG as LOG_NAME
from huddle.io.folders import runs_dir as runs_dir

SOCK_NAME = "host.sock"
TRACE_NAME = "trace.jsonl"  # raw stdout lines as `huddle run` parsed them
HOST_ERR = "host.err"  # what the host said on stderr under `huddle run`
_MAX_ADDRESS = 100  # under the 108-byte sun_path, with room for the NUL
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def new_run_id() -> str:
    import secrets  # here: every board imports this module, few start a run

    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def check_name(name: str) -> str | None:
    """Why a run name cannot be a folder name, or None."""
    if not _NAME.fullmatch(name):
        return f"not a run name: {name!r} (letters, digits, '.', '_' and '-'; at most 100)"
    return None


def log_path(d: str) -> str:
    return os.path.join(d, LOG_NAME)


def sock_path(d: str) -> str:
    return os.path.join(d, SOCK_NAME)


@contextmanager
def unix_address(path: str):
    """An address for `path` that fits in sun_path: the path itself, or, when it is
    too long, the same file reached through /proc/self/fd/<its folder>."""
    if len(os.fsencode(path)) <= _MAX_ADDRESS:
        yield path
        return
    folder, name = os.path.split(os.path.abspath(path))
    fd = os.open(folder or "/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)
