"""The rates the hub's sums are priced at (`huddle.prices`), kept in line with huddle's
price table.

A machine that pushes, with huddle's own table (no user pricing file), prices models
the hub has no rates for, and re-prices the models whose rates its table dates later
than the hub's: their sums are added up again from the rows, under the writers' lock,
so no sum is ever half one price and half another. A user's own pricing file is
never imposed on the team: a report with other rates than the hub's (a user file, an
older or newer huddle) sums those models from the rows instead, at its own rates, and
so still says exactly what that user's `huddle usage` says.
"""

from __future__ import annotations

import math
from typing import Any

from .triggers import LOCK

RATE_COLS = ("b_in", "b_out", "b_cr", "b_cw", "b_cw1h", "l_in", "l_out", "l_cr", "l_cw", "l_cw1h", "above")
RATE_MAX = 1e6  # USD per million tokens: a rate past it is not one the sums take (issue 34's bound)


def rates_of(table: Any, model: str) -> tuple | None:
    """A model's rates as the hub keeps them (RATE_COLS), None when unpriced, or False
    when they are not plain finite numbers the sums can take."""
    p = table.price(model)
    if p is None:
        return None
    base = p.base
    vals: list[Any] = [base.input, base.output, base.cache_read, base.cache_write, base.cache_write_1h]
    if p.long is not None:
        lg = p.long
        vals += [lg.input, lg.output, lg.cache_read, lg.cache_write, lg.cache_write_1h, int(p.above)]
    else:
        vals += [None] * 6
    for v in vals[:10]:
        if v is not None and not (isinstance(v, float) and math.isfinite(v) and 0 <= v <= RATE_MAX):
            return False  # type: ignore[return-value]
    return tuple(vals)


def hub_rates(conn: Any) -> dict[str, tuple | None]:
    out: dict[str, tuple | None] = {}
    for model, *vals in conn.execute(f"SELECT model, {', '.join(RATE_COLS)} FROM huddle.prices"):
        out[model] = None if vals[0] is None else tuple(vals)
    return out


def _as_of(conn: Any) -> str:
    row = conn.execute("SELECT max(as_of) FROM huddle.prices WHERE b_in IS NOT NULL").fetchone()
    return (row[0] if row else "") or ""


def differing(conn: Any, table: Any) -> tuple[list[str], bool]:
    """The models whose rates in `table` are not the hub's (their sums cannot be used),
    and whether some rate cannot be summed in SQL at all."""
    out = []
    for model, theirs in hub_rates(conn).items():
        mine = rates_of(table, model)
        if mine is False:
            return [], False
        if mine != theirs:
            out.append(model)
    conn.commit()
    return out, True


def sync(conn: Any, table: Any, models: list[str] | None = None) -> list[str]:
    """Give the hub this table's rates where they are wanted: models it has none for
    (`models`: the ones about to be pushed, added first), and every model when this is
    huddle's own table dated later than the hub's. Returns the models re-priced."""
    own = not getattr(table, "user_file", None)
    with conn.transaction():
        have = hub_rates(conn)
        fresh = sorted(set(models or ()) - set(have))
        if fresh:  # no response names them yet (the triggers would have listed them): priced as they come
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
            for model in fresh:
                mine = rates_of(table, model)
                vals = mine if mine else (None,) * len(RATE_COLS)
                conn.execute(
                    f"INSERT INTO huddle.prices (model, {', '.join(RATE_COLS)}, as_of)"
                    f" VALUES (%s, {', '.join(['%s'] * len(RATE_COLS))}, %s) ON CONFLICT DO NOTHING",
                    (model, *vals, table.as_of if own and mine else ""),
                )
            have = hub_rates(conn)
        newer = own and table.as_of > _as_of(conn)
        change: dict[str, tuple | None] = {}
        for model, theirs in have.items():
            mine = rates_of(table, model)
            if mine is False or mine == theirs:
                continue
            if (theirs is None and mine is not None) or newer:
                change[model] = mine
        if not change:
            return []
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        names = sorted(change)
        for model in names:
            vals = change[model] or (None,) * len(RATE_COLS)
            conn.execute(
                f"UPDATE huddle.prices SET ({', '.join(RATE_COLS)}, as_of) = ({', '.join(['%s'] * len(RATE_COLS))}, %s)"
                " WHERE model = %s",
                (*vals, table.as_of if own else "", model),
            )
        # (the owner's function: a machine writes no sum; a re-pricing reads the model's every response)
        conn.execute("SELECT huddle.reprice(%s::text[])", (names,))
    return names
