"""`huddle usage --hub` grouped in PostgreSQL: the report's lines come back summed.

Most of a report is the kept sums (triggers.py): per session, day, agent, model and
band, priced at the hub's rates (over every day, per session; the lines of sessions and
the hub's totals kept whole: every_day.py). What the sums cannot say is read from the rows, and
there is little of it: responses whose id two sessions hold (which one counts depends
on the machines looked at), models the reader prices otherwise than the hub (prices.py),
and the edges of a `--since`/`--until` inside a day. Both are then grouped by the
report's line in one statement (grouping sets: per line and model, per line, the
total, per model and per source), so what crosses the wire is the report's size, not
the history's.

Bounds mean what they mean to `huddle usage`: on UTC midnights (both) the days are
taken whole, as the local index takes its per-day sums; otherwise every response is
taken by its time. The days wholly inside the bounds come from the sums either way.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from . import every_day
from .sums import UNKNOWN_DAY, cost, day_of, exact_cost, good, not_shared, split_hi, split_lo

_NOT_SHARED = not_shared()

_DAY = 86400.0


def _aligned(t: float | None) -> bool:
    return t is None or datetime.fromtimestamp(t, UTC).time() == datetime.min.time()


def _python_day(t: float) -> int:
    return (datetime.fromtimestamp(t, UTC).date() - datetime(1970, 1, 1, tzinfo=UTC).date()).days


class Bounds:
    """Which days the sums give and which responses are read by their time.

    days [d1, d2) from the sums (None: open); `windows`: [lo, hi) times whose responses
    outside those days are read from the rows; `by_time`: no sum at all (both bounds in
    one day)."""

    def __init__(self, since: float | None, until: float | None) -> None:
        self.since, self.until = since, until
        self.d1: int | None = None
        self.d2: int | None = None
        self.windows: list[tuple[float | None, float | None]] = []
        self.by_time = False
        self.unknown = since is None and until is None  # responses with no time count only then
        if _aligned(since) and _aligned(until):  # the days whole, as the local sums take them
            self.d1 = None if since is None else _python_day(since)
            self.d2 = None if until is None else _python_day(until)
            return
        if since is not None:
            self.d1 = math.ceil(since / _DAY)
        if until is not None:
            self.d2 = math.floor(until / _DAY)
        if self.d1 is not None and self.d2 is not None and self.d2 <= self.d1:
            self.by_time = True
            self.windows = [(since, until)]
            return
        if since is not None and self.d1 is not None:
            self.windows.append((since, self.d1 * _DAY + 0.001))
        if until is not None and self.d2 is not None:
            self.windows.append((self.d2 * _DAY - 0.001, until))

    def tighten(self, conn: Any) -> None:
        """A response within half a microsecond before `since` rounds into the first day
        the sums give (its time is before the bound): then that day is read by time too."""
        if self.by_time or self.since is None or self.d1 is None or (_aligned(self.since) and _aligned(self.until)):
            return
        row = conn.execute(
            f"SELECT 1 FROM huddle.responses r WHERE r.t >= %s AND r.t < %s AND {day_of('r.t')} >= %s LIMIT 1",
            (self.since - 0.001, self.since, self.d1),
        ).fetchone()
        if row is not None:
            self.d1 += 1
            self.windows[0] = (self.since, self.d1 * _DAY + 0.001)
            if self.d2 is not None and self.d2 <= self.d1:
                self.by_time, self.windows = True, [(self.since, self.until)]

    def day_sql(self, day: str) -> str:
        """The days the sums give, as a condition on `day`."""
        if self.by_time:
            return "false"
        out = [] if self.unknown else [f"{day} <> {UNKNOWN_DAY}"]
        if self.d1 is not None:
            out.append(f"{day} >= {self.d1}")
        if self.d2 is not None:
            out.append(f"{day} < {self.d2}")
        return " AND ".join(out) or "true"

    def inside_sql(self, t: str, day: str) -> str:
        """Whether a response read from its row counts inside the bounds."""
        parts = [f"({self.day_sql(day)})"]
        for lo, hi in self.windows:
            w = [f"{t} >= {lo!r}::float8" if lo is not None else "true", f"{t} < {hi!r}::float8" if hi else "true"]
            if self.by_time:
                parts.append(" AND ".join(w))
            else:
                if lo == self.since:
                    w.append(f"{day} < {self.d1}")
                else:
                    w.append(f"{day} >= {self.d2}")
                parts.append("(" + " AND ".join(w) + ")")
        return "(" + " OR ".join(parts) + ")"


def _line(by: str) -> list[str]:
    """The report's line, as the columns that name it."""
    return {
        "day": ["p.day"],
        "session": ["p.key"],
        "project": ["p.project"],
        "model": ["p.model"],
        "agent": ["p.source", "p.agent_label"],
        "machine": ["p.m"],
    }[by]


WIDTH = 5  # the columns before the sums: set, two of the line, model, source
_SUMS = (
    "sum(p.n) AS n, sum(p.input) AS input, sum(p.output) AS output, sum(p.cache_read) AS cache_read,"
    " sum(p.cache_write) AS cache_write, sum(p.cache_write_1h) AS cache_write_1h, min(p.first) AS first,"
    " sum(p.priced) AS priced, sum(p.odd) AS odd, sum(p.hi) AS hi, sum(p.lo) AS lo"
)
_COLS = ("n", "input", "output", "cache_read", "cache_write", "cache_write_1h", "first", "priced", "odd", "hi", "lo")
_OUT = "sum(g.n), sum(g.input), sum(g.output), sum(g.cache_read), sum(g.cache_write), sum(g.cache_write_1h),"
_OUT += " min(g.first), sum(g.priced), sum(g.odd), sum(g.hi), sum(g.lo)"


def _sets(by: str, sessions: str = "huddle.sessions") -> str:
    """The report's sums in one pass over the pieces, per line, model and source (`g`,
    small); each set is said from it (sums add up exactly, whatever their grouping).
    Sessions are counted apart, without sums: the distinct sessions per line and in all."""
    line = _line(by)
    alias = {e: f"c{i}" for i, e in enumerate(line)}
    cols = ", ".join(f"{e} AS {alias[e]}" for e in line)
    lg = ", ".join(f"g.{alias[c]}" for c in line)
    names = [alias[c] for c in line]
    on = " AND ".join(f"k.{a} = x.{a}" for a in names)
    none = "NULL, NULL, NULL, NULL, NULL"
    info, join = none, ""
    if by == "session":
        info = "h.id, h.title, h.project, h.started_at, h.source"
        join = f"JOIN {sessions} h ON h.key = x.c0"  # (a lead's: no title)
    named = ", ".join(f"{agg}(m.{c}) AS {c}" for agg, c in zip(["sum"] * 6 + ["min"] + ["sum"] * 4, _COLS, strict=True))
    x1 = "x.c0::text"
    x2 = "x.c1::text" if len(line) > 1 else "NULL::text"
    xs = ", ".join(f"x.{c}" for c in _COLS)
    mg = ", ".join(f"m.{a}" for a in names)
    # per line: its models, and the tokens of those unpriced (what Line.models and .unpriced say)
    models = (
        "array_agg(m.model ORDER BY m.model) AS models,"
        " array_agg(m.model ORDER BY m.model) FILTER (WHERE m.priced = 0) AS unpriced,"
        " array_agg(m.input + m.output + m.cache_read + m.cache_write ORDER BY m.model)"
        " FILTER (WHERE m.priced = 0) AS unpriced_tokens"
    )
    return f"""
g AS MATERIALIZED (SELECT {cols}, p.model, p.source, {_SUMS} FROM pj p GROUP BY {", ".join(line)}, p.model, p.source),
lm AS (SELECT {lg}, g.model, {named.replace("(m.", "(g.")} FROM g GROUP BY {lg}, g.model),
k AS (SELECT {", ".join(names)}, count(*) AS sessions
      FROM (SELECT DISTINCT {cols}, p.key FROM pj p) d GROUP BY {", ".join(names)})
SELECT 'line', {x1}, {x2}, NULL, NULL, {xs}, k.sessions, {info}, x.models, x.unpriced, x.unpriced_tokens
FROM (SELECT {mg}, {named}, {models} FROM lm m GROUP BY {mg}) x JOIN k ON {on} {join}
UNION ALL
SELECT 'total', NULL, NULL, NULL, NULL, {_OUT}, (SELECT count(*) FROM (SELECT DISTINCT p.key FROM pj p) d), {none},
       NULL, NULL, NULL
FROM g
UNION ALL
SELECT 'model', NULL, NULL, g.model, NULL, {_OUT}, NULL, {none}, NULL, NULL, NULL FROM g GROUP BY g.model
UNION ALL
SELECT 'source', NULL, NULL, NULL, g.source, {_OUT}, NULL, {none}, NULL, NULL, NULL FROM g GROUP BY g.source
"""


def query(by: str, b: Bounds, machine: str | None, differ: list[str], sessions: str = "huddle.sessions") -> str:
    """The statement: the report's sums per grouping set (see the module's text)."""
    per_machine = by == "machine"
    if per_machine:
        held = "SELECT session_key, machine AS m FROM huddle.session_machines" + (
            " WHERE machine = %(machine)s" if machine is not None else ""
        )
    elif machine is not None:
        held = "SELECT session_key, NULL::text AS m FROM huddle.session_machines WHERE machine = %(machine)s"
    else:
        held = ""
    join_held = "JOIN held hd ON hd.session_key = {k}" if held else ""
    m_col = "hd.m" if held else "NULL::text"
    # the branches are disjoint: shared ids; then the edges of the bounds; then other models than the hub prices
    picks = ["SELECT r.*, true AS shared FROM huddle.shared_ids s JOIN huddle.responses r"
             " ON r.source = s.source AND r.response_id = s.response_id AND r.response_id <> ''"]  # fmt: skip
    windows = []
    for i, (lo, hi) in enumerate(b.windows):
        conds = [f"r.t >= %(w{i}lo)s" if lo is not None else "", f"r.t < %(w{i}hi)s" if hi is not None else ""]
        windows.append(" AND ".join(c for c in conds if c))
        picks.append(f"SELECT r.*, false FROM huddle.responses r WHERE {windows[-1]} AND {_NOT_SHARED}")
    if differ:
        outside = "".join(f" AND NOT coalesce({w}, false)" for w in windows)
        picks.append(
            f"SELECT r.*, false FROM huddle.responses r WHERE r.model = ANY(%(differ)s) AND {_NOT_SHARED}{outside}"
        )
    kept, kept_day = "huddle.usage_sums", "u.day, u.agent_label"
    all_days = b.day_sql("u.day") == "true" and by not in ("day", "agent")
    if all_days:  # the per-session sums, fewer
        kept, kept_day = "huddle.session_sums", "NULL::integer AS day, NULL::text AS agent_label"
    lined = all_days and not differ and by in ("session", "machine", "totals")  # every_day.py: the kept lines
    if by == "totals" and not lined:
        by = "model"  # (its lines unread)
    kept_rows = (
        ""
        if lined  # (the kept lines are read as they are: the pieces are what the rows add)
        else f"""
  SELECT u.session_key AS key, {m_col} AS m, {kept_day}, u.model, u.source, u.n, u.input, u.output,
         u.cache_read, u.cache_write, u.cache_write_1h, u.first_t AS first, u.priced, u.odd, u.hi, u.lo, true AS kept
  FROM {kept} u {join_held.format(k="u.session_key")}
  WHERE {b.day_sql("u.day") if kept_day == "u.day, u.agent_label" else "true"}
    {"AND u.model <> ALL(%(differ)s)" if differ else ""}
  UNION ALL"""
    )
    return f"""
WITH {"held AS MATERIALIZED (" + held + ")," if held else ""}
prices AS (
  SELECT * FROM unnest(%(models)s::text[], %(b_in)s::float8[], %(b_out)s::float8[], %(b_cr)s::float8[],
    %(b_cw)s::float8[], %(b_cw1h)s::float8[], %(l_in)s::float8[], %(l_out)s::float8[], %(l_cr)s::float8[],
    %(l_cw)s::float8[], %(l_cw1h)s::float8[], %(above)s::bigint[])
    AS p(model, b_in, b_out, b_cr, b_cw, b_cw1h, l_in, l_out, l_cr, l_cw, l_cw1h, above)
),
picked AS ({" UNION ALL ".join(picks)}),
rowsd AS (  -- the responses read from their rows, each with its day and cost at the reader's rates
  SELECT r.session_key AS key, {m_col} AS m, r.source, r.response_id, r.t, r.agent_label, r.model, r.input, r.output,
         r.cache_read, r.cache_write, r.cache_write_1h, {day_of("r.t")} AS day, x.c, r.shared
  FROM picked r {join_held.format(k="r.session_key")}
  LEFT JOIN prices p ON p.model = r.model
  CROSS JOIN LATERAL (SELECT {cost()} AS c) x
  WHERE {good()}
),
owned AS MATERIALIZED (  -- an id several sessions hold counts in the first of them to start (read.counted's rule)
  SELECT x.*, NOT x.shared OR first_value(h.key) OVER (
           PARTITION BY x.m, x.source, x.response_id
           ORDER BY (h.started_at IS NULL), h.started_at, h.key COLLATE "C") = x.key AS counts
  FROM rowsd x JOIN huddle.sessions h ON h.key = x.key
),
pieces AS ({kept_rows}
  SELECT key, m, day, agent_label, model, source, count(*) AS n, sum(input) AS input, sum(output) AS output,
         sum(cache_read) AS cache_read, sum(cache_write) AS cache_write, sum(cache_write_1h) AS cache_write_1h,
         min(t) AS first, count(c) AS priced, count(*) FILTER (WHERE c IS NOT NULL AND {split_hi("c")} IS NULL) AS odd,
         coalesce(sum({split_hi("c")}), 0) AS hi, coalesce(sum({split_lo("c")}), 0) AS lo, false AS kept
  FROM owned WHERE counts AND {b.inside_sql("t", "day")}
    AND (shared {"OR model = ANY(%(differ)s)" if differ else ""} OR NOT ({b.day_sql("day")}))  -- (not in a sum)
  GROUP BY 1, 2, 3, 4, 5, 6
),
pj AS (
  {
        "SELECT p.*, h.project FROM pieces p JOIN huddle.sessions h ON h.key = p.key"
        if by == "project"
        else "SELECT p.* FROM pieces p"
    }
),
{_final(by, lined, machine is not None, sessions)}
UNION ALL  -- the responses another session counts, said as one number (per machine with --by machine)
SELECT 'dupes', m, NULL, NULL, NULL, count(*), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM owned WHERE NOT counts GROUP BY m
"""


def _final(by: str, lined: bool, machine: bool, sessions: str) -> str:
    """The statement's last CTEs and its rows but the duplicates'."""
    if not lined:
        return _sets(by, sessions)
    if by == "session":
        return every_day.by_session(sessions, machine)
    if by == "machine":
        return every_day.by_machine()
    return every_day.only_totals(machine)


def params(b: Bounds, machine: str | None, differ: list[str], cols: dict[str, list]) -> dict[str, Any]:
    out: dict[str, Any] = {**cols, "machine": machine, "differ": differ}
    for i, (lo, hi) in enumerate(b.windows):
        out[f"w{i}lo"], out[f"w{i}hi"] = lo, hi
    return out


def price_arrays(table: Any, models: list[str]) -> dict[str, list]:
    """The reader's rates of these models as the statement's arrays (prices.rates_of)."""
    from .prices import RATE_COLS, rates_of

    cols: dict[str, list] = {"models": [], **{c: [] for c in RATE_COLS}}
    for name in models:
        r = rates_of(table, name)
        if not r:
            continue
        cols["models"].append(name)
        for c, v in zip(RATE_COLS, r, strict=True):
            cols[c].append(v)
    return cols


class Summed:
    """A grouping set's row, as the fields usage.report.Line keeps."""

    __slots__ = ("first", "hi", "lo", "n", "odd", "priced", "sessions", "tokens")

    def __init__(self, row: tuple) -> None:
        w = WIDTH
        self.n = int(row[w] or 0)
        self.tokens = tuple(int(v or 0) for v in row[w + 1 : w + 6])
        self.first = row[w + 6]
        self.priced = int(row[w + 7] or 0)
        self.odd = int(row[w + 8] or 0)
        self.hi, self.lo = row[w + 9], row[w + 10]
        self.sessions = int(row[w + 11] or 0)

    def cost(self) -> list[float]:
        return exact_cost(self.hi, self.lo)
