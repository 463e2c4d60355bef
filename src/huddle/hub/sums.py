"""`huddle usage --hub` summed in PostgreSQL: per session, UTC day, agent and model, the
shape the local usage index gives `views.usage.aggregate` (its `groups`), so the report
is the one the rows would give, figure for figure, without every row crossing the wire.

What makes it the same report and not a near one:
- a response counts once, in the first session to hold its id (read.counted's rule);
- its cost is computed in SQL with the same float operations, in the same order, as
  views.pricing.Rates.cost (IEEE doubles on both sides: the same bits);
- costs are summed exactly: each double is split, exactly, into whole multiples of
  2**-40 and of 2**-100, summed as bigints (PostgreSQL sums them in 128 bits or numeric,
  never rounding); the exact sum goes to the report as partials (views.usage.add_exact),
  as the local index keeps them;
- the day is the UTC date Python's datetime gives (its rounding to the microsecond).
A pricing table with rates no double product can hold, a cost too small or too large
to split so, or a row PostgreSQL's checked arithmetic refuses (an overflow), is summed
from the rows instead (read.counted).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from huddle.model.times import iso
from huddle.views.usage import _day


def _day_number(t: str) -> str:
    """The UTC day (days since 1970-01-01) Python's datetime.fromtimestamp gives `t`: its
    seconds rounded to the microsecond, half to even (PostgreSQL's round(double
    precision) is rint), a fraction that rounds up to a whole second carried over."""
    frac = f"round(({t} - trunc({t})) * 1000000::float8)"
    carry = f"CASE WHEN {frac} >= 1000000::float8 THEN 1 WHEN {frac} < 0 THEN -1 ELSE 0 END"
    return f"floor((trunc({t}) + {carry}) / 86400::float8)"


def _cost(p: str) -> str:
    """views.pricing.Rates.cost, operation for operation (`p` names the rates)."""
    return (
        f"(r.input * {p}_in + r.output * {p}_out + r.cache_read * {p}_cr"
        f" + (r.cache_write - r.cache_write_1h) * {p}_cw + r.cache_write_1h * {p}_cw1h) / 1000000::float8"
    )


# A cost c is split exactly into whole multiples of 2**-40 and of 2**-100 (both bigint):
# c * 2**40 is exact (a power of two), its floor and what is left are too, and what is
# left times 2**60 is whole when c's last bit is worth at least 2**-100, i.e. when
# |c| >= 2**-48 (or c is 0). A cost outside [2**-48, 2**22) USD is not split: the rows
# decide then (a flag says so).
LOW, HIGH = math.ldexp(1.0, -48), math.ldexp(1.0, 22)
SCALE_HI, SCALE_LO = math.ldexp(1.0, 40), math.ldexp(1.0, 60)

QUERY = f"""
WITH resp AS NOT MATERIALIZED (  -- the responses of the sessions the machine holds (every session's when none is named)
  SELECT * FROM huddle.responses r
  WHERE %(machine)s::text IS NULL
     OR r.session_key IN (SELECT m.session_key FROM huddle.session_machines m WHERE m.machine = %(machine)s)
),
prices AS (
  SELECT * FROM unnest(%(models)s::text[], %(b_in)s::float8[], %(b_out)s::float8[], %(b_cr)s::float8[],
    %(b_cw)s::float8[], %(b_cw1h)s::float8[], %(l_in)s::float8[], %(l_out)s::float8[], %(l_cr)s::float8[],
    %(l_cw)s::float8[], %(l_cw1h)s::float8[], %(above)s::bigint[])
    AS p(model, b_in, b_out, b_cr, b_cw, b_cw1h, l_in, l_out, l_cr, l_cw, l_cw1h, above)
),
shared AS (  -- response ids held by more than one session: only they need an owner decided
  SELECT source, response_id FROM resp WHERE response_id <> ''
  GROUP BY 1, 2 HAVING min(session_key COLLATE "C") <> max(session_key COLLATE "C")
),
lost AS (  -- their responses in a session other than the first to hold the id (read.counted's rule)
  SELECT session_key, response_key FROM (
    SELECT r.session_key, r.response_key, first_value(h.key) OVER (
             PARTITION BY r.source, r.response_id
             ORDER BY (h.started_at IS NULL), h.started_at, h.key COLLATE "C") AS owner
    FROM resp r JOIN shared s ON s.source = r.source AND s.response_id = r.response_id
    JOIN huddle.sessions h ON h.key = r.session_key
  ) o WHERE owner <> session_key
),
c AS (  -- the responses counted here, inside the bounds, each with its day and cost
  SELECT r.session_key AS key, r.t, r.agent_label, r.model, r.input, r.output, r.cache_read, r.cache_write,
         r.cache_write_1h, CASE WHEN r.t IS NULL THEN NULL ELSE {_day_number("r.t")} END AS day,
         CASE WHEN p.model IS NULL THEN NULL
              WHEN p.above IS NOT NULL AND r.input + r.cache_read + r.cache_write > p.above THEN {_cost("p.l")}
              ELSE {_cost("p.b")} END AS cost
  FROM resp r LEFT JOIN prices p ON p.model = r.model
  WHERE (r.session_key, r.response_key) NOT IN (SELECT session_key, response_key FROM lost)  -- a hash, not a sort
    AND (%(since)s::float8 IS NULL OR r.t >= %(since)s::float8)
    AND (%(until)s::float8 IS NULL OR r.t < %(until)s::float8)
),
g AS (
  SELECT key, day, agent_label, model, count(*) AS n, sum(input) AS input, sum(output) AS output,
         sum(cache_read) AS cache_read, sum(cache_write) AS cache_write, sum(cache_write_1h) AS cache_write_1h,
         min(t) AS first, bool_or(cost IS NOT NULL) AS priced,
         bool_or(cost <> 0 AND NOT (abs(cost) >= %(low)s::float8 AND abs(cost) < %(high)s::float8)) AS odd,
         sum(floor(cost * %(hi)s::float8)::bigint) AS hi,
         sum(((cost * %(hi)s::float8 - floor(cost * %(hi)s::float8)) * %(lo)s::float8)::bigint) AS lo
  FROM c GROUP BY 1, 2, 3, 4
)
SELECT g.key, h.source, h.id, h.title, h.project, h.started_at, g.day, g.agent_label, g.model, 0, g.n,
       g.input, g.output, g.cache_read, g.cache_write, g.cache_write_1h, g.first, g.priced, g.odd, g.hi, g.lo
FROM g JOIN huddle.sessions h ON h.key = g.key
UNION ALL  -- the responses another session counts, said as one number
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, count(*), 0,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM lost
"""


# rates above this may overflow a double once multiplied by a bigint count of tokens:
# PostgreSQL's checked arithmetic would refuse what Python makes infinite
RATE_MAX = 1e280


def _price_arrays(conn: Any, table: Any) -> dict[str, list] | None:
    """Each model's rates as the query's arrays; None when some rate is not a plain
    finite number (the rows are summed in Python then, as before)."""
    names = [m for (m,) in conn.execute("SELECT DISTINCT model FROM huddle.responses")]
    cols: dict[str, list] = {k: [] for k in ("models", "b_in", "b_out", "b_cr", "b_cw", "b_cw1h")}
    cols.update({k: [] for k in ("l_in", "l_out", "l_cr", "l_cw", "l_cw1h", "above")})
    for name in names:
        p = table.price(name)
        if p is None:
            continue
        cols["models"].append(name)
        for side, rates in (("b", p.base), ("l", p.long)):
            vals = (
                [None] * 5
                if rates is None
                else [rates.input, rates.output, rates.cache_read, rates.cache_write, rates.cache_write_1h]
            )
            if any(
                v is not None and not (isinstance(v, float) and math.isfinite(v) and abs(v) < RATE_MAX) for v in vals
            ):
                return None
            for k, v in zip(("in", "out", "cr", "cw", "cw1h"), vals, strict=True):
                cols[f"{side}_{k}"].append(v)
        cols["above"].append(p.above if p.long is not None else None)
    return cols


def partials(exponents: dict[int, int]) -> list[float]:
    """The exact sum of {e: m}, each standing for m * 2**(e - 1075) (as a double of
    biased exponent e and signed integer mantissa m is), as a few doubles that add up
    to it exactly (what views.usage.add_exact keeps)."""
    if not exponents:
        return []
    low = min(exponents)
    whole = sum(m << (e - low) for e, m in exponents.items())
    rest = Fraction(whole) * Fraction(2) ** (low - 1075)
    out: list[float] = []
    while rest:
        hi = float(rest)
        out.append(hi)
        rest -= Fraction(hi)
    return out


def session_head(key: str, source: str, sid: str, title: str, project: str, started_at: float | None) -> dict:
    """What a report says of a session beside its counts (views.usage.session_info)."""
    return {"key": key, "source": source, "id": sid, "title": title, "project": project, "started_at": iso(started_at)}


def counted_groups(conn: Any, table: Any, machine: str | None, since: float | None, until: float | None) -> dict | None:
    """The counted usage of the sessions a machine holds (all when None), at or after
    `since` and before `until`, as per-session `groups` (views.usage.aggregate's input,
    already bounded). None when the sums cannot be had in SQL (see the module's text)."""
    cols = _price_arrays(conn, table)
    if cols is None:
        conn.commit()
        return None
    from huddle.hub import driver

    args = {**cols, "machine": machine, "since": since, "until": until}
    args.update(low=LOW, high=HIGH, hi=SCALE_HI, lo=SCALE_LO)
    try:
        conn.execute("SET LOCAL work_mem = '64MB'")  # the hash of 100,000s of response ids in memory
        conn.execute("SET LOCAL jit = off")  # compiling costs more than this one pass saves
        rows = conn.execute(QUERY, args).fetchall()
    except driver().DataError:  # an overflow PostgreSQL refuses: the rows decide
        conn.rollback()
        return None
    conn.commit()
    sessions: dict[str, dict] = {}
    days: dict[float, str] = {}
    dupes = 0
    for (
        key,
        source,
        sid,
        title,
        project,
        started_at,
        day,
        label,
        model,
        d,
        n,
        *sums,
        first,
        priced,
        odd,
        hi,
        lo,
    ) in rows:
        dupes += d
        if not n:
            continue  # only responses another session counts, or outside the bounds
        if odd:
            return None  # a cost too small or too large to split exactly
        s = sessions.get(key)
        if s is None:
            s = sessions[key] = {**session_head(key, source, sid, title, project, started_at), "groups": []}
        if day is None:
            name = _day(None)
        elif day in days:
            name = days[day]
        else:
            name = days[day] = _day(day * 86400.0)
        cost = partials({975: (int(hi) << 60) + int(lo)}) if priced else None  # hi * 2**-40 + lo * 2**-100
        # [day, agent, model, 5 token sums, responses, cost (its exact partials) or None, first t]
        s["groups"].append([name, label, model, *(int(v) for v in sums), n, cost, first])
    return {"sessions": list(sessions.values()), "duplicates": dupes}
