"""Every machine's sessions read back from the hub, in the local views' JSON shapes.

`board(conn)` is what `huddle status --json` prints (each row with its `machine`, the
`machines` that hold a copy, when it was pushed, and `stale` when a live state comes
from a machine not seen lately). `counted(conn)` gives the rows `views.usage.aggregate`
sums, so `huddle usage --hub` is the same report as the local one: a response counts
once, in the first session (oldest first) to hold its id, exactly as
`views.usage.counted_usage` decides it.
"""

from __future__ import annotations

import time
from typing import Any

from huddle.model.times import iso
from huddle.views.board import sort_rows
from huddle.views.pricing import current
from huddle.views.usage import aggregate

from .sums import counted_groups, session_head

STALE_AFTER = 120.0  # seconds without a push before a machine's live states are doubted
LIVE = frozenset({"working", "needs_you", "waiting"})

_HELD = """
SELECT s.key FROM huddle.sessions s
WHERE %(machine)s::text IS NULL
   OR EXISTS (SELECT 1 FROM huddle.session_machines m WHERE m.session_key = s.key AND m.machine = %(machine)s)
"""


def board(conn: Any, machine: str | None = None, now: float | None = None) -> dict:
    now = time.time() if now is None else now
    rows = conn.execute(
        f"""
        SELECT s.row, s.machine, s.pushed_at, m.last_seen,
               (SELECT array_agg(sm.machine ORDER BY sm.machine) FROM huddle.session_machines sm
                 WHERE sm.session_key = s.key)
        FROM huddle.sessions s LEFT JOIN huddle.machines m ON m.name = s.machine
        WHERE s.key IN ({_HELD})
        """,
        {"machine": machine},
    ).fetchall()
    conn.commit()
    out = []
    for row, pusher, pushed_at, last_seen, holders in rows:
        d = dict(row)
        d["machine"] = machine if machine is not None else pusher
        d["machines"] = list(holders or [])
        d["pushed_at"] = iso(pushed_at)
        if d.get("state") in LIVE and (last_seen is None or now - last_seen > STALE_AFTER):
            d["stale"] = True
        out.append(d)
    return {"sessions": sort_rows(out)}


def counted(conn: Any, machine: str | None = None) -> dict:
    """The counted rows (views.usage.collect's shape) of the sessions a machine holds
    (all when None): duplicates across those sessions counted once."""
    cur = conn.execute(
        f"""
        WITH held AS (
          SELECT key, source, id, title, project, started_at FROM huddle.sessions WHERE key IN ({_HELD})
        ),
        r AS (
          SELECT h.key, h.source, h.id, h.title, h.project, h.started_at, r.response_id, r.t, r.agent_label,
                 r.model, r.input, r.output, r.cache_read, r.cache_write, r.cache_write_1h, r.response_key,
                 CASE WHEN r.response_id = '' THEN h.key ELSE first_value(h.key) OVER (
                   PARTITION BY r.source, r.response_id
                   ORDER BY (h.started_at IS NULL), h.started_at, h.key COLLATE "C") END AS owner
          FROM huddle.responses r JOIN held h ON h.key = r.session_key
        )
        SELECT key, source, id, title, project, started_at, owner = key AS counts, t, agent_label, model,
               input, output, cache_read, cache_write, cache_write_1h
        FROM r ORDER BY (started_at IS NULL), started_at, key COLLATE "C", t NULLS LAST, response_key
        """,
        {"machine": machine},
    )
    sessions: list[dict] = []
    dupes = 0
    current = None
    rows: list = []
    for key, source, sid, title, project, started_at, counts, t, label, model, *tokens in cur:
        if not counts:
            dupes += 1
            continue
        if key != current:
            current = key
            rows = []
            sessions.append({**session_head(key, source, sid, title, project, started_at), "rows": rows})
        rows.append([t, label, model, *tokens])
    conn.commit()
    return {"sessions": sessions, "duplicates": dupes}


def machines(conn: Any) -> list[str]:
    names = [r[0] for r in conn.execute("SELECT DISTINCT machine FROM huddle.session_machines ORDER BY 1")]
    conn.commit()
    return names


def usage_report(
    conn: Any, by: str, since: float | None, table: Any, machine: str | None = None, until: float | None = None
) -> dict:
    """`huddle usage --hub`: the local report's shape; `by="machine"` gives one row per
    machine, each equal to what that machine's own `huddle usage` says (a session held
    by two machines is in both rows, so rows can add up to more than the total)."""
    if by != "machine":
        return _report(conn, by, since, table, machine, until)
    out = _report(conn, "day", since, table, machine, until)
    rows = []
    for m in [machine] if machine is not None else machines(conn):
        totals = _report(conn, "day", since, table, m, until)["totals"]
        rows.append({"key": m, "machine": m, **totals})
    rows.sort(key=lambda d: (-(d["cost_usd"] or 0.0), -d["total_tokens"], d["key"]))
    out["by"] = "machine"
    out["rows"] = rows
    if sum(r["responses"] for r in rows) > out["totals"]["responses"]:
        out["notes"].append("some sessions are on more than one machine: machine rows add up to more than the total")
    return out


def _report(conn: Any, by: str, since: float | None, table: Any, machine: str | None, until: float | None) -> dict:
    """The report of the sessions a machine holds (all when None): summed in SQL
    (sums.py), or from the rows when the sums cannot be had there."""
    t = table or current()
    sums = counted_groups(conn, t, machine, since, until)
    if sums is not None:
        return aggregate(sums, by, since, t, until=until, bounded=True)
    return aggregate(counted(conn, machine), by, since, t, until=until)
