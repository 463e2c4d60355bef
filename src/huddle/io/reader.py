"""Incremental line reader: knows bytes, not JSON.

Per file it remembers the offset of the last whole line it handed out, the file's
identity (device, inode, size, mtime, ctime) and a print of the bytes before that
offset (its head, four samples across it, the bytes just before it). A poll reads
only what was appended, in bounded chunks, and hands out whole lines; a half-written
last line waits (in memory) for its newline. A file that shrank, changed inode, or
whose print changed, or that was written to without growing (its mtime moved, its
size kept: rewritten in place), is read again from the start.

A last line without its newline waits while its file may still be written: it is
handed out once (`Cursor.given`) when the file has been quiet for the settle time
(`stamps.SETTLE_NS`) and no live process is said to write it (`LineReader.writing`, set
by the source that knows one: Claude's registry, Codex's writer lock). Some writers
never end their last line (Entire's copies of transcripts, a process killed mid-write);
one that still writes ends it, and a line that then turns out to be that same record
is not handed out again; one that grew instead (the piece was no record) has the file
read again from its start (RESET), so nothing made of the piece stays.

Lines are found in one pass (each byte is searched once, however long its line);
a line over LINE_MAX is skipped, its bytes not kept, and said once as a problem
(when it passes the cap: it may never end).
Holes in a sparse file inside such a line are skipped without reading them.

The cursor moves past each line before the line is handed out, so a consumer that
fails on a line never sees that line again. Files are opened per poll and closed
again (thousands of sessions must not hold thousands of descriptors), through
`safefile` (regular files only, never blocking; with `within`, never out of that
folder) and never mmapped: agents truncate and rewrite them.
"""

from __future__ import annotations

import errno
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

from . import safefile
from .stamps import SETTLE_NS

# Bytes per read: memory stays bounded by this plus the longest line. 256 kB, not 1 MB: a
# fresh 1 MB buffer per read cost its pages faulted in again (a full Claude parse: ~0.05 s
# of 3 s in pread); a read this size reuses memory just freed.
CHUNK = 1 << 18
LINE_MAX = 64 << 20  # a line longer than this is skipped (counted, its bytes dropped)
HEAD_KEEP = 256  # bytes of the file's head in its print
SAMPLES = 4  # samples spread over what was read, in the print
SAMPLE_LEN = 32
TAIL_KEEP = 64  # bytes just before the offset, in the print
HEAD = 4096  # a line's first bytes, all a `Cut` reads


def now_ns() -> int:
    """The clock a file's quiet is measured by (a test moves it on; touching the file's
    mtime instead would look like a rewrite in place)."""
    return time.time_ns()


SAME = "same"
GROWN = "grown"
RESET = "reset"
GONE = "gone"

_SEEK_DATA = getattr(os, "SEEK_DATA", None)


# A judge of a line where it lies in a buffer: (buf, start, end) -> pass it over (truthy)?
# A compiled bytes pattern's `match` is one: a C call per line, no Python frame.
Skip = Callable[[bytes, int, int], object]
# A judge of a line that spans reads by its first HEAD bytes (the line is longer): pass
# it over (true)? Only where that head decides it: the line is then never kept whole.
Cut = Callable[[bytes], bool]


class Judge(Protocol):
    """What tells a read which lines to pass over, as it learns from the lines it kept:
    its `skip` is read when the read starts and again after each line handed out."""

    @property
    def skip(self) -> Skip | None: ...


class Problems(Protocol):
    """Where a reader says a line was skipped (a Session has this method)."""

    def problem(self, path: str, offset: int, what: str) -> None: ...


class Cursor:
    """Where reading a file stands. Small and picklable (fast: by its fields), so a
    cache can keep thousands of them."""

    __slots__ = ("ctime_ns", "dev", "given", "ino", "long_at", "mtime_ns", "offset", "print", "size")

    def __init__(
        self,
        offset: int = 0,
        dev: int = 0,
        ino: int = 0,
        size: int = 0,
        mtime_ns: int = 0,
        ctime_ns: int = 0,
        print: int = 0,
        long_at: int = -1,
        given: int = 0,
    ) -> None:
        self.offset = offset  # end of the last whole line handed out (or skipped)
        self.dev = dev
        self.ino = ino
        self.size = size  # size at the last poll
        self.mtime_ns = mtime_ns
        self.ctime_ns = ctime_ns
        self.print = print  # crc32 of the head, samples and tail of the bytes before `offset`
        self.long_at = long_at  # >= 0: inside an over-long line that starts there (its bytes are dropped)
        self.given = given  # > 0: the line at `offset` was handed out without its newline, this long

    def __reduce__(self) -> tuple[type[Cursor], tuple[int, int, int, int, int, int, int, int, int]]:
        c = self
        return (Cursor, (c.offset, c.dev, c.ino, c.size, c.mtime_ns, c.ctime_ns, c.print, c.long_at, c.given))

    def __repr__(self) -> str:
        return f"Cursor(offset={self.offset}, ino={self.ino}, size={self.size})"


def fingerprint(fd: int, end: int) -> int:
    """The print of a file's first `end` bytes: a few small reads, whatever its size."""
    if end <= 0:
        return 0
    parts = [os.pread(fd, min(HEAD_KEEP, end), 0)]
    for k in range(1, SAMPLES + 1):
        at = end * k // (SAMPLES + 1)
        parts.append(os.pread(fd, min(SAMPLE_LEN, end - at), at))
    back = min(TAIL_KEEP, end)
    parts.append(os.pread(fd, back, end - back))
    return zlib.crc32(b"".join(parts)) | (1 << 32)  # never 0, which means "nothing read"


class LineReader:
    within: str | None = None  # a class default: readers from an older cache have none
    # Set by a source while a live process writes the file: its last line without a
    # newline is then a line still being written, never handed out (module docstring).
    writing = False

    def __init__(self, path: str, cursor: Cursor | None = None, within: str | None = None):
        self.path = path
        self.cursor = cursor if cursor is not None else Cursor()
        self.within = within  # the agent folder a symlink must not lead out of
        # a half-written last line, waiting for its newline (an older cache's may be a bytearray)
        self._pending: bytes | bytearray = b""
        self.resets = 0
        self.long_lines = 0  # lines skipped for their length

    # -- polling -------------------------------------------------------------------

    def check(self, st: os.stat_result | None = None) -> str:
        """Compare the file on disk with the cursor: SAME, GROWN, RESET or GONE.
        On RESET the cursor goes back to the start; the caller drops what it derived.
        Raises NotRegular when something else stands in the file's place."""
        c = self.cursor
        if st is None:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return GONE  # any other reason (a symlink loop, a folder closed) is the caller's error
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a folder in its place: the caller's error
            raise safefile.NotRegular(errno.EINVAL, f"{safefile.kind_of(st.st_mode)}, not a regular file", self.path)
        identity_changed = c.ino and (st.st_ino != c.ino or st.st_dev != c.dev)
        if identity_changed or st.st_size < c.offset:
            self._restart(st)
            return RESET
        if c.ino and st.st_size == c.size and st.st_mtime_ns == c.mtime_ns and st.st_ctime_ns == c.ctime_ns:
            return GROWN if self._tail_due(st) else SAME
        # Written to with its size kept: rewritten in place (an append grows it). The print
        # samples a few hundred bytes only, so an edit between them would go unseen. (A
        # chmod moves ctime alone; a cursor whose read raced an append keeps no mtime.)
        rewritten = st.st_size == c.size and c.mtime_ns > 0 and st.st_mtime_ns != c.mtime_ns
        if c.offset and (rewritten or not self._print_matches()):
            self._restart(st)
            return RESET
        if c.given and st.st_size > c.offset + c.given and not self._given_ended():
            # the last line handed out without its newline was a piece of one (its writer had
            # stalled): what was made of the piece is wrong, so the file is read again
            self._restart(st)
            return RESET
        c.dev, c.ino = st.st_dev, st.st_ino
        if st.st_size == c.offset + len(self._pending):
            c.size, c.mtime_ns, c.ctime_ns = st.st_size, st.st_mtime_ns, st.st_ctime_ns
            return GROWN if self._tail_due(st) else SAME
        return GROWN

    @property
    def tail_waits(self) -> bool:
        """A last line without its newline waits, not handed out (a source that knows
        whether a live process writes the file says so in `writing` then)."""
        return bool(self._pending) and self.cursor.given != len(self._pending)

    def _tail_due(self, st: os.stat_result) -> bool:
        """A last line without a newline, not yet handed out, in a file now settled."""
        return self.tail_waits and self._settled(st)

    def _settled(self, st: os.stat_result) -> bool:
        """Nobody writes the file: no live writer said, and quiet for the settle time."""
        return not self.writing and now_ns() - st.st_mtime_ns >= SETTLE_NS

    def _restart(self, st: os.stat_result) -> None:
        self.cursor = Cursor(dev=st.st_dev, ino=st.st_ino)
        self._pending = b""
        self.resets += 1

    def _given_ended(self) -> bool:
        """Whether the line handed out without its newline ends where it did (a newline,
        or a CR, follows it now)."""
        c = self.cursor
        try:
            fd = safefile.open_fd(self.path, self.within)
        except FileNotFoundError:
            return True  # gone between the stat and now: the next poll says so
        try:
            return os.pread(fd, 1, c.offset + c.given) in (b"\n", b"\r")
        except OSError:
            return True
        finally:
            os.close(fd)

    def _print_matches(self) -> bool:
        c = self.cursor
        try:
            fd = safefile.open_fd(self.path, self.within)
        except FileNotFoundError:
            return False  # replaced between the stat and now: read it again
        try:
            return fingerprint(fd, c.offset) == c.print
        except OSError:
            return False
        finally:
            os.close(fd)

    def lines(
        self,
        problems: Problems | None = None,
        skip: Skip | None = None,
        judge: Judge | None = None,
        cut: Cut | None = None,
    ) -> Iterator[tuple[int, bytes]]:
        """Yield (offset, line) for every whole line appended since the last call.
        The newline is not part of `line`. Reads in CHUNK pieces. An over-long line
        is said to `problems` (when given) instead. `skip(buf, start, end)`, when
        given, judges a line where it lies in the read buffer (its bytes are
        buf[start:end], perhaps with a trailing CR): a line it says true of is passed
        over, never copied out nor handed out (a usage-only read drops most of a file
        that way). `judge`, when given, says the `skip` in force, and may change it
        while it handles a line: its `skip` is read again after each line handed out.
        A passed-over line costs the newline's search and the judge's call alone.
        `cut`, when given, judges a line that runs past a read by its head (HEAD bytes):
        a line it says true of is passed over as it is read, its pieces neither kept nor
        joined (a usage-only read's long lines are tool outputs: kept, a few MB of
        chunks were held, copied into fresh pages and let go, for nothing). At the end
        of the file such a line leaves the cursor at its start: read again when whole."""
        if judge is not None:
            skip = judge.skip
        c = self.cursor
        # a last line handed out without its newline: where it starts, and how long it was
        given_at, given_len = (c.offset, c.given) if c.given else (-1, 0)
        try:
            fd = safefile.open_fd(self.path, self.within)
        except FileNotFoundError:
            return  # gone between the check and the read: the next poll says so
        # any other error (permissions, a FIFO, a folder) is the caller's to report
        try:  # unbuffered: positions are the descriptor's own (a hole is skipped with lseek)
            st = os.fstat(fd)
            # A line begun in an earlier chunk (or poll) is kept as its pieces, joined once
            # at its end: each byte of a long line is copied once (bytearray growth and
            # bytes(pend) + tail copied a 12 MB line three times, into fresh pages).
            parts: list[bytes | bytearray | memoryview] = [self._pending] if self._pending else []
            plen = len(self._pending)
            pos = c.offset + plen  # the next byte to read
            done = False
            dropping = -1  # >= 0: inside a line `cut` passed over, which starts there
            try:
                while True:
                    if c.long_at >= 0 and _SEEK_DATA is not None:
                        pos = self._skip_hole(fd, pos, st.st_size)
                    # (what fstat said is left, when less than a chunk: a whole chunk for a
                    # 40 kB file costs its allocation and shrinking; a file that grew since is
                    # read on, as it would be)
                    left = st.st_size - pos
                    chunk = os.pread(fd, left if 0 < left < CHUNK else CHUNK, pos)
                    if not chunk:
                        break
                    base = pos
                    pos += len(chunk)
                    i = 0
                    if dropping >= 0:  # its bytes are dropped to its end (the cursor waits at its start)
                        nl = chunk.find(b"\n")
                        if nl < 0:
                            if pos - dropping > LINE_MAX:  # said as an over-long line is
                                c.long_at, c.offset, dropping = dropping, pos, -1
                                self._too_long(problems)
                            continue
                        dropping = -1
                        i = nl + 1
                        c.offset = base + i
                    elif c.long_at >= 0:  # inside an over-long line: drop bytes to its end
                        nl = chunk.find(b"\n")
                        if nl < 0:
                            c.offset = pos
                            continue
                        c.long_at = -1  # its end: what follows is read again
                        i = nl + 1
                        c.offset = base + i
                    elif plen:  # a line begun in an earlier chunk (or poll)
                        nl = chunk.find(b"\n")
                        if nl < 0:
                            if plen + len(chunk) > LINE_MAX:
                                c.long_at, c.offset, parts, plen = c.offset, pos, [], 0
                                self._too_long(problems)
                            else:
                                parts.append(chunk)
                                plen += len(chunk)
                            continue
                        parts.append(memoryview(chunk)[:nl])
                        at, line = c.offset, b"".join(parts)
                        parts, plen = [], 0
                        i = nl + 1
                        c.offset = base + i
                        if line.endswith(b"\r"):
                            line = line[:-1]
                        if at == given_at:  # ended now: the record handed out already, or more
                            c.given, given_at = 0, -1
                            if len(line) == given_len:
                                line = b""
                        if line and not (skip is not None and skip(line, 0, len(line))):
                            yield at, line
                            if judge is not None:
                                skip = judge.skip
                    find = chunk.find
                    while True:
                        nl = find(b"\n", i)
                        if nl < 0:
                            break
                        if skip is not None and skip(chunk, i, nl):
                            i = nl + 1  # (the cursor catches up before a line is handed out, or below)
                            continue
                        at = base + i
                        line = chunk[i : nl - 1 if nl > i and chunk[nl - 1] == 13 else nl]  # without a CR
                        i = nl + 1
                        c.offset = base + i  # past the line (and those passed over) before it is handed out
                        if at == given_at:  # (its piece was not kept: read again from its start)
                            c.given, given_at = 0, -1
                            if len(line) == given_len:
                                continue
                        if line:
                            yield at, line
                            if judge is not None:
                                skip = judge.skip
                    c.offset = base + i  # past the lines passed over at the chunk's end
                    if i < len(chunk) - HEAD and cut is not None and cut(chunk[i : i + HEAD]):
                        dropping = base + i  # (its head holds no CR: more of the line follows it)
                    elif i < len(chunk):
                        parts, plen = [memoryview(chunk)[i:]], len(chunk) - i
                        if plen > LINE_MAX:
                            c.long_at, c.offset, parts, plen = c.offset, pos, [], 0
                            self._too_long(problems)
                done = True
                if plen and dropping < 0 and c.given != plen and self._settled(os.fstat(fd)):
                    # the file's last line, with no newline, in a file nobody writes: once
                    c.given = plen
                    line = b"".join(parts)
                    parts = [line]
                    if line.endswith(b"\r"):
                        line = line[:-1]
                    if line and not (skip is not None and skip(line, 0, len(line))):
                        yield c.offset, line
            finally:
                self._pending = b"".join(parts) if done and plen else b""
                c.print = fingerprint(fd, c.offset)
                if done:
                    c.size = max(st.st_size, c.offset + plen)
                    # bytes past the size fstat gave were appended as it was read: its mtime
                    # is older than them, so it cannot tell a rewrite (0: look at the print)
                    c.mtime_ns = st.st_mtime_ns if c.offset + plen <= st.st_size else 0
                    c.ctime_ns = st.st_ctime_ns
                    c.dev, c.ino = st.st_dev, st.st_ino
        finally:
            os.close(fd)

    def _skip_hole(self, fd: int, pos: int, size: int) -> int:
        """Inside an over-long line, a hole (zeros, no newline) is skipped unread."""
        try:
            data = os.lseek(fd, pos, _SEEK_DATA)  # type: ignore[arg-type]
        except OSError:  # ENXIO: only a hole up to the end
            data = max(pos, size)
        if data > pos:
            self.cursor.offset = data
        return max(pos, data)

    def _too_long(self, problems: Problems | None) -> None:
        """Said once, when the line passes the cap (it may never end: a 2 GB hole)."""
        self.long_lines += 1
        if problems is not None:
            problems.problem(self.path, self.cursor.long_at, f"a line over {LINE_MAX >> 20} MB: skipped, not kept")

    def read_all_new(self) -> list[tuple[int, bytes]]:
        return list(self.lines())


def read_tail(path: str, nbytes: int = 64 * 1024, within: str | None = None) -> list[tuple[int, bytes]]:
    """The whole lines in the last `nbytes` of a file (the first, cut one dropped),
    for cheap summaries of big files."""
    try:
        with safefile.open_regular(path, within) as f:
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


def read_span(path: str, offset: int, length: int, limit: int = 64 << 20, within: str | None = None) -> bytes:
    """Read `length` bytes at `offset` (a heavy piece of content, on demand)."""
    with safefile.open_regular(path, within) as f:
        f.seek(offset)
        return f.read(min(length, limit))
