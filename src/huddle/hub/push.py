"""`huddle push`: this machine's sessions into the hub, once or as they change (--watch).

What was pushed is remembered in $HUDDLE_HOME/hub/ (per hub and machine name): a digest
of each session's row, its read epoch and how many usage events went up, so a push
after one append writes one session row and the new responses. Nothing is remembered
before the hub committed it, and every write is an upsert keyed by session and event
identity: a push repeated after a lost connection, or from a copy of the same files on
another machine, writes the same rows again rather than new ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from huddle import __version__
from huddle.core.coldread import FirstRead
from huddle.io import private

from . import HubError, connect, describe, driver, scrub
from .rows import agent_rows, hub_row, response_rows, session_values

BATCH = 200  # sessions per transaction
SETTLED = ("ended", "idle")  # states only a new version of a session moves
HEARTBEAT = 10.0  # seconds between `last_seen` updates while watching

_SESSION_SQL = """
INSERT INTO huddle.sessions (key, source, id, machine, title, cwd, project, state, started_at, updated_at, pushed_at, row)
VALUES (%(key)s, %(source)s, %(id)s, %(machine)s, %(title)s, %(cwd)s, %(project)s, %(state)s, %(started_at)s,
        %(updated_at)s, %(pushed_at)s, %(row)s)
ON CONFLICT (key) DO UPDATE SET source = excluded.source, id = excluded.id, machine = excluded.machine,
  title = excluded.title, cwd = excluded.cwd, project = excluded.project, state = excluded.state,
  started_at = excluded.started_at, updated_at = excluded.updated_at, pushed_at = excluded.pushed_at, row = excluded.row
"""
_HOLDER_SQL = """
INSERT INTO huddle.session_machines (session_key, machine, pushed_at) VALUES (%s, %s, %s)
ON CONFLICT (session_key, machine) DO UPDATE SET pushed_at = excluded.pushed_at
"""
_AGENT_SQL = """
INSERT INTO huddle.agents (session_key, agent_id, parent, name, type, tool_use_id, model, started_at, updated_at,
  input, output, cache_read, cache_write, cache_write_1h, description)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (session_key, agent_id) DO UPDATE SET parent = excluded.parent, name = excluded.name, type = excluded.type,
  tool_use_id = excluded.tool_use_id, model = excluded.model, started_at = excluded.started_at,
  updated_at = excluded.updated_at, input = excluded.input, output = excluded.output,
  cache_read = excluded.cache_read, cache_write = excluded.cache_write, cache_write_1h = excluded.cache_write_1h,
  description = excluded.description
"""
_RESPONSE_COLS = (
    "session_key, response_key, source, response_id, agent_id, agent_label, model, t,"
    " input, output, cache_read, cache_write, cache_write_1h"
)
_RESPONSE_UPSERT = f"""
INSERT INTO huddle.responses ({_RESPONSE_COLS}) SELECT {_RESPONSE_COLS} FROM huddle_stage
ON CONFLICT (session_key, response_key) DO UPDATE SET source = excluded.source, response_id = excluded.response_id,
  agent_id = excluded.agent_id, agent_label = excluded.agent_label, model = excluded.model, t = excluded.t,
  input = excluded.input, output = excluded.output, cache_read = excluded.cache_read,
  cache_write = excluded.cache_write, cache_write_1h = excluded.cache_write_1h
"""


def _digest(obj: Any) -> str:
    return hashlib.blake2b(json.dumps(obj, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()


class PushState:
    """session key -> [row digest, epoch, usage events pushed, agent labels digest]."""

    def __init__(self, huddle_home: str, hub_id: str, machine: str) -> None:
        name = hashlib.blake2b(f"{hub_id}\0{machine}".encode(), digest_size=8).hexdigest()
        self.path = os.path.join(huddle_home, "hub", f"pushed-{name}.json") if huddle_home else ""
        self.sessions: dict[str, list] = {}
        if self.path:
            try:
                with open(self.path, encoding="utf-8") as f:
                    data = json.load(f)
                if isinstance(data, dict) and isinstance(data.get("sessions"), dict):
                    self.sessions = data["sessions"]
            except (OSError, ValueError):
                pass  # nothing remembered: the next push writes everything (upserts, so no harm)

    def save(self) -> None:
        if not self.path:
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with private.opened(tmp, "w") as f:
            json.dump({"sessions": self.sessions}, f)
        os.replace(tmp, self.path)


class Pusher:
    def __init__(self, h: Any, dsn: str, machine: str, with_content: bool = False) -> None:
        self.h = h
        self.dsn = dsn
        self.machine = machine
        self.with_content = with_content
        self.redactor: Any = None
        if with_content:
            from huddle.redact.redactor import Redactor

            self.redactor = Redactor()
        self.conn: Any = None
        self.state: PushState | None = None
        self.hub_id = ""
        self.stop = threading.Event()
        self.pushed_sessions = 0  # totals over this pusher's life
        self.pushed_responses = 0
        self.last_heartbeat = 0.0

    # -- the connection ------------------------------------------------------------

    def open(self) -> None:
        if self.conn is not None and not self.conn.closed:
            return
        self.conn = connect(self.dsn)
        hub_id = self.conn.execute("SELECT value FROM huddle.meta WHERE key = 'hub_id'").fetchone()[0]
        self.conn.commit()
        if self.state is None or hub_id != self.hub_id:  # a new hub (recreated): push everything to it
            self.state = PushState(self.h.settings.huddle_home, hub_id, self.machine)
            self.hub_id = hub_id

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None

    # -- one push ------------------------------------------------------------------

    def _settled(self, key: str, version: int) -> bool:
        """Pushed as it stands and at rest (ended or idle): its row cannot move without a
        new version, so it is not even built again."""
        assert self.state is not None
        prev = self.state.sessions.get(key)
        return (
            prev is not None
            and len(prev) >= 8
            and prev[5] == version
            and prev[6] in SETTLED
            and prev[7] == self.with_content
        )

    def changes(self) -> list[tuple[Any, dict, list]]:
        """(session, hub row, new state entry) for every session that moved since the last
        push. A lazy core's sleeping sessions are woken only when one was never pushed or
        moved (their responses are in the cache: no file is read again)."""
        from huddle.usage.report import agent_label
        from huddle.views.board import pricing_table, session_entry

        assert self.state is not None
        table = pricing_table(self.h)
        dormant = getattr(self.h, "dormant", None) or {}
        if any(not self._settled(k, d.version) for k, d in list(dormant.items())):
            self.h.wake_all()
        out = []
        for s in self.h.loaded_sessions():
            if self._settled(s.key, s.version):
                continue
            row = hub_row(session_entry(self.h, s, table=table), s, self.machine, self.with_content, self.redactor)
            n_usage = s.counts.get("usage", 0)
            labels = _digest(sorted((a, agent_label(s, a)) for a in s.agents))
            entry = [_digest(row), s.epoch, n_usage, labels, getattr(s, "usage_epoch", 0)]
            entry += [s.version, row.get("state"), self.with_content]
            prev = self.state.sessions.get(s.key)
            if prev is None or prev[:5] != entry[:5]:
                out.append((s, row, entry))
            else:
                self.state.sessions[s.key] = entry  # (the same row: only what it was worked out from)
        return out

    def push_once(self) -> tuple[int, int]:
        """Push what changed; returns (sessions, responses) written. Raises psycopg errors
        (the caller reconnects) and HubError."""
        from huddle.views.board import pricing_table

        from .prices import sync

        self.open()
        assert self.state is not None
        todo = sorted(self.changes(), key=lambda c: c[0].key)  # one order: two machines' pushes wait, never deadlock
        rows = {s.key: self._responses(s, entry) for s, _, entry in todo}
        models = sorted({r[6] for part in rows.values() for r in part[1]})
        if models:  # the hub prices what is about to come (and re-prices what a newer table says)
            sync(self.conn, pricing_table(self.h), models)
        now = time.time()
        sessions = responses = 0
        for i in range(0, len(todo), BATCH):
            part = todo[i : i + BATCH]
            with self.conn.transaction():
                self._heartbeat(now)
                for s, row, _entry in part:
                    responses += self._write(s, row, rows[s.key], now)
            for s, _, entry in part:  # committed: remember it
                self.state.sessions[s.key] = entry
            self.state.save()
            sessions += len(part)
        if not todo:
            self.state.save()  # (what unchanged rows were worked out from: not worked out again)
        if not todo and now - self.last_heartbeat >= HEARTBEAT:
            with self.conn.transaction():
                self._heartbeat(now)
        self.pushed_sessions += sessions
        self.pushed_responses += responses
        return sessions, responses

    def _heartbeat(self, now: float) -> None:
        self.conn.execute(
            "INSERT INTO huddle.machines (name, first_push, last_seen, huddle_version) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen, huddle_version = excluded.huddle_version",
            (self.machine, now, now, __version__),
        )
        self.last_heartbeat = now

    def _responses(self, s: Any, entry: list) -> tuple[bool, list[tuple]]:
        """(whether the session's responses on the hub are replaced, the rows to write)."""
        assert self.state is not None
        before = self.state.sessions.get(s.key)
        start = 0
        if before is not None and before[1:2] + before[3:5] == entry[1:2] + entry[3:5]:
            start = int(before[2])  # same reading, labels and counts: only the responses added since
        rows, _ = response_rows(s, start)
        # the files were rewritten: what they say now replaces what they said
        return before is not None and before[1] != entry[1], rows

    def _write(self, s: Any, row: dict, todo: tuple[bool, list[tuple]], now: float) -> int:
        from psycopg.types.json import Jsonb

        c = self.conn
        values = session_values(s, row, self.machine, now)
        values["row"] = Jsonb(row)
        c.execute(_SESSION_SQL, values)
        c.execute(_HOLDER_SQL, (s.key, self.machine, now))
        with c.cursor() as cur:
            cur.executemany(_AGENT_SQL, agent_rows(s, self.with_content, self.redactor))
        replace, rows = todo
        if replace:
            c.execute("DELETE FROM huddle.responses WHERE session_key = %s", (s.key,))
        if rows:
            c.execute(
                "CREATE TEMP TABLE IF NOT EXISTS huddle_stage"
                " (LIKE huddle.responses INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
            )
            with c.cursor() as cur, cur.copy(f"COPY huddle_stage ({_RESPONSE_COLS}) FROM STDIN") as cp:
                for r in rows:
                    cp.write_row(r)
            c.execute(_RESPONSE_UPSERT)
            c.execute("TRUNCATE huddle_stage")
        return len(rows)

    # -- once, or watching -----------------------------------------------------------

    def run(self) -> tuple[int, int]:
        self.h.refresh(FirstRead())
        try:
            return self.push_once()
        except driver().Error as exc:
            raise HubError(f"push to {describe(self.dsn)} failed: {scrub(str(exc), self.dsn)}") from None

    def watch(
        self,
        every: float = 2.0,
        on_push: Callable[[int, int], None] | None = None,
        on_error: Callable[[str, float], None] | None = None,
        on_cycle: Callable[[], None] | None = None,
    ) -> None:
        """Push, then read what sessions add and push it within `every` seconds, until
        `stop`. A lost hub is retried with back-off (1 s doubling to 30 s); what was not
        committed stays to push, so nothing is lost."""
        psycopg = driver()
        first = True
        delay = 0.0
        while not self.stop.is_set():
            self.h.refresh(FirstRead() if first else None)
            first = False
            try:
                n, r = self.push_once()
                delay = 0.0
                if (n or r) and on_push is not None:
                    on_push(n, r)
            except (psycopg.Error, HubError) as exc:
                self.close()
                delay = min(max(delay * 2, 1.0), 30.0)
                if on_error is not None:
                    on_error(scrub(str(exc), self.dsn), delay)
            if on_cycle is not None:
                on_cycle()
            self.stop.wait(delay or every)
