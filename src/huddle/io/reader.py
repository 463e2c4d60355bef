"""Incremental line reader: knows bytes, not JSON.

Per file it remembers the offset of the last whole line it handed out, the file's
identity and the last bytes before that offset. A poll reads only what was
appended, in bounded chunks, and hands out whole lines; a half-written last line
waits (in memory) for its newline. A file that shrank, changed inode, or whose
remembered bytes moved is read again from the start.

Files are opened per poll and closed again (thousands of sessions must not hold
thousands of descriptors) and never mmapped: agents truncate and rewrite them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 20  # bytes per read: memory stays bounded by this plus the longest line
TAIL_KEEP = 64  # bytes remembered before the offset, to notice a rewrite

SAME = "same"
GROWN = "grown"
RESET = "reset"
GONE = "gone"


class Cursor:
    """Where reading a file stands. Small and picklable (fast: by its fields), so a
    cache can keep thousands of them."""

    __slots__ = ("dev", "ino", "mtime_ns", "offset", "size", "tail")

    def __init__(
        self, offset: int = 0, dev: int = 0, ino: int = 0, size: int = 0, mtime_ns: int = 0, tail: bytes = b""
    ) -> None:
        self.offset = offset  # end of the last whole line handed out
        self.dev = dev
        self.ino = ino
        self.size = size  # size at the last poll
        self.mtime_ns = mtime_ns
        self.tail = tail  # the TAIL_KEEP bytes before `offset`

    def __reduce__(self) -> tuple[type[Cursor], tuple[int, int, int, int, int, bytes]]:
        return (Cursor, (self.offset, self.dev, self.ino, self.size, self.mtime_ns, self.tail))

    def __repr__(self) -> str:
        return f"Cursor(offset={self.offset}, ino={self.ino}, size={self.size})"


class LineReader:
    def __init__(self, path: str, cursor: Cursor | None = None):
        self.path = path
        self.cursor = cursor if cursor is not None else Cursor()
        self._pending = b""  # a half-written last line, waiting for its newline
        self._pending_at = 0
        self.resets = 0

    # -- polling -------------------------------------------------------------------

    def check(self, st: os.stat_result | None = None) -> str:
        """Compare the file on disk with the cursor: SAME, GROWN, RESET or GONE.
        On RESET the cursor goes back to the start; the caller drops what it derived."""
        c = self.cursor
        if st is None:
            try:
                st = os.stat(self.path)
            except OSError:
                return GONE
        identity_changed = c.ino and (st.st_ino != c.ino or st.st_dev != c.dev)
        if identity_changed or st.st_size < c.offset:
            self._restart(st)
            return RESET
        if st.st_size == c.size and st.st_mtime_ns == c.mtime_ns and c.ino:
            return SAME
        if c.offset and c.tail and not self._tail_matches():
            self._restart(st)
            return RESET
        c.dev, c.ino = st.st_dev, st.st_ino
        if st.st_size == c.size and st.st_size == c.offset + len(self._pending):
            c.mtime_ns = st.st_mtime_ns
            return SAME
        return GROWN

    def _restart(self, st: os.stat_result) -> None:
        self.cursor = Cursor(dev=st.st_dev, ino=st.st_ino)
        self._pending = b""
        self._pending_at = 0
        self.resets += 1

    def _tail_matches(self) -> bool:
        c = self.cursor
        try:
            with open(self.path, "rb") as f:
                f.seek(c.offset - len(c.tail))
                return f.read(len(c.tail)) == c.tail
        except OSError:
            return False

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """Yield (offset, line) for every whole line appended since the last call.
        The newline is not part of `line`. Reads in CHUNK pieces."""
        c = self.cursor
        try:
            f = open(self.path, "rb")  # noqa: SIM115 (a vanished file is told apart from other errors)
        except FileNotFoundError:
            return  # gone between the check and the read: the next poll says so
        with f:  # any other error (permissions, a directory) is the caller's to report
            st = os.fstat(f.fileno())
            start = c.offset + len(self._pending)
            f.seek(start)
            buf = self._pending
            buf_at = c.offset if self._pending else start
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                buf = buf + chunk if buf else chunk
                pos = 0
                while True:
                    nl = buf.find(b"\n", pos)
                    if nl < 0:
                        break
                    line = buf[pos:nl]
                    if line.endswith(b"\r"):
                        line = line[:-1]
                    if line:
                        yield buf_at + pos, line
                    pos = nl + 1
                if pos:
                    consumed_end = buf_at + pos
                    c.tail = buf[max(0, pos - TAIL_KEEP) : pos]
                    if len(c.tail) < TAIL_KEEP and consumed_end > len(c.tail):
                        c.tail = self._read_back(f, consumed_end)
                    c.offset = consumed_end
                    buf = buf[pos:]
                    buf_at = consumed_end
            self._pending = buf
            c.size = max(st.st_size, c.offset + len(buf))
            c.mtime_ns = st.st_mtime_ns
            c.dev, c.ino = st.st_dev, st.st_ino

    @staticmethod
    def _read_back(f: BinaryIO, end: int) -> bytes:
        here = f.tell()
        start = max(0, end - TAIL_KEEP)
        f.seek(start)
        data: bytes = f.read(end - start)
        f.seek(here)
        return data

    def read_all_new(self) -> list[tuple[int, bytes]]:
        return list(self.lines())


def read_tail(path: str, nbytes: int = 64 * 1024) -> list[tuple[int, bytes]]:
    """The whole lines in the last `nbytes` of a file (the first, cut one dropped),
    for cheap summaries of big files."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = max(0, size - nbytes)
            f.seek(start)
            data = f.read(size - start)
    except OSError:
        return []
    out = []
    pos = 0
    if start > 0:
        nl = data.find(b"\n")
        if nl < 0:
            return []
        pos = nl + 1
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl].rstrip(b"\r")
        if line:
            out.append((start + pos, line))
        pos = nl + 1
    return out


def read_span(path: str, offset: int, length: int, limit: int = 64 << 20) -> bytes:
    """Read `length` bytes at `offset` (a heavy piece of content, on demand)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(min(length, limit))
