"""The host's log: `D/events.jsonl`, append-only, one numbered entry per line.

    {"seq":7,"t":1796007850.123456,"kind":"stdout","json":{...the agent's line, as it was...}}
    {"seq":8,"t":1796007850.2,"kind":"stderr","text":"warning: ..."}

`seq` is first on every line (readers find it without parsing the rest) and goes
on from the last entry when a host starts again in the same folder. A line cut
short by a crash is dropped (truncated back to the last newline) when a new host
opens the log. One writer at a time (an exclusive flock); readers never lock.
Durability: every entry is written with one unbuffered write (readers see it at
once); the host fdatasyncs its own entries (host, started, stdin, stopping,
exited) straight away and streamed output at most every 0.2 s.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import time
from collections.abc import Iterator

import msgspec

from huddle.errors import HostingError
from huddle.io import private

_SEQ = re.compile(rb'\{"seq":(\d+)')
_encode = msgspec.json.encode
_READ = 1 << 18


class LogError(HostingError):
    """The log cannot be written: the host must stop the agent, not run it unlogged."""


class LogBusy(LogError):
    """Another host is writing this log."""


def seq_of(line: bytes) -> int | None:
    m = _SEQ.match(line)
    return int(m.group(1)) if m else None


def as_json(line: bytes) -> bytes | None:
    """The line itself if it is exactly one JSON value (valid UTF-8), else None."""
    try:
        line.decode("utf-8")
        msgspec.json.decode(line, type=msgspec.Raw)
    except (UnicodeDecodeError, msgspec.DecodeError):
        return None
    return line


def raw_json(entry: bytes) -> bytes | None:
    """The agent's own line kept under "json" in a log entry (no re-encoding)."""
    i = entry.find(b',"json":')
    if i < 0 or not entry.rstrip().endswith(b"}"):
        return None
    return entry[i + 8 : len(entry.rstrip()) - 1]


class EventLog:
    def __init__(self, path: str):
        self.path = path
        self.fd = -1
        self.last_seq = 0
        self.size = 0
        self.dropped = 0  # bytes of a cut-short line dropped at open
        self.regular = True

    def open(self) -> None:
        try:
            self.fd = private.create(self.path, os.O_RDWR | os.O_APPEND)  # 0600 when new
        except OSError as exc:
            raise LogError(f"cannot open {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            self.fd = -1
            raise LogBusy(f"another host is writing {self.path}") from None
        st = os.fstat(self.fd)
        self.regular = stat.S_ISREG(st.st_mode)
        if self.regular:
            self.size = st.st_size
            self._repair()
            self.last_seq = _last_seq(self.fd, self.size)

    def _repair(self) -> None:
        """Drop a last line without its newline: a crash cut it short."""
        if self.size == 0:
            return
        end = _last_newline_end(self.fd, self.size)
        if end < self.size:
            try:
                os.ftruncate(self.fd, end)
            except OSError as exc:
                raise LogError(f"cannot repair {self.path}: {exc.strerror}") from None
            self.dropped = self.size - end
            self.size = end

    def append(
        self, kind: str, fields: dict | None = None, raw: bytes | None = None, t: float | None = None
    ) -> tuple[int, bytes]:
        """Write one entry; return its seq and its bytes. `raw` is a JSON value kept
        as it is, under "json". Raises LogError; a partial write is undone."""
        seq = self.last_seq + 1
        parts = [b'{"seq":%d,"t":%.6f,"kind":' % (seq, time.time() if t is None else t), _encode(kind)]
        for k, v in (fields or {}).items():
            parts += (b',"', k.encode(), b'":', _encode(v))
        if raw is not None:
            parts += (b',"json":', raw)
        parts.append(b"}\n")
        data = b"".join(parts)
        self._write(data)
        self.last_seq = seq
        return seq, data

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                done += os.write(self.fd, view[done:])
        except OSError as exc:
            if done and self.regular:
                try:  # never leave a cut line behind us
                    os.ftruncate(self.fd, self.size)
                except OSError:
                    pass
            raise LogError(f"cannot write {self.path}: {exc.strerror}") from None
        self.size += len(data)

    def sync(self) -> None:
        if self.fd < 0:
            return
        try:
            os.fdatasync(self.fd)
        except OSError as exc:
            if self.regular:
                raise LogError(f"cannot write {self.path}: {exc.strerror}") from None

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.fdatasync(self.fd)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = -1


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just after the last newline (0 if there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - _READ)
        chunk = os.pread(fd, pos - start, start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def _last_seq(fd: int, size: int) -> int:
    """The seq of the last entry that has one, reading backwards from the end."""
    pos = size
    tail = b""
    while pos > 0:
        start = max(0, pos - _READ)
        tail = os.pread(fd, pos - start, start) + tail
        lines = tail.split(b"\n")
        # the first piece may be cut (unless we reached the start of the file)
        for line in reversed(lines if start == 0 else lines[1:]):
            s = seq_of(line)
            if s is not None:
                return s
        tail = lines[0] if start > 0 else b""
        pos = start
    return 0


def last_seq(path: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        return _last_seq(fd, st.st_size) if stat.S_ISREG(st.st_mode) else 0
    finally:
        os.close(fd)


def offset_of(fd: int, seq: int, size: int) -> int:
    """Byte offset of the first entry whose seq is >= `seq` (bisecting the file:
    seqs only grow). Returns a line start, or `size`."""
    lo, hi = 0, size
    while hi - lo > _READ:
        mid = (lo + hi) // 2
        found = _line_after(fd, mid, hi)
        if found is None:
            break
        start, s = found
        if s is None:
            break
        if s >= seq:
            hi = start
        else:
            lo = start + 1
    return _scan_for(fd, seq, lo, size)


def _line_after(fd: int, pos: int, limit: int) -> tuple[int, int | None] | None:
    """The first line starting at or after `pos` (and before `limit`), with its seq."""
    at = pos
    if pos > 0 and os.pread(fd, 1, pos - 1) != b"\n":
        while True:
            chunk = os.pread(fd, 4096, at)
            if not chunk:
                return None
            i = chunk.find(b"\n")
            if i >= 0:
                at += i + 1
                break
            at += len(chunk)
    if at >= limit:
        return None
    return at, seq_of(os.pread(fd, 32, at))


def _scan_for(fd: int, seq: int, pos: int, size: int) -> int:
    if pos > 0 and os.pread(fd, 1, pos - 1) != b"\n":
        found = _line_after(fd, pos, size + 1)
        if found is None:
            return size
        pos = found[0]
    for start, line in _lines(fd, pos):
        s = seq_of(line)
        if s is not None and s >= seq:
            return start
    return size


def _lines(fd: int, pos: int, limit: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(offset, line with its newline) for every whole line from `pos`."""
    buf = b""
    at = pos
    while True:
        chunk = os.pread(fd, _READ, pos)
        if not chunk:
            return
        pos += len(chunk)
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            yield at + start, buf[start : nl + 1]
            start = nl + 1
        at += start
        buf = buf[start:]
        if limit is not None and at >= limit:
            return


def read_entries(path: str, from_seq: int = 1, upto: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(seq, line) of every whole entry from `from_seq` (up to `upto`), straight from
    the file: what a reader gets when no host is running, and the host's replay."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return  # /dev/full, a fifo...: nothing was logged there
        for _, line in _lines(fd, offset_of(fd, from_seq, st.st_size)):
            s = seq_of(line)
            if s is None or s < from_seq:
                continue
            if upto is not None and s > upto:
                return
            yield s, line
    finally:
        os.close(fd)
