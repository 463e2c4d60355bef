"""Who may do what on the hub: machines write, leads read aggregates.

`huddle hub init` (as the hub's owner) makes the schema and two group roles:
- `huddle_machine`: pushes (writes sessions, agents, responses; prices new models);
  the sums are kept by the owner's triggers, which no machine can write around;
- `huddle_lead`: reads the board and every usage report, never a prompt: of a
  session it sees the columns that carry no text, and its board row through
  `huddle.lead_sessions`, which keeps only counts, states, times, models and the
  machine (no title, no folder, no command, no question, no agent's task), even of a
  session pushed --with-content.
`huddle hub grant NAME --lead|--machine` makes a login role in one of them.

A reader finds out which it is (`full(conn)`): the views read `huddle.sessions`, or
`huddle.lead_sessions` for a lead.
"""

from __future__ import annotations

import secrets
from typing import Any

LEAD, MACHINE = "huddle_lead", "huddle_machine"

# What a lead's board row keeps of a row (views.board's shape): counts, states and times.
ROW_KEYS = (
    "id", "source", "project", "state", "state_since", "started_at", "updated_at", "usage", "models", "tokens",
    "cost", "events", "machine", "background", "skipped_lines", "urgency", "stale", "empty", "pid",
)  # fmt: skip
AGENT_KEYS = ("id", "parent", "label", "type", "state", "state_since", "usage", "model", "tokens", "quiet", "depth")
QUIET_COLUMNS = ("key", "source", "id", "machine", "project", "state", "started_at", "updated_at", "pushed_at")


def _pick(src: str, keys: tuple[str, ...]) -> str:
    pairs = ", ".join(f"'{k}', {src} -> '{k}'" for k in keys)
    return f"jsonb_build_object({pairs})"


VIEW = f"""
CREATE OR REPLACE FUNCTION huddle.lead_row(r jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $body$
  SELECT CASE WHEN jsonb_typeof(r) <> 'object' THEN r ELSE
    {_pick("r", ROW_KEYS)} || jsonb_build_object('title', '', 'agents', (
      SELECT coalesce(jsonb_agg({_pick("a", AGENT_KEYS)}), '[]'::jsonb)
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r -> 'agents') = 'array' THEN r -> 'agents' ELSE '[]' END) a
      WHERE jsonb_typeof(a) = 'object'))
  END
$body$;
CREATE OR REPLACE VIEW huddle.lead_sessions AS
  SELECT {", ".join(QUIET_COLUMNS)}, ''::text AS title, ''::text AS cwd, huddle.lead_row(row) AS row, changed_at
  FROM huddle.sessions;
"""


def full(conn: Any) -> bool:
    """Whether this connection may read sessions' text (not a lead's)."""
    got = conn.execute("SELECT has_column_privilege('huddle.sessions', 'row', 'SELECT')").fetchone()[0]
    conn.commit()
    return bool(got)


def sessions_relation(conn: Any) -> str:
    return "huddle.sessions" if full(conn) else "huddle.lead_sessions"


def init(conn: Any) -> list[str]:
    """The group roles and what each may do (again: it is idempotent). Returns what it did."""
    done = []
    with conn.transaction():
        for role in (LEAD, MACHINE):
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
                conn.execute(f"CREATE ROLE {role} NOLOGIN")
                done.append(f"made the role {role}")
        conn.execute(VIEW)
        readable = ("schema_version", "meta", "machines", "session_machines", "responses", "usage_sums",
                    "session_sums", "session_lines", "model_sums", "prices", "shared_ids", "bad_responses", "lead_sessions")  # fmt: skip
        conn.execute(f"GRANT USAGE ON SCHEMA huddle TO {LEAD}, {MACHINE}")
        conn.execute(f"GRANT SELECT ON {', '.join('huddle.' + t for t in readable)} TO {LEAD}, {MACHINE}")
        conn.execute(f"GRANT SELECT ({', '.join(QUIET_COLUMNS)}, changed_at) ON huddle.sessions TO {LEAD}")
        conn.execute(f"REVOKE ALL ON huddle.agents FROM {LEAD}")
        written = ("sessions", "agents", "responses", "session_machines", "machines")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join('huddle.' + t for t in written)} TO {MACHINE}"
        )
        conn.execute(f"GRANT SELECT, INSERT, UPDATE ON huddle.prices TO {MACHINE}")
        conn.execute(f"GRANT EXECUTE ON FUNCTION huddle.reprice(text[]) TO {MACHINE}")
        done.append(f"granted {LEAD} reading without text, {MACHINE} pushing")
    return done


def grant(conn: Any, name: str, lead: bool) -> str:
    """A login role NAME in the lead or the machine group; returns its new password."""
    if not name.replace("_", "").replace("-", "").isalnum() or len(name) > 63:
        raise ValueError(f"a role name is letters, digits, - and _ (got {name[:70]!r})")
    password = secrets.token_urlsafe(18)
    group = LEAD if lead else MACHINE
    with conn.transaction():
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is not None
        verb = "ALTER" if exists else "CREATE"
        conn.execute(f"{verb} ROLE \"{name}\" LOGIN PASSWORD '{password}'")
        conn.execute(f'GRANT {group} TO "{name}"')
        if exists:
            conn.execute(f'REVOKE {MACHINE if lead else LEAD} FROM "{name}"')
    return password
