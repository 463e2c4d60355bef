"""State kept between runs, one SQLite file per use under `$HUDDLE_HOME/cache` (never in
an agent's folder), derived and safe to delete.

Each entry is one session: its files' stamps (`head`), read and decoded on every run;
its `row` (what a view shows of it: a board row, usage sums), read and checked on every
run but decoded only where a view asks for it (at 5,000 sessions the board rows are
three quarters of what was decoded for a status that read one appended line); and its
handle's reading state (`blob`, a pickle), read only for the sessions that moved. A run writes back
only the entries that changed, in one transaction, so a crash leaves the last
commit whole. The entries carry checksums; a file that is not a database, a damaged
page, a checksum that does not match or a file made by another format version is
never trusted: the store starts empty and `note` says so in one line.
"""

from __future__ import annotations

import gc
import marshal
import os
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from typing import Any

from huddle import __version__
from huddle.io import private
from huddle.io.stamps import ident

ENTRIES = """CREATE TABLE IF NOT EXISTS entries(
  key TEXT PRIMARY KEY, version INTEGER, head BLOB, head_crc INTEGER, row BLOB, row_crc INTEGER,
  blob BLOB, blob_crc INTEGER)"""
# which session holds each model response (the last one written that holds it): a new
# session that copies another's history wakes that one alone (core.sleeping.wake_partners)
RESPONSES = "CREATE TABLE IF NOT EXISTS responses(rid TEXT PRIMARY KEY, key TEXT) WITHOUT ROWID"
BUSY_S = 5.0  # how long a run waits on another's write lock (never on a reader: _empty_log)
SCHEMA = f"CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v BLOB);\n{ENTRIES};\n{RESPONSES};"


class Damaged(Exception):
    """The store's file cannot be trusted."""


def is_damage(exc: sqlite3.Error) -> bool:
    """A fault of the file itself, as opposed to a lock another process holds."""
    msg = str(exc).lower()
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
        return False
    return isinstance(exc, sqlite3.DatabaseError)


# A process that answers once and exits (huddle.oneshot) holds the heads it loads to
# its end: they are loaded with the cyclic collector paused and frozen after (plain
# data, no cycle), so no collection walks them again. At 5,000 sessions collections over
# them cost a fifth of a `huddle status` that read one appended line. (Not in a process
# that lives on: a freeze keeps whatever garbage it finds with it.)
_one_answer = False


def one_answer() -> None:
    """This process answers once and exits (see `_one_answer`)."""
    global _one_answer
    _one_answer = True


def _crc(data: bytes) -> int:
    return zlib.crc32(data)


def entry_crc(head_crc: int, row_crc: int | None) -> int:
    """An entry's checksum as `Store.crcs` keeps it: its head's and its row's."""
    return head_crc if row_crc is None else (head_crc << 32) | row_crc


class Store:
    """Entries keyed by session key. `kind` and `identity` name what the file holds (a
    store made by another huddle version, or for other folders, starts again)."""

    def __init__(self, path: str, kind: str, fmt: int, identity: Any) -> None:
        self.path = path
        self.kind = kind
        self.made_by = (fmt, __version__)  # another format or huddle version: built again, said
        self.identity = identity  # other folders or settings: built again, silently
        self.note: str | None = None  # one line when the file on disk was not trusted
        self.db: sqlite3.Connection | None = None
        self.meta: dict[str, Any] = {}
        self.on_write: Callable[[], None] | None = None  # told before each write (what it vouched for may change)
        self.own: list[Any] | None = None  # its stamp after its own writes, no other between (core.answering)
        # each entry's checksum (head and row: `entry_crc`) as read or last written here:
        # what is kept beside the entries, worked out from their rows (usage.sums),
        # says the checksums it was worked out from, and is trusted only while they are the entries'
        self.crcs: dict[str, int] = {}
        self.read_only = False  # another use's file (open_to_read): read, never reset

    # -- opening ---------------------------------------------------------------------

    def open(self) -> None:
        """Open (or make) the file; a damaged or foreign one is replaced by an empty one."""
        if self.db is not None:
            return
        try:
            self._open()
        except (Damaged, sqlite3.Error, OSError) as exc:
            if isinstance(exc, Damaged) or (isinstance(exc, sqlite3.Error) and is_damage(exc)):
                self._say(f"{exc}" if isinstance(exc, Damaged) else f"damaged ({exc})")
                self.reset()
            else:  # busy beyond the timeout, or not writable: this run goes without it
                self.close()
                self.note = f"{self.path}: not used this time ({exc})"

    def _open(self) -> None:
        db = sqlite3.connect(private.database(self.path), timeout=BUSY_S, isolation_level=None, check_same_thread=False)
        self.db = db
        # No fsync: a store is what the session files say, each entry checksummed and
        # stamped with the files it read. A crash of the process leaves WAL whole; one of
        # the machine may leave an older state (its stamps say what to read again) or a
        # damaged file (said, built again). Syncing cost a cold `huddle usage` ~0.15 s
        # of waiting on the disk for a 4 MB index. (Set before WAL: the switch syncs too.)
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        meta = {k: _loads(v) for k, v in db.execute("SELECT k, v FROM meta")}
        mine = [self.kind, *self.made_by, self.identity]
        ident = meta.pop("identity", None)
        if ident is None:
            if db.execute("SELECT 1 FROM entries LIMIT 1").fetchone() is not None:
                raise Damaged("entries without an identity")
        elif ident != mine:
            if not isinstance(ident, list) or len(ident) != 4 or ident[0] != self.kind:
                raise Damaged(f"not a huddle {self.kind} store")
            if ident[1:3] != list(self.made_by):
                self._say(f"from another version (format {ident[1]}, huddle {ident[2]})")
            meta = {}
        if ident != mine:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DROP TABLE entries")  # (another version's may have other columns)
            db.execute(ENTRIES)
            db.execute("DELETE FROM responses")
            db.execute("DELETE FROM meta")
            db.execute("INSERT INTO meta VALUES ('identity', ?)", (marshal.dumps(mine),))
            db.execute("COMMIT")
        self.meta = meta

    def reset(self) -> None:
        """Start again from an empty file (the old one is removed, not repaired)."""
        self.close()
        if self.on_write is not None:
            self.on_write()
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(self.path + suffix)
            except OSError:
                pass
        self.meta = {}
        self.crcs = {}
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            self.close()
            self._say(f"cannot be written ({exc})")

    def open_to_read(self) -> bool:
        """Open another use's file as it stands, to read only: never made, reset, written
        or checkpointed here. False (closed) unless it is this kind, version and identity."""
        from urllib.parse import quote

        if os.path.exists(self.path):
            try:
                url = f"file:{quote(self.path)}?mode=ro"
                self.db = sqlite3.connect(url, uri=True, timeout=BUSY_S, isolation_level=None, check_same_thread=False)
                got = self.db.execute("SELECT v FROM meta WHERE k = 'identity'").fetchone()
                if got is not None and _loads(got[0]) == [self.kind, *self.made_by, self.identity]:
                    self.read_only = True
                    return True
            except sqlite3.Error:
                pass
        self.close()
        return False

    def stamp(self) -> list[Any]:
        """The file's and its write-ahead log's stamps: taken before a read and again
        after, equal if no one wrote in between."""
        return [ident(self.path), ident(self.path + "-wal")]

    def close(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except sqlite3.Error:
                pass
            self.db = None

    def _say(self, what: str) -> None:
        line = f"{self.path}: {what}; read again from the session files"
        self.note = line if self.note is None else self.note

    def _damaged(self, exc: Exception) -> None:
        """A read or write found the file damaged: say it once, start again (another
        use's file: left to its own run)."""
        if self.read_only:
            self.close()
            return
        self._say(f"damaged ({exc})")
        self.reset()

    # -- reading ---------------------------------------------------------------------

    def heads(self, keys: Iterable[str] | None = None) -> dict[str, tuple[int, Any, bytes | None]]:
        """Every entry's (version, head, row as marshalled or None), blobs left unread; or
        only these `keys`' (those stored). An entry whose head's or row's checksum fails
        is left out (its session is read again)."""
        rows = self._head_rows(keys)
        if rows is None:
            return {}
        out: dict[str, tuple[int, Any, bytes | None]] = {}
        bad = 0
        hold = _one_answer
        collecting = gc.isenabled()
        if hold:
            gc.disable()
        try:
            for key, version, head, crc, row, row_crc in rows:
                if head is None or _crc(head) != crc or (row is not None and _crc(row) != row_crc):
                    bad += 1
                    continue
                try:
                    out[key] = (version, marshal.loads(head), row)
                except (EOFError, ValueError, TypeError):
                    bad += 1
                else:
                    self.crcs[key] = entry_crc(crc, row_crc if row is not None else None)
        finally:
            if hold:
                gc.freeze()
                if collecting:
                    gc.enable()
        if bad:
            self._say(f"{bad} damaged entr{'y' if bad == 1 else 'ies'}")
        return out

    def _head_rows(self, keys: Iterable[str] | None) -> list[Any] | None:
        """The entries' rows but their blobs (all, or these `keys`'); None without a
        database or on an error."""
        if self.db is None:
            return None
        q = "SELECT key, version, head, head_crc, row, row_crc FROM entries"
        try:
            if keys is None:
                return self.db.execute(q).fetchall()
            wanted, rows = list(keys), []
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                rows += self.db.execute(f"{q} WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
            return rows
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                self._damaged(exc)
            return None

    def keys(self) -> list[str]:
        """Every entry's key (nothing decoded)."""
        if self.db is None:
            return []
        try:
            return [k for (k,) in self.db.execute("SELECT key FROM entries")]
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                self._damaged(exc)
            return []

    def blobs(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The blobs of these entries (those whose checksum holds)."""
        if self.db is None:
            return {}
        keys = list(keys)
        out: dict[str, bytes] = {}
        try:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                q = f"SELECT key, blob, blob_crc FROM entries WHERE key IN ({','.join('?' * len(part))})"
                for key, blob, crc in self.db.execute(q, part):
                    if blob is not None and _crc(blob) == crc:
                        out[key] = blob
                    else:
                        self._say("a damaged entry")
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                self._damaged(exc)
            return {}
        return out

    def holders(self, rids: Iterable[str]) -> set[str] | None:
        """The keys of the sessions written last holding any of these responses (`write`'s
        `responses`); None when the file cannot say."""
        if self.db is None:
            return None
        rids = list(rids)
        out: set[str] = set()
        try:
            for i in range(0, len(rids), 500):
                part = rids[i : i + 500]
                q = f"SELECT DISTINCT key FROM responses WHERE rid IN ({','.join('?' * len(part))})"
                out.update(k for (k,) in self.db.execute(q, part))
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                self._damaged(exc)
            return None
        return out

    def all_blobs(self) -> Iterator[tuple[str, bytes]]:
        """Every entry's blob, in key order (a whole load)."""
        if self.db is None:
            return
        try:
            rows = self.db.execute("SELECT key, blob, blob_crc FROM entries").fetchall()
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                self._damaged(exc)
            return
        for key, blob, crc in rows:
            if blob is not None and _crc(blob) == crc:
                yield key, blob

    # -- writing ---------------------------------------------------------------------

    def write(
        self,
        put: dict[str, tuple[int, Any, bytes | None, bytes]],
        drop: Iterable[str] = (),
        meta: dict[str, Any] | None = None,
        heads: dict[str, tuple[int, Any, bytes | None]] | None = None,
        responses: dict[str, list[str]] | None = None,
    ) -> None:
        """In one transaction: `put` key -> (version, head, row, blob); `heads` key ->
        (version, head, row) updates all but the blob; `drop` removes; `responses` key ->
        the response ids its session holds (`holders`). A row is given as marshalled
        (`dumps`; None: none)."""
        if self.db is None:
            return
        if self.on_write is not None:
            self.on_write()
        try:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            chained = self.own is not None and self.stamp() == self.own  # (the lock held: no other writes now)
            try:
                drop = list(drop)
                crcs = self._write_entries(db, put, heads or {}, drop, responses or {})
                for k, v in (meta or {}).items():
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, marshal.dumps(v)))
                    self.meta[k] = v
                db.execute("COMMIT")
                _empty_log(db)
                self.own = self.stamp() if chained else None
                self.crcs.update(crcs)
                for key in drop:
                    self.crcs.pop(key, None)
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                self._damaged(exc)
            elif self.note is None:
                self.note = f"{self.path}: not written this time ({exc})"

    @staticmethod
    def _write_entries(
        db: sqlite3.Connection,
        put: dict[str, tuple[int, Any, bytes | None, bytes]],
        heads: dict[str, tuple[int, Any, bytes | None]],
        drop: list[str],
        responses: dict[str, list[str]],
    ) -> dict[str, int]:
        """The entries' statements of a write (in its transaction); their checksums."""
        crcs: dict[str, int] = {}
        for key, (version, head, row, blob) in put.items():
            hb = marshal.dumps(head)
            hc, rc = _crc(hb), (_crc(row) if row is not None else None)
            crcs[key] = entry_crc(hc, rc)
            db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, version, hb, hc, row, rc, blob, _crc(blob)),
            )
        for key, (version, head, row) in heads.items():
            hb = marshal.dumps(head)
            hc, rc = _crc(hb), (_crc(row) if row is not None else None)
            crcs[key] = entry_crc(hc, rc)
            db.execute(
                "UPDATE entries SET version=?, head=?, head_crc=?, row=?, row_crc=? WHERE key=?",
                (version, hb, hc, row, rc, key),
            )
        for i in range(0, len(drop), 500):
            part = drop[i : i + 500]
            db.execute(f"DELETE FROM entries WHERE key IN ({','.join('?' * len(part))})", part)
        # in one statement, in the table's order: a B-tree filled in order, not a page split
        # at every other row (a cold `huddle usage` writes 64,000: 0.14 -> 0.09 s). The sort
        # is stable: of two sessions holding a response, the one written last stays.
        held = [(r, key) for key, rids in responses.items() for r in rids]
        held.sort(key=itemgetter(0))
        db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)", held)
        return crcs


def _empty_log(db: sqlite3.Connection) -> None:
    """Copy the write-ahead log into the file and empty it, if no reader holds it (never
    waited for). A run that answers once exits with its connection open: the log it
    leaves is read again by the next process's recovery, which cannot know its frames
    were copied back, so that process's checkpoint copies them all again, and so on at
    every run: one `status` after an append copied a 39 MB log, 9,500 pages, each time."""
    try:
        db.execute("PRAGMA busy_timeout=0")
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            db.execute(f"PRAGMA busy_timeout={int(BUSY_S * 1000)}")
    except sqlite3.OperationalError:
        pass  # (busy: the next write empties it)


def _loads(v: Any) -> Any:
    try:
        return marshal.loads(v)
    except (EOFError, ValueError, TypeError):
        return None
