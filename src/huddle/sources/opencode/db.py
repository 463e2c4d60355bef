"""OpenCode's SQLite database, opened so that huddle never writes a byte to it.

OpenCode keeps every project's sessions in one database in WAL mode: `opencode.db`
(often only 4 KB: the data sits in `opencode.db-wal` until a checkpoint) and the
wal-index `opencode.db-shm`. How SQLite's ways of opening treat those files (each
checked on copies of the samples, fingerprinted before and after; see the tests):

- read-write (a plain `sqlite3.connect`): closing the last connection checkpoints the
  WAL into the database and deletes `-wal` and `-shm`. Never.
- `mode=ro`: no writes to the database or the WAL, but a reader still writes the
  wal-index: its read marks, and the whole index when it rebuilds it, under a write
  lock on `-shm`; and with no `-wal`/`-shm` present it creates both.
- `immutable=1`: no locks and no `-shm`, but it ignores the WAL entirely: on a live
  OpenCode database it sees an empty or stale file. Only right when no `-wal` exists.
- `mode=ro&readonly_shm=1`: opens `-shm` read-only. With a writer running, SQLite maps
  its wal-index read-only and takes only read locks; with none, it builds a private
  index in memory from the WAL. Nothing is written. With `-shm` missing it refuses
  (and it would create an empty `-wal` if that were missing, so it is never asked to).

So: `-wal` and `-shm` present -> `mode=ro&readonly_shm=1`; no `-wal` -> `immutable=1`
(the file is the whole database); `-wal` without `-shm` (a crash) or a database file
of 0 bytes (SQLite would delete a `-wal` beside it) -> a private copy in a temporary
folder. Two windows are left: OpenCode deleting its `-wal` between the check and the
open (only at its exit; SQLite would then create an empty one), and, kept to microseconds
by reading at once (`_first_read`): the database file emptied in place between the
check and SQLite's first read (SQLite would delete the WAL; no agent empties its database).

What a row holds is OpenCode's to write and anyone's to damage: a text column that is
not UTF-8 (a cut emoji) made `fetchall` fail for the whole query, so every text column
is decoded with replacement characters instead (`_text`), and the big `data` columns
are asked for as bytes, each row decoded on its own (handle.py). A database file, WAL
or shared-memory index that is a symlink out of the database's folder is not followed.

A connection in WAL mode holds a read lock on the database for as long as it is open,
which keeps OpenCode from checkpointing at exit: connections are opened for one
refresh and closed right after. `busy_timeout` is short: a locked database costs
this refresh (one line), never a wait.

The connection is shared by threads (the watcher's scans close it; the search index's
thread and exports read rows back with it): every use and the close hold `Database.lock`,
since closing a sqlite3 connection under another thread's statement is a use-after-free
in CPython's module.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

from huddle.errors import InputError
from huddle.io import safefile

BUSY_MS = 200
ROW_MAX = 8 << 20  # a row's data past this is read without its heavy fields (handle.py)
WAL_HEAD = 32  # the WAL header: magic, page size, checkpoint sequence, salts
# The wal-index header at the start of `-shm`: its two copies of WalIndexHdr (each
# commit's change counter, last frame, page count, checksums), not the read marks after
# them, which readers move.
SHM_HEAD = 96


class DbError(InputError):
    """The database cannot be read now: one line naming the file and why."""


def stamp(path: str) -> tuple[Any, ...] | None:
    """What moves whenever OpenCode commits anything, read without SQLite: the database
    file's and the WAL's identity, size and mtime, whether they can be read (a chmod:
    not ctime, which SQLite itself moves when root opens a WAL), the WAL header (its
    salts change when the WAL restarts) and the wal-index header. A commit writes its
    frames to the WAL first and makes them visible in the wal-index after (after an
    fsync): a list read between the two sees the rows before it under the WAL's final
    size, and the index's header is the one thing that moves after it. None when there
    is no database; an OSError when it cannot be looked at (its folder closed)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    # (the WAL's part follows, from [4]: None when there is none; readability goes last)
    out: tuple[Any, ...] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    try:
        with safefile.open_regular(path + "-wal") as f:  # a FIFO in its place must not block
            wst = os.fstat(f.fileno())
            head = f.read(WAL_HEAD)
        out += (wst.st_ino, wst.st_size, wst.st_mtime_ns, head)
    except FileNotFoundError:
        out += (None,)
    except OSError as exc:  # (there, but not to be read: says so until it can be)
        out += (None, type(exc).__name__)
    try:
        with safefile.open_regular(path + "-shm") as f:  # (read, never mapped: the writer maps it)
            out += (f.read(SHM_HEAD),)
    except OSError:
        out += (None,)
    return (*out, os.access(path, os.R_OK))


class Database:
    """One OpenCode database: a connection per refresh, strictly read-only."""

    def __init__(self, path: str):
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._copy: str | None = None
        self.opened_at = 0.0
        self.opens = 0  # for the benches and tests: how often SQLite was asked
        self.lock = threading.RLock()  # held for every use of the connection and its close

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["_conn"], d["_copy"] = None, None
        del d["lock"]
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self.lock = threading.RLock()

    @property
    def is_open(self) -> bool:
        return self._conn is not None and self._pid == os.getpid()

    def conn(self) -> sqlite3.Connection:
        """The connection (opened when wanted). Use it only while holding `lock`."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None  # one inherited across a fork is the parent's: leave it alone
        self._conn = self._open()
        self._pid = os.getpid()
        self.opened_at = time.monotonic()
        return self._conn

    def close(self) -> None:
        """Close once no thread is in a query (the next query opens it again)."""
        with self.lock:
            c, self._conn = self._conn, None
            if c is not None and self._pid == os.getpid():
                try:
                    c.close()
                except sqlite3.Error:
                    pass
            if self._copy is not None:
                shutil.rmtree(self._copy, ignore_errors=True)
                self._copy = None

    def _open(self) -> sqlite3.Connection:
        path = self.path
        try:
            size = os.stat(path).st_size
            folder = os.path.dirname(os.path.abspath(path))
            for suffix in ("", "-wal", "-shm"):  # SQLite opens them by name: a FIFO would block it
                with contextlib.suppress(FileNotFoundError):
                    if os.path.islink(path + suffix) and not safefile.inside(path + suffix, folder):
                        raise safefile.Escapes(0, "a symlink out of the agent's folder, not followed", path + suffix)
                    safefile.regular(path + suffix)
                    if not os.access(path + suffix, os.R_OK):  # SQLite would read around it, or not at all
                        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path + suffix)
        except OSError as exc:
            raise DbError(f"{exc.filename or path}: cannot read ({exc.strerror or exc})") from None
        has_wal = os.path.exists(path + "-wal")
        has_shm = os.path.exists(path + "-shm")
        if has_wal and has_shm and size > 0:
            uri = _uri(path, "mode=ro&readonly_shm=1")
        elif not has_wal and size > 0:
            uri = _uri(path, "mode=ro&immutable=1")
        elif size == 0 and not has_wal:
            raise DbError(f"{path}: empty database file")
        else:
            uri = self._private_copy()
        self.opens += 1
        try:
            c = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            c.execute("PRAGMA query_only = ON")
            c.text_factory = _text
        except sqlite3.Error as exc:
            raise DbError(f"{path}: cannot open read-only ({exc})") from None
        if has_wal and has_shm:
            self._first_read(c)
        return c

    def _first_read(self, c: sqlite3.Connection) -> None:
        """The first read, at once and only on a database file that still has a header: at
        its first read SQLite deletes a WAL beside a database file it finds empty, even
        read-only, so the window between looking and reading is kept to microseconds."""
        try:
            emptied = os.stat(self.path).st_size == 0
        except OSError:
            emptied = True
        if emptied:
            c.close()
            raise DbError(f"{self.path}: emptied while opening; read again next time")
        try:
            c.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            c.close()
            raise _db_error(self.path, exc) from None

    def _private_copy(self) -> str:
        """A WAL without its index (or beside an empty file): SQLite would have to write to
        read it, so read a copy of both in a folder of our own."""
        d = tempfile.mkdtemp(prefix="huddle-opencode-")
        try:
            for suffix in ("", "-wal"):
                if os.path.exists(self.path + suffix):
                    shutil.copyfile(self.path + suffix, os.path.join(d, "opencode.db" + suffix))
        except OSError as exc:
            shutil.rmtree(d, ignore_errors=True)
            raise DbError(f"{self.path}: cannot copy to read ({exc.strerror or exc})") from None
        self._copy = d
        return _uri(os.path.join(d, "opencode.db"), "mode=ro")

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            with self.lock:
                return self.conn().execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _db_error(self.path, exc) from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Queries that see one moment of the database (a read transaction, kept short;
        the lock is held throughout, so no close falls inside it)."""
        with self.lock:
            self.query("BEGIN")
            try:
                yield
            finally:
                try:
                    self.conn().execute("COMMIT")
                except sqlite3.Error:
                    pass

    def tables(self) -> set[str]:
        return {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)


def _db_error(path: str, exc: sqlite3.DatabaseError) -> DbError:
    """A query's failure in one line naming the file."""
    msg = str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        if "locked" in msg or "busy" in msg:
            return DbError(f"{path}: locked by another process ({msg}); read again next time")
        return DbError(f"{path}: {msg}")
    return DbError(f"{path}: not readable ({exc})")


def _text(raw: bytes) -> str:
    """A text column: UTF-8, or what is readable of it (a cut emoji costs its bytes, not
    the query: sqlite3's own decoding raises for the whole fetch)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def _uri(path: str, params: str) -> str:
    return "file:" + urllib.parse.quote(os.path.abspath(path)) + "?" + params
