"""Every machine's sessions read back from the hub, in the local views' JSON shapes.

`board(conn)` is what `huddle status --json` prints (each row with its `machine`, the
`machines` that hold a copy, when it was pushed, and `stale` when a live state comes
from a machine not seen lately). `counted(conn)` gives the rows `usage.report.aggregate`
sums, so `huddle usage --hub` is the same report as the local one: a response counts
once, in the first session (oldest first) to hold its id, exactly as
`usage.report.counted_usage` decides it.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

import msgspec

from huddle.cost.pricing import current
from huddle.model.events import Usage
from huddle.model.rows import HubRow, fitted
from huddle.model.times import iso
from huddle.usage.report import UNKNOWN_DAY, Line, _day, aggregate, shaped
from huddle.views.board import sort_rows

from . import by_session, driver
from .check import board_row, note
from .prices import differing, hub_rates
from .report import WIDTH, Bounds, Summed, params, price_arrays, query
from .roles import sessions_relation
from .sums import UNKNOWN_DAY as UNKNOWN
from .sums import good

STALE_AFTER = 120.0  # seconds without a push before a machine's live states are doubted
LIVE = frozenset({"working", "needs_you", "waiting"})

_HELD = """
SELECT s.key FROM huddle.sessions s
WHERE %(machine)s::text IS NULL
   OR EXISTS (SELECT 1 FROM huddle.session_machines m WHERE m.session_key = s.key AND m.machine = %(machine)s)
"""


BOARD_DAYS = 7.0  # `serve --hub` shows the live sessions and those that moved in the last week


def board(
    conn: Any,
    machine: str | None = None,
    now: float | None = None,
    since: float | None = None,
    changed_after: float | None = None,
) -> dict:
    """The hub's board rows (all, or the live ones and those that moved at or after
    `since`; or only those written after `changed_after`, by the hub's clock), with
    `count`, the sessions the hub holds, `outside`, those `since` left out (a whole
    read's: not `changed_after`), and `changed_at`, the newest write seen."""
    now = time.time() if now is None else now
    where = ["s.key IN (" + _HELD + ")"]
    if since is not None:
        where.append("(s.state NOT IN ('ended', 'idle') OR s.updated_at >= %(since)s)")
    if changed_after is not None:
        where.append("s.changed_at > %(after)s")
    rows = conn.execute(
        f"""
        SELECT s.key, s.row::text, s.machine, s.pushed_at, m.last_seen,
               (SELECT array_agg(sm.machine ORDER BY sm.machine) FROM huddle.session_machines sm
                 WHERE sm.session_key = s.key), s.changed_at
        FROM {sessions_relation(conn)} s LEFT JOIN huddle.machines m ON m.name = s.machine
        WHERE {" AND ".join(where)}
        """,
        {"machine": machine, "since": since, "after": changed_after},
    ).fetchall()
    count = conn.execute(f"SELECT count(*) FROM huddle.sessions s WHERE s.key IN ({_HELD})", {"machine": machine})
    n = count.fetchone()[0]
    conn.commit()
    out = []
    newest = changed_after or 0.0
    notes: list[str] = []
    for key, text, pusher, pushed_at, last_seen, holders, changed in rows:
        newest = max(newest, changed or 0.0)
        d, why = board_row(text)  # another machine's row: it costs itself only
        if d is None:
            notes.append(note(pusher, key, why))
            continue
        d["machine"] = machine if machine is not None else pusher
        d["machines"] = list(holders or [])
        d["pushed_at"] = iso(pushed_at)
        try:
            r = fitted(d, HubRow)  # (a row of another version, or a lead's narrowed one, typed)
        except msgspec.ValidationError as exc:
            notes.append(note(pusher, key, f"its row is not a board row huddle can read ({exc})"))
            continue
        if r.empty:
            continue  # (off the board, as on the machine: its usage is still counted)
        if r.state in LIVE and (last_seen is None or not now - last_seen <= STALE_AFTER):  # (NaN: stale)
            r.stale = True
        out.append(r)
    notes_ = {"notes": notes[:50]} if notes else {}
    outside = n - len(rows) if changed_after is None else 0
    return {"sessions": sort_rows(out), "count": n, "outside": outside, "changed_at": newest, **notes_}


def counted(conn: Any, machine: str | None = None) -> dict:
    """The counted rows (usage.report.collect's shape) of the sessions a machine holds
    (all when None): duplicates across those sessions counted once."""
    cur = conn.execute(
        f"""
        WITH held AS (
          SELECT key, source, id, title, project, started_at FROM {sessions_relation(conn)} WHERE key IN ({_HELD})
        ),
        r AS (
          SELECT h.key, h.source, h.id, h.title, h.project, h.started_at, r.response_id, r.t, r.agent_label,
                 r.model, r.input, r.output, r.cache_read, r.cache_write, r.cache_write_1h, r.response_key,
                 CASE WHEN r.response_id = '' THEN h.key ELSE first_value(h.key) OVER (
                   PARTITION BY r.source, r.response_id
                   ORDER BY (h.started_at IS NULL), h.started_at, h.key COLLATE "C") END AS owner
          FROM huddle.responses r JOIN held h ON h.key = r.session_key
          WHERE {good("r")}
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
            sessions.append(
                {
                    "key": key,
                    "source": source,
                    "id": sid,
                    "title": title,
                    "project": project,
                    "started_at": iso(started_at),
                    "rows": rows,
                }
            )
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
    t = table or current()
    with by_session.no_cycles() if by == "session" else nullcontext():
        out = summed(conn, "totals" if by == "machine" else by, since, until, t, machine)  # (its totals)
    if out is None:  # a rate or a cost the sums cannot hold exactly: the rows decide
        return _from_rows(conn, by, since, t, machine, until)
    out["notes"] += bad_notes(conn, machine)
    if by != "machine":
        return out
    per = summed(conn, "machine", since, until, t, machine, lines_only=True)
    if per is None:
        return _from_rows(conn, by, since, t, machine, until)
    rows = []
    for m in [machine] if machine is not None else machines(conn):
        line = per.get(m) or Line()
        rows.append({"key": m, "machine": m, **line.to_dict()})
    rows.sort(key=lambda d: (-(d["cost_usd"] or 0.0), -d["total_tokens"], d["key"]))
    out["by"] = "machine"
    out["rows"] = rows
    if sum(r["responses"] for r in rows) > out["totals"]["responses"]:
        out["notes"].append("some sessions are on more than one machine: machine rows add up to more than the total")
    return out


def summed(
    conn: Any,
    by: str,
    since: float | None,
    until: float | None,
    t: Any,
    machine: str | None,
    lines_only: bool = False,
) -> Any:
    """The report from the sums (hub/report.py), or None when it cannot be had exactly
    there. `lines_only`: the lines by their key (for --by machine)."""
    differ, ok = differing(conn, t)
    if not ok:
        return None
    b = Bounds(since, until)
    b.tighten(conn)
    cols = price_arrays(t, list(hub_rates(conn)))
    try:
        conn.execute("SET LOCAL work_mem = '64MB'")  # the report's groups and the rows' owners in memory
        conn.execute("SET LOCAL jit = off")  # compiling costs more than this one pass saves
        q = query(by, b, machine, differ, sessions=sessions_relation(conn))
        cur = conn.cursor()
        cur.adapters.register_loader("numeric", _whole())  # every numeric here is a sum of whole numbers
        got = cur.execute(q, params(b, machine, differ, cols)).fetchall()
    except driver().DataError:  # an overflow PostgreSQL refuses: the rows decide
        conn.rollback()
        return None
    conn.commit()
    lines: dict[str, Line] = {}
    total = Line()
    by_source: dict[str, int] = {}
    dupes = 0
    days: dict[int, str] = {}
    pieces = []
    plain: list[tuple] = []  # --by session: the lines said straight from their rows (by_session)
    added = {row[1] for row in got if row[0] == "piece"}
    for row in got:
        kind = row[0]
        if kind == "dupes":
            dupes += int(row[WIDTH] or 0)
            continue
        if by == "session" and kind == "line" and row[1] not in added:
            if row[WIDTH + 8]:
                return None  # a cost too small or too large to split exactly
            plain.append(row)
            continue
        s = Summed(row)
        if s.odd:
            return None
        if kind == "piece":
            pieces.append((row, s))
            continue
        if kind == "source":
            by_source[row[4]] = s.n
            continue
        if kind in ("total", "model"):
            line = total
        else:
            key, info = _key(by, row, days)
            line = lines.get(key) or lines.setdefault(key, Line())
            if info:
                line.info = info
            models, unpriced, tokens = row[WIDTH + 17 : WIDTH + 20]
            line.models.update(models or ())
            for m, n in zip(unpriced or (), tokens or ()):
                line.unpriced[m] = line.unpriced.get(m, 0) + int(n)
        if kind == "model":
            line.models.add(row[3])
            if not s.priced:
                line.unpriced[row[3]] = line.unpriced.get(row[3], 0) + sum(s.tokens[:4])
            continue
        _fill(line, s)
    for row, s in pieces:  # (--by session: what the rows add to a session's kept line)
        key, info = _key(by, row, days)
        line = lines.get(key) or lines.setdefault(key, Line(info))
        line.add(key, s.first, row[3], Usage(*s.tokens), s.cost() if s.priced else None, s.n)
        line.sessions = {key}
    if lines_only:
        return lines
    notes = [] if not differ else [f"priced at this huddle's rates from the rows: {', '.join(sorted(differ)[:5])}"]
    if by != "session":
        return shaped(by, lines, total, dict(sorted(by_source.items())), dupes, t, since, until, notes)
    out = shaped(by, {}, total, dict(sorted(by_source.items())), dupes, t, since, until, notes)
    out["rows"] = by_session.rows(plain, lines)
    return out


def _whole() -> Any:
    """numeric read as a Python int (a Decimal each costs: 50,000 lines of --by session
    bring half a million)."""
    from psycopg.types.numeric import IntLoader

    return IntLoader


def _fill(line: Line, s: Summed) -> None:
    line.usage = Usage(*s.tokens)
    line.responses = s.n
    line.sessions = {str(i) for i in range(s.sessions)}  # (only how many is said)
    line.first = s.first
    if s.priced:
        line.priced = True
        line.costs = s.cost()


def _key(by: str, row: tuple, days: dict[int, str]) -> tuple[str, dict | None]:
    a, b = row[1], row[2]
    if by == "day":
        d = int(a)
        if d not in days:
            days[d] = UNKNOWN_DAY if d == UNKNOWN else _day(d * 86400.0)
        return days[d], None
    if by == "project":
        return a or "(no project)", None
    if by == "agent":
        return f"{a}:{b}", {"source": a, "agent": b}
    if by == "session" and row[0] in ("line", "piece"):
        sid, title, project, started_at, source = row[WIDTH + 12 : WIDTH + 17]
        return a, {"source": source, "title": title, "project": project, "started_at": iso(started_at), "session": sid}
    return a, None


def bad_notes(conn: Any, machine: str | None) -> list[str]:
    """One line per machine and session whose responses are out of range (in no sum)."""
    rows = conn.execute(
        """
        SELECT s.machine, b.session_key, b.n FROM huddle.bad_responses b JOIN huddle.sessions s ON s.key = b.session_key
        WHERE %(machine)s::text IS NULL OR EXISTS (SELECT 1 FROM huddle.session_machines m
              WHERE m.session_key = b.session_key AND m.machine = %(machine)s)
        ORDER BY 1, 2 LIMIT 50
        """,
        {"machine": machine},
    ).fetchall()
    conn.commit()
    return [
        f"hub: {key} from machine {m!r}: {n} response{'s' if n != 1 else ''} with a time or count out of range; left out"
        for m, key, n in rows
    ]


def _from_rows(conn: Any, by: str, since: float | None, t: Any, machine: str | None, until: float | None) -> dict:
    """The report from every counted row, summed here (what the sums cannot say exactly)."""
    if by != "machine":
        return aggregate(counted(conn, machine), by, since, t, until=until)
    out = aggregate(counted(conn, machine), "day", since, t, until=until)
    rows = []
    for m in [machine] if machine is not None else machines(conn):
        totals = aggregate(counted(conn, m), "day", since, t, until=until)["totals"]
        rows.append({"key": m, "machine": m, **totals})
    rows.sort(key=lambda d: (-(d["cost_usd"] or 0.0), -d["total_tokens"], d["key"]))
    out["by"] = "machine"
    out["rows"] = rows
    if sum(r["responses"] for r in rows) > out["totals"]["responses"]:
        out["notes"].append("some sessions are on more than one machine: machine rows add up to more than the total")
    return out
