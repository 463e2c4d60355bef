"""OpenCode sessions: one SQLite database for every project, `$XDG_DATA_HOME/opencode/opencode.db`
(the CLI's own rules: `OPENCODE_DB` names another, absolute or under that folder; builds of
another channel write `opencode-<channel>.db` beside it; `HUDDLE_OPENCODE_DIR` points huddle
at another data folder). Its lock folders are in `$XDG_STATE_HOME/opencode/locks/`.

A session row with no `parent_id` is a lead; its children (task sub-agents, at any depth)
are sessions naming it as parent: one huddle session with one tree, keyed by the lead's id;
each agent id is an OpenCode session id.

Change detection reads no rows: a refresh first compares the files' stamps (`db.stamp`:
identity, size, mtime of the database and its WAL, the headers of the WAL and its index)
and asks SQLite nothing when they stand;
when they moved, one query lists every session's `time_updated` and `event_sequence.seq`
(bumped by every write to the session, its messages and parts), and only the sessions whose
pair moved read their rows, from a little before the newest `time_updated` they saw. A
database replaced by another file (a new inode) is read again from scratch.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

from huddle.io.folders import xdg
from huddle.io.proctable import ProcCache
from huddle.io.safefile import forget, remember
from huddle.model.files import Files
from huddle.sources.base import Handle, Source
from huddle.sources.registry import register
from huddle.sources.settings import Settings

if TYPE_CHECKING:  # the database and the handles load when a database is there to read
    from huddle.model.signals import Live

    from .db import Database
    from .handle import OpenCodeHandle, Row

_SESSIONS = (
    "SELECT s.id, s.parent_id, s.time_created, s.time_updated, s.title, s.directory, s.agent, s.slug, {seq} "
    "FROM session s {join}"
)


@register
class OpenCodeSource(Source):
    name = "opencode"
    label = "OpenCode"
    short = "OpenCode"
    colour = "#7c3aed"
    folder_env = "HUDDLE_OPENCODE_DIR"
    default_folder = "$XDG_DATA_HOME/opencode"
    resume = "opencode --session {id}"  # the TUI's flag (`run --session` wants a message too)
    # What a CLI built on OpenCode's core renames (Kilo CLI): the variable naming its database,
    # the database's default name and the prefixes of other channels' databases, the folder
    # name of its XDG homes (the state folder's locks) and the names its processes run under.
    db_env: ClassVar[str] = "OPENCODE_DB"
    db_default: ClassVar[str] = "opencode.db"
    db_prefixes: ClassVar[tuple[str, ...]] = ("opencode",)
    app: ClassVar[str] = "opencode"
    binaries: ClassVar[tuple[str, ...]] = ("opencode", ".opencode")

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.state_dir = settings.folder(f"{self.name}-state") or _state_dir(self.folder, self.app)
        self.system = ProcCache()
        self.notes: list[str] = []
        self._dbs: dict[str, Database] = {}
        self._stamps: dict[str, tuple[Any, ...]] = {}
        self._rows: dict[str, list[Row]] = {}  # database -> its session rows when last listed
        self._events: dict[str, bool] = {}  # database -> it keeps an event log SQLite can read ids from
        self._json: dict[str, bool] = {}  # database -> its SQLite has the JSON functions
        self._groups: dict[str, tuple[Any, ...]] = {}  # database -> (its rows, by id, lead -> members) as last grouped
        self._listing: tuple[int, list[str], dict[str, tuple[str, str]]] | None = None
        self.accounts: dict[str, tuple[str, str]] = {}  # files met and not sessions: path -> (verdict, why)
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
        return any(_there(p) for p in self.db_paths())

    def watch_dirs(self) -> list[str]:
        return self.roots()

    def db_paths(self) -> list[str]:
        env = os.environ.get(self.db_env, "")
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
        except FileNotFoundError:
            return []
        except OSError as exc:  # cannot be looked at now: a note; the databases found before stand
            remember(self.folder, exc)
            return self._listing[1] if self._listing is not None else []
        if self._listing is None or self._listing[0] != mtime:
            try:
                listed = sorted(os.listdir(self.folder))
                forget(self.folder)
            except FileNotFoundError:
                listed = []
            except OSError as exc:  # cannot be listed now: a note; the databases found before stand
                remember(self.folder, exc)
                return self._listing[1] if self._listing is not None else []
            names = [
                n for n in listed if n.endswith(".db") and (n == self.db_default or n.startswith(self.db_prefixes))
            ]
            names.sort(key=lambda n: n != self.db_default)  # the default channel first
            others = {os.path.join(self.folder, n): ("not a session", _why_not(n)) for n in listed if n not in names}
            self._listing = (mtime, [os.path.join(self.folder, n) for n in names], others)
        return self._listing[1]

    def signals_of(self, handle: OpenCodeHandle, at: float | None) -> Live:
        """A session's live signals (`Handle.live`)."""
        from .live import live_signals

        return live_signals(handle, at)

    def database(self, path: str) -> Database:
        from .db import Database

        db = self._dbs.get(path)
        if db is None:
            db = self._dbs[path] = Database(path)
        return db

    def json1(self, path: str) -> bool:
        return self._json.get(path, False)

    def done(self, handle: OpenCodeHandle | None) -> None:
        """A handle read what it needed: close the connection once no one else needs it."""
        if handle is not None:
            self._open_for.discard(handle.key)
        if not self._open_for:
            for db in self._dbs.values():
                db.close()

    # -- finding sessions ----------------------------------------------------------------

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        from .db import DbError, stamp
        from .handle import BrokenHandle, OpenCodeHandle

        self.notes = []
        self._open_for.clear()
        for db in self._dbs.values():
            db.close()
        found: dict[str, Handle] = {}
        newest: dict[str, tuple[int, str]] = {}
        paths = self.db_paths()
        # every file of the data folder looked at and not read as sessions: path -> (verdict, why)
        self.accounts = dict(self._listing[2]) if self._listing is not None and not os.environ.get(self.db_env) else {}
        for path in paths:
            try:
                st = stamp(path)
            except OSError as exc:  # there, but not to be looked at now: a note, its sessions as read
                remember(path, exc)
                found.update(
                    (k, h) for k, h in known.items() if isinstance(h, (OpenCodeHandle, BrokenHandle)) and h.path == path
                )
                continue
            if st is None:
                self._stamps.pop(path, None)
                self._rows.pop(path, None)
                continue
            if st[2] == 0 and st[4] is None:
                self.accounts[path] = ("not a session", "an empty database: nothing written yet")
                continue  # an empty file with no WAL: nothing written yet
            rows = self._rows.get(path)
            same = st == self._stamps.get(path) and rows is not None
            if not same:
                try:
                    rows = self._list(path)
                except DbError as exc:
                    self.database(path).close()
                    self.accounts[path] = ("not read", str(exc))
                    if rows is None:  # its row says it: one line for one problem
                        broken = BrokenHandle(self.name, path, str(exc))
                        found[broken.key] = broken
                        continue
                    self.notes.append(f"{self.name}: {exc}")
                    # what was read stands, as it was (its handles not asked to read: the note is
                    # the one line); the stamp stays old, so the next refresh asks again
                    found.update((k, h) for k, h in known.items() if isinstance(h, OpenCodeHandle) and h.path == path)
                    continue
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
                key = f"{self.name}:{root}"
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
        self.files = Files.of(self.accounts, {os.path.dirname(p) for p in paths})  # (huddle doctor reads these)
        return found

    def _list(self, path: str) -> list[Row]:
        from .db import DbError
        from .handle import Row, row_int

        db = self.database(path)
        tables = db.tables()
        if "session" not in tables:
            raise DbError(f"{path}: not an OpenCode database (no session table)")
        self._json[path] = _json1(db)
        self._events[path] = "event" in tables and "event_sequence" in tables and self._json[path]
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
                    row_int(r[2]),
                    row_int(r[3]),
                    r[4] if isinstance(r[4], str) else "",
                    r[5] if isinstance(r[5], str) else "",
                    r[6] if isinstance(r[6], str) else "",
                    r[7] if isinstance(r[7], str) else "",
                    row_int(r[8]),
                )
            )
        return out


_NOT_SESSIONS = {
    "log": "the CLI's logs",
    "storage": "the CLI's side storage (session diffs, migrations)",
    "snapshot": "file snapshots (a git store)",
    "bin": "the CLI's tools",
    "tool-output": "tool outputs kept aside",
    "telemetry-id": "a telemetry id",
    "auth.json": "credentials (never read)",
}


def _why_not(name: str) -> str:
    if name.endswith(("-wal", "-shm", "-journal")):
        return "a database's write-ahead log or index (read with it)"
    return _NOT_SESSIONS.get(name, "not one of the CLI's session databases")


def _there(path: str) -> bool:
    """A database file is there (one that cannot be looked at now is: its folder is closed)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _json1(db: Database) -> bool:
    from .db import DbError

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


def _state_dir(data_folder: str, app: str) -> str:
    """The CLI's state folder beside its data folder: `<home>/.local/share/<app>` ->
    `<home>/.local/state/<app>`; else `$XDG_STATE_HOME/<app>`."""
    if data_folder:
        head, tail = os.path.split(os.path.normpath(data_folder))
        base, share = os.path.split(head)
        if tail == app and share == "share":
            return os.path.join(base, "state", app)
    return os.path.join(xdg(os.environ, "XDG_STATE_HOME"), app)
