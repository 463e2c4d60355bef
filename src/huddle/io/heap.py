"""A long-lived process's large blocks given back to the system when freed.

glibc serves a block of 128 kB or more with its own mapping, returned at free; but once
such a block is freed it raises that threshold to the block's size (up to 32 MB), so the
next ones come from the heap and their pages stay in the process when freed. A server
that reads a session whole for a page (lines of 12 MB: a big command's output, a pasted
image) then keeps the peak of that read for its life: 1,000 pages opened on a 1.3 GB
home left it at 124 MB; with the threshold held at 128 kB, 96 MB (bench/bench_pages.py).
Elsewhere (musl, macOS) there is nothing to set and nothing is done."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_MMAP_THRESHOLD = -3  # (glibc's malloc.h)
THRESHOLD = 128 * 1024  # glibc's own starting value, kept from moving


def return_large_blocks() -> bool:
    """Hold glibc's mapping threshold where it starts; False where there is none."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD))
    except (OSError, AttributeError):  # (a libc without mallopt: musl)
        return False
