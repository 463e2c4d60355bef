"""OpenCode sessions: one SQLite database for every project, `$XDG_DATA_HOME/opencode/opencode.db`
(the CLI's own rules: `OPENCODE_DB` names another, absolute or under that folder; builds of
another channel write `opencode-<channel>.db` beside it; `HUDDLE_OPENCODE_DIR` points huddle
at another data folder). Its lock folders are in `$XDG_STATE_HOME/opencode/locks/`.

A session row with no `parent_id` is a lead; its children (task sub-agents, at any depth)
are sessions naming it as parent: one huddle session with one tree, keyed by the lead's id;
each agent id is an OpenCode session id.

Change detection reads no rows: a refresh first compares the files' stamps (`db.stamp`:
identity, size, mtime of the database and its WAL) and asks SQLite nothing when they stand;
when they moved, one query lists every session's `time_updated` and `event_sequence.seq`
(bumped by every write to the session, its messages and parts), and only the sessions whose
pair moved read their rows, from a little before the newest `time_updated` they saw. A
database replaced by another file (a new inode) is read again from scratch.
"""

from __future__ import annotations

import os

import msgspec

from huddle.io.folders import xdg
from huddle.io.proctable import ProcCache
from huddle.model import events as ev
from huddle.model.events import one_line
from huddle.sources.base import Handle, Source
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from . import records as rec
from .db import Database, DbError, stamp
from .live import live_signals
from .parser import Links, Records, SessionParser

OVERLAP_MS = 2000  # rows are read again from this long before the newest seen (commit order vs clocks)
DEFAULT_TITLE = "New session - "
_SESSIONS = (
    "SELECT s.id, s.parent_id, s.time_created, s.time_updated, s.title, s.directory, s.agent, s.slug, {seq} "
    "FROM session s {join}"
)


class Row(msgspec.Struct, array_like=True):
    """One session row: what tells it changed, and what names it."""

    id: str
    parent: str | None
    created: int
    updated: int
    title: str
    directory: str
    agent: str
    slug: str
    seq: int

    @property
    def mark(self) -> tuple[int, int]:
        return (self.updated, self.seq)


class Member:
    """One OpenCode session of a tree, with what was read of it."""

    def __init__(self, row: Row):
        self.sid = row.id
        self.row = row
        self.read: tuple[int, int] | None = None  # the row's mark when its rows were last read
        self.watermark = 0  # newest time_updated seen among its rows (ms)
        self.seq_read: int | None = None  # the newest event of its log read (None: not read yet)
        self.parser: SessionParser | None = None


class OpenCodeHandle(Handle):
    def __init__(self, source: OpenCodeSource, path: str, ident, root: str, rows: list[Row]):
        super().__init__("opencode", root)
        self.source = source
        self.path = path
        self.ident = ident  # the database file's (dev, inode) when read
        self.events = False  # the database keeps an event log per session
        self.rows_seen: object = None
        self._linked: object = None  # the session list its rows were last taken from (not kept in the cache)
        self.root = root
        self.members: dict[str, Member] = {}
        self.links = Links()
        self.records = Records()
        self.title = ""
        self.set_rows(rows)

    def set_rows(self, rows: list[Row]) -> None:
        s = self.session
        for row in rows:
            m = self.members.get(row.id)
            if m is None:
                m = self.members[row.id] = Member(row)
                parent = None if row.id == self.root else (row.parent or self.root)
                m.parser = SessionParser(s, self.links, row.id, parent, self.path, self.records)
                a = s.agent(row.id, parent=parent)
                if parent is None:
                    a.name, a.kind = "main", "main"
                else:
                    a.parent = parent
                    a.kind = row.agent or "sub-agent"
                    a.name = row.agent or row.slug or f"sub-agent {row.id[-4:]}"
                a.file = self.path
                s.version += 1
            m.row = row
        lead = self.members.get(self.root)
        if lead is not None and lead.row.directory and s.cwd != lead.row.directory:
            s.cwd = lead.row.directory
            s.version += 1

    def __getstate__(self) -> dict:
        d = super().__getstate__()
        d["rows_seen"] = d["_linked"] = None
        return d

    def dirty(self) -> bool:
        return any(m.read != m.row.mark for m in self.members.values())

    def files(self) -> list[str]:
        return [self.path, self.path + "-wal"]

    # -- reading -------------------------------------------------------------------------

    def refresh(self) -> bool:
        s = self.session
        before = s.version
        todo = [m for m in self.members.values() if m.read != m.row.mark]
        if not todo and self._linked is self.rows_seen and self.rows_seen is not None:
            return False
        if todo:
            db = self.source.database(self.path)
            try:
                for m in sorted(todo, key=lambda m: (m.sid != self.root, m.row.created, m.sid)):
                    self._read(db, m)
            finally:
                self.source.done(self)
        self._link()
        self._linked = self.rows_seen
        return s.version != before

    def _read(self, db: Database, m: Member) -> None:
        since = max(m.watermark - OVERLAP_MS, 0)
        with db.snapshot():  # a message and its parts as of one moment
            msgs, parts = self._rows_of(db, m.sid, since)
            if self.events:
                self._named_by_events(db, m, msgs, parts)
        msgs.sort(key=lambda r: (_int(r[2]), r[1]))
        parts.sort(key=lambda r: (r[2], r[1]))
        p = m.parser
        assert p is not None
        p.feed(msgs, parts)
        self.session.add_all(p.out)
        p.out.clear()
        for row in msgs:
            m.watermark = max(m.watermark, _int(row[3]))
        for row in parts:
            m.watermark = max(m.watermark, _int(row[4]))
        m.read = m.row.mark

    def _named_by_events(self, db: Database, m: Member, msgs: list[tuple], parts: list[tuple]) -> None:
        """The rows the session's event log names since it was last read, whatever their
        clock says: a row written with a `time_updated` behind the window is not missed."""
        if m.seq_read is None:
            got = db.query("SELECT max(seq) FROM event WHERE aggregate_id = ?", (m.sid,))
            m.seq_read = _int(got[0][0]) if got and got[0][0] is not None else -1
            return
        rows = db.query(
            "SELECT seq, type, CASE WHEN json_valid(data) THEN json_extract(data, '$.part.id') END, "
            "CASE WHEN json_valid(data) THEN json_extract(data, '$.info.id') END "
            "FROM event WHERE aggregate_id = ? AND seq > ?",
            (m.sid, m.seq_read),
        )
        if not rows:
            return
        m.seq_read = max(_int(r[0]) for r in rows)
        have_p = {r[1] for r in parts}
        have_m = {r[1] for r in msgs}
        want_p = sorted({r[2] for r in rows if isinstance(r[2], str)} - have_p)
        want_m = sorted(
            {r[3] for r in rows if isinstance(r[3], str) and str(r[1]).startswith("message.updated")} - have_m
        )
        for i in range(0, len(want_p), 400):
            chunk = want_p[i : i + 400]
            parts.extend(
                db.query(
                    "SELECT rowid, id, message_id, time_created, time_updated, data FROM part "
                    f"WHERE session_id = ? AND id IN ({', '.join('?' * len(chunk))})",
                    (m.sid, *chunk),
                )
            )
        for i in range(0, len(want_m), 400):
            chunk = want_m[i : i + 400]
            msgs.extend(
                db.query(
                    "SELECT rowid, id, time_created, time_updated, data FROM message "
                    f"WHERE session_id = ? AND id IN ({', '.join('?' * len(chunk))})",
                    (m.sid, *chunk),
                )
            )

    @staticmethod
    def _rows_of(db: Database, sid: str, since: int) -> tuple[list[tuple], list[tuple]]:
        msgs = db.query(
            "SELECT rowid, id, time_created, time_updated, data FROM message "
            "WHERE session_id = ? AND time_updated >= ? ORDER BY time_created, id",
            (sid, since),
        )
        parts = db.query(
            "SELECT rowid, id, message_id, time_created, time_updated, data FROM part "
            "WHERE session_id = ? AND time_updated >= ? ORDER BY message_id, id",
            (sid, since),
        )
        return msgs, parts

    def _link(self) -> None:
        s, L = self.session, self.links
        lead = self.members.get(self.root)
        title = lead.row.title if lead is not None else ""
        if title and not title.startswith(DEFAULT_TITLE) and title != self.title:
            self.title = title
            s.add(ev.Event(kind=ev.TITLE, agent=self.root, text=one_line(title, 200), detail="ai"))
        for sid, m in self.members.items():
            if sid == self.root:
                continue
            a = s.agents.get(sid)
            if a is None:
                continue
            call = L.call_of.get(sid)
            order = L.orders.get(call) if call else None
            if call and a.tool_use_id != call:
                a.tool_use_id = call
                s.version += 1
            if order is not None:
                if order.detail and a.description != order.detail:
                    a.description = order.detail
                    s.version += 1
                if not a.order:
                    a.order = order.text
            elif not a.description and m.row.title:
                a.description = m.row.title.split(" (@", 1)[0]
            if not a.order and sid in L.prompts:
                a.order = L.prompts[sid]

    def live(self, at: float | None = None) -> dict:
        return live_signals(self, at)

    def record_token(self) -> bytes | None:
        """Records are rows, numbered per handle: this names the numbering (a database
        replaced by another file, or a session read again, numbers anew)."""
        return f"{self.records.token}:{self.session.epoch}".encode()

    def read_record(self, path: str, offset: int, length: int) -> bytes:
        """The row an event came from, as JSON in the shape content read-back understands:
        a call's input under its id, a result's output, a text."""
        if os.path.realpath(path) != os.path.realpath(self.path):
            raise OSError("not this session's database")
        if not 0 <= offset < len(self.records.rows):
            raise OSError("no such record in this session")
        row, length = self.records.rows[offset]
        table = "message" if row % 2 else "part"
        db = self.source.database(self.path)
        try:  # left open for the reads that follow (an export, a search): the next scan closes it
            rows = db.query(f"SELECT session_id, data FROM {table} WHERE rowid = ?", (row // 2,))
        except DbError as exc:
            db.close()
            raise OSError(str(exc)) from None
        if not rows or rows[0][0] not in self.members:
            raise OSError("no such row in this session")
        return _normalized(rows[0][1], table, length)


def _normalized(data: str | bytes, table: str, length: int) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    if table == "message":
        return raw
    try:
        p = rec.decode_part(raw)
    except msgspec.DecodeError:
        return raw
    if p.type == "tool" and p.state is not None:
        call = p.callID or ""
        st = p.state
        if length == 2:
            out = rec.loose(st.output) if st.status == "completed" else rec.loose(st.error)
            return msgspec.json.encode(
                {"call_id": call, "output": rec.text_of(out), "is_error": st.status != "completed"}
            )
        return msgspec.json.encode({"id": call, "name": p.tool, "input": rec.loose(st.input)})
    return raw


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


class BrokenHandle(Handle):
    """A database that cannot be read at all: listed with an error."""

    def __init__(self, path: str, why: str):
        super().__init__("opencode", os.path.basename(path))
        self.path = path
        self.session.error = why

    def refresh(self) -> bool:
        return False

    def files(self) -> list[str]:
        return [self.path]


@register
class OpenCodeSource(Source):
    name = "opencode"
    folder_env = "HUDDLE_OPENCODE_DIR"
    default_folder = "$XDG_DATA_HOME/opencode"
    resume = "opencode --session {id}"  # the TUI's flag (`run --session` wants a message too)

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.state_dir = settings.folder("opencode-state") or _state_dir(self.folder)
        self.system = ProcCache()
        self.notes: list[str] = []
        self._dbs: dict[str, Database] = {}
        self._stamps: dict[str, tuple] = {}
        self._rows: dict[str, list[Row]] = {}  # database -> its session rows when last listed
        self._events: dict[str, bool] = {}  # database -> it keeps an event log SQLite can read ids from
        self._groups: dict[str, tuple] = {}  # database -> (its rows, by id, lead -> members) as last grouped
        self._listing: tuple[int, list[str]] | None = None
        self._open_for: set[str] = set()  # handles yet to read in this refresh
        self.newest: dict[str, str] = {}  # folder -> its most recently updated lead session
        self.lists = 0  # how often the session table was listed (tests, benches)

    def roots(self) -> list[str]:
        out = [self.folder] if self.folder else []
        for p in self.db_paths():
            d = os.path.dirname(os.path.abspath(p))
            if d not in out:
                out.append(d)
        return out

    def exists(self) -> bool:
        return any(os.path.exists(p) for p in self.db_paths())

    def watch_dirs(self) -> list[str]:
        return self.roots()

    def db_paths(self) -> list[str]:
        env = os.environ.get("OPENCODE_DB", "")
        if env and env != ":memory:":
            return (
                [env if os.path.isabs(env) else os.path.join(self.folder, env)]
                if self.folder or os.path.isabs(env)
                else []
            )
        if not self.folder:
            return []
        try:
            mtime = os.stat(self.folder).st_mtime_ns
        except OSError:
            return []
        if self._listing is None or self._listing[0] != mtime:
            try:
                names = sorted(n for n in os.listdir(self.folder) if n.startswith("opencode") and n.endswith(".db"))
            except OSError:
                names = []
            names.sort(key=lambda n: n != "opencode.db")  # the default channel first
            self._listing = (mtime, [os.path.join(self.folder, n) for n in names])
        return self._listing[1]

    def database(self, path: str) -> Database:
        db = self._dbs.get(path)
        if db is None:
            db = self._dbs[path] = Database(path)
        return db

    def done(self, handle: OpenCodeHandle | None) -> None:
        """A handle read what it needed: close the connection once no one else needs it."""
        if handle is not None:
            self._open_for.discard(handle.key)
        if not self._open_for:
            for db in self._dbs.values():
                db.close()

    # -- finding sessions ----------------------------------------------------------------

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        self.notes = []
        self._open_for.clear()
        for db in self._dbs.values():
            db.close()
        found: dict[str, Handle] = {}
        newest: dict[str, tuple[int, str]] = {}
        for path in self.db_paths():
            st = stamp(path)
            if st is None:
                self._stamps.pop(path, None)
                self._rows.pop(path, None)
                continue
            if st[2] == 0 and st[4] is None:
                continue  # an empty file with no WAL: nothing written yet
            rows = self._rows.get(path)
            same = st == self._stamps.get(path) and rows is not None
            if not same:
                try:
                    rows = self._list(path)
                except DbError as exc:
                    self.database(path).close()
                    self.notes.append(f"opencode: {exc}")
                    if rows is None:
                        broken = BrokenHandle(path, str(exc))
                        found[broken.key] = broken
                        continue
                    # keep what was read; the stamp stays old, so the next refresh asks again
                else:
                    self._stamps[path] = st
                    self._rows[path] = rows
            ident = (st[0], st[1])
            assert rows is not None
            cached = self._groups.get(path)
            if not same or cached is None or cached[0] is not rows:
                by_id = {r.id: r for r in rows}
                groups: dict[str, list[Row]] = {}
                for r in rows:
                    groups.setdefault(_root(r.id, by_id), []).append(r)
                cached = self._groups[path] = (rows, by_id, groups)
            _rows, by_id, groups = cached
            for root, members in groups.items():
                key = f"opencode:{root}"
                if key in found:
                    continue  # the same session in two databases: the default channel's wins
                old = known.get(key)
                if isinstance(old, OpenCodeHandle) and old.path == path and old.ident == ident:
                    h = old
                    h.source = self
                    if not same or h.rows_seen is not rows:
                        h.set_rows(members)
                        h.rows_seen = rows
                else:
                    h = OpenCodeHandle(self, path, ident, root, members)
                    h.rows_seen = rows
                h.events = self._events.get(path, False)
                found[key] = h
                if h.dirty():
                    self._open_for.add(key)
                lead = by_id.get(root)
                if lead is not None and lead.directory:
                    d = lead.directory
                    if d not in newest or lead.updated > newest[d][0]:
                        newest[d] = (lead.updated, root)
        self.newest = {d: sid for d, (_u, sid) in newest.items()}
        self.done(None)  # nothing left to read: no connection stays open
        return found

    def _list(self, path: str) -> list[Row]:
        db = self.database(path)
        tables = db.tables()
        if "session" not in tables:
            raise DbError(f"{path}: not an OpenCode database (no session table)")
        self._events[path] = "event" in tables and "event_sequence" in tables and _json1(db)
        if "event_sequence" in tables:
            sql = _SESSIONS.format(seq="COALESCE(e.seq, 0)", join="LEFT JOIN event_sequence e ON e.aggregate_id = s.id")
        else:  # before the event log: the newest row change stands in for the sequence
            sql = _SESSIONS.format(
                seq="COALESCE((SELECT max(p.time_updated) FROM part p WHERE p.session_id = s.id), 0)", join=""
            )
        self.lists += 1
        out = []
        for r in db.query(sql):
            if not isinstance(r[0], str) or not r[0]:
                continue
            out.append(
                Row(
                    r[0],
                    r[1] if isinstance(r[1], str) and r[1] else None,
                    _int(r[2]),
                    _int(r[3]),
                    r[4] if isinstance(r[4], str) else "",
                    r[5] if isinstance(r[5], str) else "",
                    r[6] if isinstance(r[6], str) else "",
                    r[7] if isinstance(r[7], str) else "",
                    _int(r[8]),
                )
            )
        return out


def _json1(db: Database) -> bool:
    try:
        db.query("SELECT json_extract('{\"a\":1}', '$.a')")
    except DbError:
        return False  # an SQLite built without JSON: the time window alone finds changed rows
    return True


def _root(sid: str, by_id: dict[str, Row]) -> str:
    seen = {sid}
    cur = sid
    while True:
        r = by_id.get(cur)
        if r is None or not r.parent or r.parent in seen:
            return cur
        seen.add(r.parent)
        cur = r.parent


def _state_dir(data_folder: str) -> str:
    """OpenCode's state folder beside its data folder: `<home>/.local/share/opencode` ->
    `<home>/.local/state/opencode`; else `$XDG_STATE_HOME/opencode`."""
    if data_folder:
        head, tail = os.path.split(os.path.normpath(data_folder))
        base, share = os.path.split(head)
        if tail == "opencode" and share == "share":
            return os.path.join(base, "state", "opencode")
    return os.path.join(xdg(os.environ, "XDG_STATE_HOME"), "opencode")
