"""The hub's tables, created and migrated by huddle: numbered steps, each applied once,
in order, in one transaction, under an advisory lock (two machines starting at once
wait for each other instead of racing). `huddle.schema_version` says which ran.

Everything lives in the schema `huddle`, so a team's database may hold other things.
Times are unix seconds (double precision), as huddle counts them, so the hub sums and
filters exactly what `huddle usage` does.
"""

from __future__ import annotations

from typing import Any

from . import lines, roles, triggers

LOCK = 0x68756464  # pg_advisory_xact_lock key: "hudd"

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "sessions, agents, responses, machines",
        """
CREATE TABLE huddle.meta (
  key text PRIMARY KEY,
  value text NOT NULL
);
INSERT INTO huddle.meta (key, value) VALUES ('hub_id', md5(random()::text || clock_timestamp()::text));

CREATE TABLE huddle.machines (
  name text PRIMARY KEY,
  first_push double precision NOT NULL,
  last_seen double precision NOT NULL,
  huddle_version text NOT NULL DEFAULT ''
);

-- One row per session (source:id); `machine` is the last machine that pushed it.
CREATE TABLE huddle.sessions (
  key text PRIMARY KEY,
  source text NOT NULL,
  id text NOT NULL,
  machine text NOT NULL,
  title text NOT NULL DEFAULT '',
  cwd text NOT NULL DEFAULT '',
  project text NOT NULL DEFAULT '',
  state text NOT NULL DEFAULT '',
  started_at double precision,
  updated_at double precision,
  pushed_at double precision NOT NULL,
  row jsonb NOT NULL  -- the board row (views.board), text left out unless pushed --with-content
);

-- Every machine that holds a copy of a session's files.
CREATE TABLE huddle.session_machines (
  session_key text NOT NULL REFERENCES huddle.sessions (key) ON DELETE CASCADE,
  machine text NOT NULL,
  pushed_at double precision NOT NULL,
  PRIMARY KEY (session_key, machine)
);
CREATE INDEX session_machines_machine ON huddle.session_machines (machine);

CREATE TABLE huddle.agents (
  session_key text NOT NULL REFERENCES huddle.sessions (key) ON DELETE CASCADE,
  agent_id text NOT NULL,
  parent text,
  name text NOT NULL DEFAULT '',
  type text NOT NULL DEFAULT '',
  tool_use_id text,
  model text NOT NULL DEFAULT '',
  started_at double precision,
  updated_at double precision,
  input bigint NOT NULL DEFAULT 0,
  output bigint NOT NULL DEFAULT 0,
  cache_read bigint NOT NULL DEFAULT 0,
  cache_write bigint NOT NULL DEFAULT 0,
  cache_write_1h bigint NOT NULL DEFAULT 0,
  description text,  -- only --with-content
  PRIMARY KEY (session_key, agent_id)
);

-- One row per model response (a usage event), keyed inside its session by the event's
-- identity (model.identity): pushing again, or from a copy, updates the same row.
CREATE TABLE huddle.responses (
  session_key text NOT NULL REFERENCES huddle.sessions (key) ON DELETE CASCADE,
  response_key text NOT NULL,
  source text NOT NULL,
  response_id text NOT NULL DEFAULT '',
  agent_id text NOT NULL,
  agent_label text NOT NULL,
  model text NOT NULL,
  t double precision,
  input bigint NOT NULL,
  output bigint NOT NULL,
  cache_read bigint NOT NULL,
  cache_write bigint NOT NULL,
  cache_write_1h bigint NOT NULL,
  PRIMARY KEY (session_key, response_key)
);
CREATE INDEX responses_by_id ON huddle.responses (source, response_id) WHERE response_id <> '';
""",
    ),
    (
        2,
        "usage kept summed by session, day, agent, model and price band; the board's indexes",
        triggers.TABLES + triggers.install(2) + triggers.backfill() + roles.VIEW,
    ),
    (
        3,
        "usage kept summed by session and model too: reports over every day read no day",
        triggers.SESSION_SUMS + triggers.install(3),
    ),
    (
        4,
        "each session's line and the hub's totals per model kept: reports over every day regroup nothing",
        lines.fill() + triggers.install(4),
    ),
]

LATEST = MIGRATIONS[-1][0]


def current_version(conn: Any) -> int:
    row = conn.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = 'huddle' AND table_name = 'schema_version'"
    ).fetchone()
    if row is None:
        return 0
    v = conn.execute("SELECT max(version) FROM huddle.schema_version").fetchone()
    return int(v[0] or 0)


def migrate(conn: Any) -> int:
    """Bring the hub's schema to LATEST; returns the version it was at. A hub newer than
    this huddle is left alone (and said so by the caller: `ensure`). A hub already at
    LATEST is only read: a role that may not create (a lead's) connects as well."""
    was = current_version(conn)
    if was >= LATEST:
        return was
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        conn.execute("CREATE SCHEMA IF NOT EXISTS huddle")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS huddle.schema_version ("
            " version integer PRIMARY KEY, what text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        was = current_version(conn)
        for version, what, sql in MIGRATIONS:
            if version > was:
                conn.execute(sql)
                conn.execute("INSERT INTO huddle.schema_version (version, what) VALUES (%s, %s)", (version, what))
    return was
