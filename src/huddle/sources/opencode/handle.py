"""An OpenCode session as huddle reads it: the lead's and its sub-agents' session rows, read
by what moved since (their `time_updated` and event sequence), and a database that cannot be
read as a handle of its own (source.py finds them)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import msgspec

from huddle.model import events as ev
from huddle.model.events import one_line
from huddle.model.signals import Live
from huddle.sources.base import Handle

from . import records as rec
from .db import ROW_MAX, Database, DbError
from .parser import Links, Records, SessionParser

if TYPE_CHECKING:
    from .source import OpenCodeSource

OVERLAP_MS = 2000  # rows are read again from this long before the newest seen (commit order vs clocks)
DEFAULT_TITLE = "New session - "
FORK_TITLE = re.compile(r" \(fork #\d+\)$")  # a fork's copy of its source's title: no title of its own

# A row's data as bytes (decoded row by row, by msgspec). A row past ROW_MAX (a 100 MB
# tool output cost 722 MB of memory as one Python string and its decode) comes without
# its heavy fields, marked (parser.CUT), so its events still stand: one JSON function over
# it (json_valid or json_extract would each hold another copy of the row in SQLite).
_SMALL = "CASE WHEN length(CAST(data AS BLOB)) <= {cap} THEN CAST(data AS BLOB) "
_CUT = "ELSE CAST(json_set(json_remove(data, {heavy}), '$.huddle_cut', 1) AS BLOB) "
_HEAVY = "'$.state.input', '$.state.output', '$.state.metadata', '$.state.error', '$.text', '$.summary'"


def data_sql(json1: bool) -> str:
    """The data column (an SQLite without JSON functions, or a big row that is no JSON:
    none for a big row)."""
    return (_SMALL + (_CUT.format(heavy=_HEAVY) if json1 else "") + "END").format(cap=ROW_MAX)


def rows_with_data(db: Database, sql: str, args: tuple[Any, ...], json1: bool) -> list[tuple[Any, ...]]:
    """`sql` with its `{data}` column: a big row that is not JSON makes SQLite's
    json_remove fail the whole query, so it is asked again without (that row none)."""
    try:
        return db.query(sql.format(data=data_sql(json1)), args)
    except DbError as exc:
        if not json1 or "malformed JSON" not in str(exc):
            raise
    return db.query(sql.format(data=data_sql(False)), args)


class _Deleted(Exception):
    """Rows of a session read before are gone (OpenCode reverted it): read it again whole."""


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
        self.seen: tuple[dict[int, str], dict[int, str]] = ({}, {})  # message, part rowid -> id read


class OpenCodeHandle(Handle):
    created_title: str | None = None  # the lead's title when it was created (from the event log)
    gone: frozenset[str] = frozenset()  # members whose rows the session table no longer lists

    def __init__(self, source: OpenCodeSource, path: str, ident: Any, root: str, rows: list[Row]) -> None:
        super().__init__(source.name, root)
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
        # a member whose row went (a sub-session deleted, or the database put back to an
        # older copy) is read again from its start if it returns, even at the same mark
        self.gone = frozenset(self.members) - {row.id for row in rows}
        for sid in self.gone:
            self.members[sid].read = None
        for row in rows:
            m = self.members.get(row.id)
            if m is None:
                m = self.members[row.id] = Member(row)
                parent = None if row.id == self.root else (row.parent or self.root)
                m.parser = SessionParser(s, self.links, row.id, parent, self.path, self.records, row.created)
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

    def __getstate__(self) -> dict[str, Any]:
        d = super().__getstate__()
        d["rows_seen"] = d["_linked"] = None
        return d

    def dirty(self) -> bool:
        return bool(self._todo())

    def _todo(self) -> list[Member]:
        return [m for sid, m in self.members.items() if m.read != m.row.mark and sid not in self.gone]

    def files(self) -> list[str]:
        return [self.path, self.path + "-wal"]

    # -- reading -------------------------------------------------------------------------

    def refresh(self) -> bool:
        s = self.session
        before = s.version
        todo = self._todo()
        if not todo and self._linked is self.rows_seen and self.rows_seen is not None:
            return False
        if todo:
            db = self.source.database(self.path)
            try:
                try:
                    for m in sorted(todo, key=lambda m: (m.sid != self.root, m.row.created, m.sid)):
                        self._read(db, m)
                except _Deleted:  # as a cold read would: from the start, every member
                    self._restart()  # (its members are the listed ones: none gone)
                    for m in sorted(self.members.values(), key=lambda m: (m.sid != self.root, m.row.created, m.sid)):
                        self._read(db, m)
            finally:
                self.source.done(self)
        self._link()
        self._linked = self.rows_seen
        return s.version != before

    def _restart(self) -> None:
        rows = [m.row for sid, m in self.members.items() if sid not in self.gone]
        self.session.reset()
        self.members = {}
        self.links, self.records, self.title = Links(), Records(), ""
        self.set_rows(rows)

    def _read(self, db: Database, m: Member) -> None:
        since = max(m.watermark - OVERLAP_MS, 0)
        with db.snapshot():  # a message and its parts as of one moment
            msgs, parts = self._rows_of(db, m.sid, since, self.source.json1(self.path))
            if self.events:
                self._named_by_events(db, m, msgs, parts)
            if m.seen[0] or m.seen[1]:
                self._check_deleted(db, m, msgs, parts)
        msgs = [r for r in msgs if self._plain(r, r[1], r[1])]
        parts = [r for r in parts if self._plain(r, r[1], r[2])]
        for seen, rows in zip(m.seen, (msgs, parts), strict=True):
            seen.update((r[0], r[1]) for r in rows)
        msgs.sort(key=lambda r: (row_int(r[2]), r[1]))
        parts.sort(key=lambda r: (r[2], r[1]))
        p = m.parser
        assert p is not None
        p.feed(msgs, parts)
        self.session.add_all(p.out)
        p.out.clear()
        for row in msgs:
            m.watermark = max(m.watermark, row_int(row[3]))
        for row in parts:
            m.watermark = max(m.watermark, row_int(row[4]))
        m.read = m.row.mark

    def _plain(self, row: tuple[Any, ...], rid: object, parent: object) -> bool:
        """A row with the ids it must have (text), else its problem."""
        if isinstance(rid, str) and isinstance(parent, str) and isinstance(row[0], int):
            return True
        self.session.problem(self.path, row_int(row[0]), f"a row without its ids ({rid!r}, {parent!r}): skipped")
        return False

    def _check_deleted(
        self, db: Database, m: Member, msgs: list[tuple[Any, ...]], parts: list[tuple[Any, ...]]
    ) -> None:
        """Raises _Deleted when a row read before is gone: fewer rows than were read, others
        in their place (a rowid taken again by another id), or their rowids moved."""
        got = db.query(
            "SELECT (SELECT count(*) FROM message WHERE session_id = ?1), (SELECT total(rowid) FROM message "
            "WHERE session_id = ?1), (SELECT count(*) FROM part WHERE session_id = ?1), "
            "(SELECT total(rowid) FROM part WHERE session_id = ?1)",
            (m.sid,),
        )
        counts = got[0] if got else (0, 0, 0, 0)
        for i, (seen, rows) in enumerate(zip(m.seen, (msgs, parts), strict=True)):
            now = dict(seen)
            for r in rows:
                if isinstance(r[0], int) and now.setdefault(r[0], r[1]) != r[1]:
                    raise _Deleted
            if (len(now), float(sum(now))) != (counts[2 * i], float(counts[2 * i + 1] or 0)):
                raise _Deleted

    def _named_by_events(
        self, db: Database, m: Member, msgs: list[tuple[Any, ...]], parts: list[tuple[Any, ...]]
    ) -> None:
        """The rows the session's event log names since it was last read, whatever their
        clock says: a row written with a `time_updated` behind the window is not missed."""
        if m.seq_read is None:
            got = db.query("SELECT max(seq) FROM event WHERE aggregate_id = ?", (m.sid,))
            m.seq_read = row_int(got[0][0]) if got and got[0][0] is not None else -1
            if m.sid == self.root:
                self.created_title = _created_title(db, m.sid)
            return
        rows = db.query(
            "SELECT seq, type, CASE WHEN json_valid(data) THEN json_extract(data, '$.part.id') END, "
            "CASE WHEN json_valid(data) THEN json_extract(data, '$.info.id') END "
            "FROM event WHERE aggregate_id = ? AND seq > ?",
            (m.sid, m.seq_read),
        )
        if not rows:
            return
        m.seq_read = max(row_int(r[0]) for r in rows)
        have_p = {r[1] for r in parts}
        have_m = {r[1] for r in msgs}
        want_p = sorted({r[2] for r in rows if isinstance(r[2], str)} - have_p)
        want_m = sorted(
            {r[3] for r in rows if isinstance(r[3], str) and str(r[1]).startswith("message.updated")} - have_m
        )
        json1 = self.source.json1(self.path)
        for i in range(0, len(want_p), 400):
            chunk = want_p[i : i + 400]
            parts.extend(
                rows_with_data(
                    db,
                    "SELECT rowid, id, message_id, time_created, time_updated, {data} FROM part "
                    f"WHERE session_id = ? AND id IN ({', '.join('?' * len(chunk))})",
                    (m.sid, *chunk),
                    json1,
                )
            )
        for i in range(0, len(want_m), 400):
            chunk = want_m[i : i + 400]
            msgs.extend(
                rows_with_data(
                    db,
                    "SELECT rowid, id, time_created, time_updated, {data} FROM message "
                    f"WHERE session_id = ? AND id IN ({', '.join('?' * len(chunk))})",
                    (m.sid, *chunk),
                    json1,
                )
            )

    @staticmethod
    def _rows_of(
        db: Database, sid: str, since: int, json1: bool
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        msgs = rows_with_data(
            db,
            "SELECT rowid, id, time_created, time_updated, {data} FROM message "
            "WHERE session_id = ? AND time_updated >= ? ORDER BY time_created, id",
            (sid, since),
            json1,
        )
        parts = rows_with_data(
            db,
            "SELECT rowid, id, message_id, time_created, time_updated, {data} FROM part "
            "WHERE session_id = ? AND time_updated >= ? ORDER BY message_id, id",
            (sid, since),
            json1,
        )
        return msgs, parts

    def _link(self) -> None:
        s, L = self.session, self.links
        lead = self.members.get(self.root)
        title = lead.row.title if lead is not None else ""
        p = lead.parser if lead is not None else None
        # a fork's title is known for one once its copies are (the row comes first)
        known = p is not None and (bool(p.msgs) or not FORK_TITLE.search(title))
        if title and not title.startswith(DEFAULT_TITLE) and title != self.title and known:
            self.title = title
            if not (p is not None and p.copied and FORK_TITLE.search(title)):
                # given at creation (`run --title`): the user's; else generated over the placeholder
                by = "" if title == self.created_title else "ai"
                s.add(ev.Event(kind=ev.TITLE, agent=self.root, text=one_line(title, 200), detail=by))
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

    def live(self, at: float | None = None) -> Live:
        return self.source.signals_of(self, at)

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
            rows = rows_with_data(
                db,
                "SELECT session_id, {data} FROM " + table + " WHERE rowid = ?",
                (row // 2,),
                self.source.json1(self.path),
            )
        except DbError as exc:
            db.close()
            raise OSError(str(exc)) from None
        if not rows or rows[0][0] not in self.members:
            raise OSError("no such row in this session")
        if rows[0][1] is None:
            raise OSError(f"a row past {ROW_MAX >> 20} MB that is no JSON: not read back")
        return _normalized(rows[0][1], table, length)


def _normalized(data: str | bytes, table: str, length: int) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    if table == "message":
        return raw
    try:
        p = rec.decode_part(raw)
    except (msgspec.DecodeError, RecursionError):
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


def _created_title(db: Database, sid: str) -> str | None:
    """The title the session's `session.created` event gave it (None: no such event)."""
    rows = db.query(
        "SELECT CASE WHEN json_valid(data) THEN json_extract(data, '$.info.title') END FROM event "
        "WHERE aggregate_id = ? AND type >= 'session.created' AND type < 'session.created/' ORDER BY seq LIMIT 1",
        (sid,),
    )
    return rows[0][0] if rows and isinstance(rows[0][0], str) else None


def row_int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


class BrokenHandle(Handle):
    """A database that cannot be read at all: listed with an error."""

    def __init__(self, source: str, path: str, why: str):
        super().__init__(source, os.path.basename(path))
        self.path = path
        self.session.error = why

    def refresh(self) -> bool:
        return False

    def files(self) -> list[str]:
        return [self.path]
