"""The search index on disk: one SQLite file under $HUDDLE_HOME/cache (never in an
agent's folder), derived, safe to delete.

- `fts` is a contentless FTS5 table (the words, no copy of the text: about a tenth
  of the transcripts' size); `stem` holds the messages' words again, stemmed by
  FTS5's porter tokenizer (tool pieces are not stemmed). Their rowid is the event's time in milliseconds shifted
  left 21 bits plus a counter, so "newest first" is FTS5's own rowid order (it stops
  after `limit` hits) and `--since` is a rowid range.
- `rows` says where each indexed event lives (file, offset, length, which event of
  its record, kind, agent): snippets are cut from the record read back.
- `files` holds each transcript file's indexed length and the bytes before it; a
  file rewritten in place gets a new id and its old rows go dead (SQLite 3.40 cannot
  delete from a contentless table). When dead rows pile up the index is rebuilt.
- Writers take the write lock first (BEGIN IMMEDIATE) and read what is indexed
  inside it, so a server and a command indexing at once never index twice.
- In a server one connection serves the indexing thread and the request threads:
  every use of it, and its close, holds `Store.lock`. Closing a sqlite3 connection
  while another thread steps a statement on it is a use-after-free in CPython's
  module (it crashed the suite once), so a close waits for the statement to end.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence

from huddle.errors import InputError
from huddle.io import private

FORMAT = "huddle-search/2"  # 2: a stemmed table beside the exact one; CJK characters as words
TAIL = 64  # bytes before a file's indexed length, to notice a rewrite
COUNTER_BITS = 21
MS_MAX = (1 << 42) - 1
REBUILD_DEAD = 0.3  # rebuild when this share of the rows is dead (and there are many)
REBUILD_MIN = 50_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE IF NOT EXISTS sessions(
  id INTEGER PRIMARY KEY, key TEXT UNIQUE, source TEXT, sid TEXT, project TEXT,
  version INTEGER, absent INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS files(
  id INTEGER PRIMARY KEY, session INTEGER, path TEXT, done INTEGER NOT NULL DEFAULT 0,
  tail BLOB, dead INTEGER NOT NULL DEFAULT 0, rows INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS files_live ON files(session, path) WHERE dead = 0;
CREATE TABLE IF NOT EXISTS agents(id INTEGER PRIMARY KEY, session INTEGER, agent TEXT, UNIQUE(session, agent));
CREATE TABLE IF NOT EXISTS rows(
  rowid INTEGER PRIMARY KEY, file INTEGER, off INTEGER, len INTEGER, nth INTEGER, kind INTEGER, agent INTEGER);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
  prompt, say, think, tool, content='', tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS stem USING fts5(
  prompt, say, think, tool, content='', tokenize='porter unicode61 remove_diacritics 2');
"""
TABLES = ("fts", "stem")  # the words as written; the same words stemmed (messages only, not tool pieces)
# Every commit puts its words in a new segment, and FTS5 merges segments of a level once
# there are `automerge` of them (4 by default): a first build of a long history commits
# thousands of times, and at 4 its merges rewrote the index many times over (3.6 GB
# written for a 148 MB index). At 16: 2.0 GB (with the checkpoints below), a quarter
# less time, an index 12% larger, a query ~1 ms slower.
AUTOMERGE = 16
# Pages of write-ahead log between checkpoints (SQLite's 1,000 copied the pages a build
# rewrites over and over into the file each 4 MB, each with an fsync); the log is cut
# back to JOURNAL_LIMIT once copied, so it does not stay that large on disk.
CHECKPOINT_PAGES = 10_000
JOURNAL_LIMIT = 8 << 20


class Damaged(InputError):
    """The index file is not a usable database: delete it and build again."""


class Reset(Damaged):
    """The index was deleted (by another thread) while a writer was part way through:
    what it was writing belongs to the old file, so it starts over."""


def index_path(huddle_home: str, folders: dict[str, str]) -> str:
    """One index per set of agent folders (a demo or a test home never clobbers yours)."""
    digest = hashlib.sha1(settings_key(folders).encode()).hexdigest()[:12]
    return os.path.join(huddle_home, "cache", f"search-{digest}.sqlite")


def is_damage(exc: sqlite3.Error) -> bool:
    """A fault of the file itself (as opposed to a lock held by another process)."""
    msg = str(exc).lower()
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
        return False
    return isinstance(exc, sqlite3.DatabaseError)


def rowid_for(t_ms: int, counter: int) -> int:
    return (min(max(t_ms, 0), MS_MAX) << COUNTER_BITS) | (counter & ((1 << COUNTER_BITS) - 1))


def ms_of(rowid: int) -> int:
    return rowid >> COUNTER_BITS


class Store:
    def __init__(self, path: str, settings_key: str):
        self.path = path
        self.settings_key = settings_key
        self.db: sqlite3.Connection | None = None
        self.identity: tuple[int, int] | None = None  # (device, inode) of the file opened
        self.resets = 0  # how many times the file was deleted to be built again
        self._agents: dict[tuple[int, str], int] = {}
        # held for every use of `db` and for its close (re-entrant: a write calls helpers)
        self.lock = threading.RLock()

    # -- life --------------------------------------------------------------------------

    def open(self) -> sqlite3.Connection:
        """The connection, opened when first wanted. Use it only while holding `lock`."""
        with self.lock:
            if self.db is not None:
                return self.db
            return self._open()

    def _open(self) -> sqlite3.Connection:
        private.folder(os.path.dirname(self.path))
        try:
            db = self._connect()
        except sqlite3.Error as exc:
            if not is_damage(exc):
                raise
            self.remove()
            db = self._connect()
        self.db = db
        st = os.stat(self.path)
        self.identity = (st.st_dev, st.st_ino)
        return db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(private.database(self.path), isolation_level=None, check_same_thread=False, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
            db.execute(f"PRAGMA journal_size_limit={JOURNAL_LIMIT}")
            db.executescript(SCHEMA)
            got = dict(db.execute("SELECT k, v FROM meta").fetchall())
            if got.get("format") != FORMAT or got.get("settings") != self.settings_key:
                if got:
                    db.close()
                    self.remove()
                    return self._connect()
                with self.write(db):
                    db.executemany(
                        "INSERT OR REPLACE INTO meta(k, v) VALUES (?, ?)",
                        [("format", FORMAT), ("settings", self.settings_key), ("counter", "0"), ("dead", "0")],
                    )
                    for t in TABLES:  # (kept in the table's own config: a new index's)
                        db.execute(f"INSERT INTO {t}({t}, rank) VALUES ('automerge', ?)", (AUTOMERGE,))
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        """Close the connection once no thread is using it (the next use opens it again)."""
        with self.lock:
            if self.db is not None:
                self.db.close()
                self.db = None
            self.identity = None
            self._agents.clear()

    def remove(self) -> None:
        """Delete the index (it is rebuilt from the transcripts)."""
        with self.lock:
            self.close()
            self.resets += 1
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.path + suffix)

    @contextlib.contextmanager
    def write(self, db: sqlite3.Connection | None = None, expect: int | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its start (and `lock`
        throughout). `expect`: the `resets` the writer began with; if the file was
        deleted since, raise Reset instead of writing part of it into a new file."""
        with self.lock:
            db = db or self.open()  # (opening a damaged file deletes it: check after)
            if expect is not None and expect != self.resets:
                raise Reset(f"{self.path}: deleted while it was being written; building it again")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- what is indexed ------------------------------------------------------------------

    def versions(self) -> dict[str, int]:
        with self.lock:
            return dict(self.open().execute("SELECT key, version FROM sessions").fetchall())

    def session(self, db: sqlite3.Connection, key: str, source: str, sid: str, project: str) -> int:
        row = db.execute("SELECT id, project FROM sessions WHERE key = ?", (key,)).fetchone()
        if row is None:
            cur = db.execute(
                "INSERT INTO sessions(key, source, sid, project, version) VALUES (?, ?, ?, ?, -1)",
                (key, source, sid, project),
            )
            return int(cur.lastrowid or 0)
        if row[1] != project:
            db.execute("UPDATE sessions SET project = ? WHERE id = ?", (project, row[0]))
        return int(row[0])

    def set_version(self, db: sqlite3.Connection, session: int, version: int) -> None:
        db.execute("UPDATE sessions SET version = ?, absent = 0 WHERE id = ?", (version, session))

    def mark_absent(self, db: sqlite3.Connection, present: set[str]) -> None:
        """Sessions no longer on disk drop out of results (and come back unread if they return)."""
        rows = db.execute("SELECT id, key, absent FROM sessions").fetchall()
        gone = [(i,) for i, k, a in rows if k not in present and not a]
        back = [(i,) for i, k, a in rows if k in present and a]
        db.executemany("UPDATE sessions SET absent = 1 WHERE id = ?", gone)
        db.executemany("UPDATE sessions SET absent = 0 WHERE id = ?", back)

    def files(self, db: sqlite3.Connection, session: int) -> dict[str, tuple[int, int, bytes]]:
        """Live files of a session: path -> (file id, indexed length, the bytes before it)."""
        rows = db.execute("SELECT path, id, done, tail FROM files WHERE session = ? AND dead = 0", (session,))
        return {p: (i, d, t or b"") for p, i, d, t in rows}

    def new_file(self, db: sqlite3.Connection, session: int, path: str) -> int:
        cur = db.execute("INSERT INTO files(session, path) VALUES (?, ?)", (session, path))
        return int(cur.lastrowid or 0)

    def kill_file(self, db: sqlite3.Connection, fid: int) -> None:
        n = db.execute("SELECT rows FROM files WHERE id = ?", (fid,)).fetchone()
        db.execute("UPDATE files SET dead = 1 WHERE id = ?", (fid,))
        db.execute("UPDATE meta SET v = CAST(v AS INTEGER) + ? WHERE k = 'dead'", (int(n[0]) if n else 0,))

    def set_done(self, db: sqlite3.Connection, fid: int, done: int, tail: bytes, added: int) -> None:
        db.execute("UPDATE files SET done = ?, tail = ?, rows = rows + ? WHERE id = ?", (done, tail, added, fid))

    def agent(self, db: sqlite3.Connection, session: int, agent: str) -> int:
        key = (session, agent)
        got = self._agents.get(key)
        if got is not None:
            return got
        row = db.execute("SELECT id FROM agents WHERE session = ? AND agent = ?", key).fetchone()
        if row is None:
            cur = db.execute("INSERT INTO agents(session, agent) VALUES (?, ?)", key)
            got = int(cur.lastrowid or 0)
        else:
            got = int(row[0])
        self._agents[key] = got
        return got

    def counter(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT v FROM meta WHERE k = 'counter'").fetchone()
        return int(row[0]) if row else 0

    def set_counter(self, db: sqlite3.Connection, n: int) -> None:
        db.execute("UPDATE meta SET v = ? WHERE k = 'counter'", (str(n),))

    def insert(self, db: sqlite3.Connection, rows: Sequence[tuple], texts: Sequence[tuple]) -> None:
        """`rows`: (rowid, file, off, len, nth, kind, agent); `texts`: (rowid, prompt, say, think, tool)."""
        try:
            db.executemany("INSERT INTO rows(rowid, file, off, len, nth, kind, agent) VALUES (?,?,?,?,?,?,?)", rows)
        except sqlite3.IntegrityError:
            raise
        db.executemany("INSERT INTO fts(rowid, prompt, say, think, tool) VALUES (?,?,?,?,?)", texts)
        said = [t[:4] for t in texts if t[4] is None]  # (tool pieces are not stemmed: mostly code and output)
        db.executemany("INSERT INTO stem(rowid, prompt, say, think) VALUES (?,?,?,?)", said)

    def taken(self, db: sqlite3.Connection, rowids: Sequence[int]) -> set[int]:
        out: set[int] = set()
        for i in range(0, len(rowids), 500):
            part = rowids[i : i + 500]
            q = f"SELECT rowid FROM rows WHERE rowid IN ({','.join('?' * len(part))})"
            out.update(r[0] for r in db.execute(q, part))
        return out

    def stats(self) -> dict:
        with self.lock:
            db = self.open()
            meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
            rows = db.execute("SELECT COALESCE(SUM(rows), 0) FROM files").fetchone()[0]
            sessions = db.execute("SELECT COUNT(*) FROM sessions WHERE absent = 0").fetchone()[0]
        try:
            size = sum(os.path.getsize(self.path + s) for s in ("", "-wal") if os.path.exists(self.path + s))
        except OSError:
            size = 0
        return {"sessions": int(sessions), "rows": int(rows), "dead_rows": int(meta.get("dead", 0)), "bytes": size}

    def wants_rebuild(self) -> bool:
        st = self.stats()
        return st["dead_rows"] >= REBUILD_MIN and st["dead_rows"] >= REBUILD_DEAD * max(1, st["rows"])

    # -- asking ------------------------------------------------------------------------------

    def search(
        self,
        match: str,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        sources: Sequence[str] = (),
        project: str | None = None,
        session: str | None = None,
        rank: bool = False,
        limit: int = 20,
        offset: int = 0,
        table: str = "fts",
        besides: str | None = None,
    ) -> list[tuple]:
        """Hits: (rowid, path, off, len, nth, kind, agent, session key). `table`: "fts"
        (the words as written) or "stem" (stemmed); `besides`: an exact match whose hits
        are left out (the stemmed hits that are not exact ones)."""
        where, args = self._where(match, since_ms, until_ms, sources, project, session, table, besides)
        order = f"{table}.rank" if rank else f"{table}.rowid DESC"
        sql = (
            f"SELECT {table}.rowid, f.path, r.off, r.len, r.nth, r.kind, a.agent, s.key "
            f"FROM {table} JOIN rows r ON r.rowid = {table}.rowid JOIN files f ON f.id = r.file "
            "JOIN sessions s ON s.id = f.session LEFT JOIN agents a ON a.id = r.agent "
            f"WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ? OFFSET ?"
        )
        args.extend([limit, offset])
        with self.lock:
            return self.open().execute(sql, args).fetchall()

    def per_session(
        self,
        match: str,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        sources: Sequence[str] = (),
        project: str | None = None,
        session: str | None = None,
        table: str = "fts",
        besides: str | None = None,
    ) -> list[tuple]:
        """Per session holding hits: (session key, hits, the newest hit's rowid, its best rank)."""
        where, args = self._where(match, since_ms, until_ms, sources, project, session, table, besides)
        sql = (
            f"SELECT s.key, COUNT(*), MAX({table}.rowid), MIN({table}.rank) "
            f"FROM {table} JOIN rows r ON r.rowid = {table}.rowid JOIN files f ON f.id = r.file "
            f"JOIN sessions s ON s.id = f.session WHERE {' AND '.join(where)} GROUP BY s.id"
        )
        with self.lock:
            return self.open().execute(sql, args).fetchall()

    def located(self, rowids: Sequence[int]) -> dict[int, tuple]:
        """Where these indexed rows are: rowid -> (rowid, path, off, len, nth, kind, agent, session key)."""
        out: dict[int, tuple] = {}
        with self.lock:
            db = self.open()
            for i in range(0, len(rowids), 500):
                part = list(rowids[i : i + 500])
                sql = (
                    "SELECT r.rowid, f.path, r.off, r.len, r.nth, r.kind, a.agent, s.key FROM rows r "
                    "JOIN files f ON f.id = r.file JOIN sessions s ON s.id = f.session "
                    f"LEFT JOIN agents a ON a.id = r.agent WHERE r.rowid IN ({','.join('?' * len(part))})"
                )
                out.update((row[0], row) for row in db.execute(sql, part))
        return out

    @staticmethod
    def _where(
        match: str,
        since_ms: int | None,
        until_ms: int | None,
        sources: Sequence[str],
        project: str | None,
        session: str | None,
        table: str,
        besides: str | None,
    ) -> tuple[list[str], list]:
        if table not in TABLES:
            raise ValueError(table)
        where = [f"{table} MATCH ?", "f.dead = 0", "s.absent = 0"]
        args: list = [match]
        if besides is not None:
            where.append(f"{table}.rowid NOT IN (SELECT rowid FROM fts WHERE fts MATCH ?)")
            args.append(besides)
        if since_ms is not None:
            where.append(f"{table}.rowid >= ?")
            args.append(rowid_for(since_ms, 0))
        if until_ms is not None:
            where.append(f"{table}.rowid < ?")
            args.append(rowid_for(until_ms, 0))
        if sources:
            where.append(f"s.source IN ({','.join('?' * len(sources))})")
            args.extend(sources)
        if project:
            where.append("s.project = ?")
            args.append(project)
        if session:
            where.append("(s.sid = ? OR s.key = ?)")
            args.extend([session, session])
        return where, args


def settings_key(folders: dict[str, str]) -> str:
    return json.dumps(sorted(folders.items()))
