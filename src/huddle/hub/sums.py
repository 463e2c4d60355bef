"""The arithmetic that lets PostgreSQL sum usage exactly as `huddle usage` does.

What makes the hub's report the same report and not a near one:
- a response's cost is computed in SQL with the same float operations, in the same
  order, as cost.pricing.Rates.cost (IEEE doubles on both sides: the same bits);
- costs are summed exactly: each double is split, exactly, into whole multiples of
  2**-40 and of 2**-100, summed as numerics (never rounding); the exact sum goes to the
  report as partials (usage.report.add_exact), as the local index keeps them;
- the day is the UTC date Python's datetime gives (its rounding to the microsecond).
A cost too small or too large to split so is flagged (`odd`): the rows decide then.
A response with a time or count out of range (what a hostile or broken machine may
write) is in no sum (`GOOD`).
"""

from __future__ import annotations

import math
from fractions import Fraction

from huddle.model.events import COUNT_MAX  # the most tokens one response may count (issue 34)
from huddle.model.times import LATEST

UNKNOWN_DAY = -2147483648  # usage_sums.day of responses with no time


def day_number(t: str) -> str:
    """The UTC day (days since 1970-01-01) Python's datetime.fromtimestamp gives `t`: its
    seconds rounded to the microsecond, half to even (PostgreSQL's round(double
    precision) is rint), a fraction that rounds up to a whole second carried over."""
    frac = f"round(({t} - trunc({t})) * 1000000::float8)"
    carry = f"CASE WHEN {frac} >= 1000000::float8 THEN 1 WHEN {frac} < 0 THEN -1 ELSE 0 END"
    return f"floor((trunc({t}) + {carry}) / 86400::float8)"


def day_of(t: str) -> str:
    """The day as usage_sums keeps it (an integer; UNKNOWN_DAY for no time)."""
    return f"(CASE WHEN {t} IS NULL THEN {UNKNOWN_DAY} ELSE ({day_number(t)})::integer END)"


def cost_with(p: str, r: str = "r") -> str:
    """cost.pricing.Rates.cost, operation for operation (`p` names the rates)."""
    return (
        f"({r}.input * {p}_in + {r}.output * {p}_out + {r}.cache_read * {p}_cr"
        f" + ({r}.cache_write - {r}.cache_write_1h) * {p}_cw + {r}.cache_write_1h * {p}_cw1h) / 1000000::float8"
    )


def band(p: str = "p", r: str = "r") -> str:
    """1 when the long-context rates apply to this response (Price.request_cost_of), else 0."""
    return (
        f"(CASE WHEN {p}.l_in IS NOT NULL AND {p}.above IS NOT NULL"
        f" AND {r}.input + {r}.cache_read + {r}.cache_write > {p}.above THEN 1 ELSE 0 END)"
    )


def cost(p: str = "p", r: str = "r") -> str:
    """A response's cost at the rates `p` (NULL when its model is unpriced)."""
    return (
        f"(CASE WHEN {p}.b_in IS NULL THEN NULL WHEN {band(p, r)} = 1 THEN {cost_with(p + '.l', r)}"
        f" ELSE {cost_with(p + '.b', r)} END)"
    )


# A cost c is split exactly into whole multiples of 2**-40 and of 2**-100 (both bigint):
# c * 2**40 is exact (a power of two), its floor and what is left are too, and what is
# left times 2**60 is whole when c's last bit is worth at least 2**-100, i.e. when
# |c| >= 2**-48 (or c is 0). A cost outside [2**-48, 2**22) USD is not split: `odd`.
LOW, HIGH = math.ldexp(1.0, -48), math.ldexp(1.0, 22)
SCALE_HI, SCALE_LO = math.ldexp(1.0, 40), math.ldexp(1.0, 60)


def odd(c: str) -> str:
    return f"({c} IS NOT NULL AND {c} <> 0 AND NOT ({c} >= {LOW!r}::float8 AND {c} < {HIGH!r}::float8))"


def split_hi(c: str) -> str:
    return f"(CASE WHEN {odd(c)} OR {c} IS NULL THEN NULL ELSE floor({c} * {SCALE_HI!r}::float8)::bigint END)"


def split_lo(c: str) -> str:
    return (
        f"(CASE WHEN {odd(c)} OR {c} IS NULL THEN NULL"
        f" ELSE (({c} * {SCALE_HI!r}::float8 - floor({c} * {SCALE_HI!r}::float8)) * {SCALE_LO!r}::float8)::bigint END)"
    )


def good(r: str = "r") -> str:
    """A response every sum may take: a time a calendar can say (none past 2200 either
    way; NaN is above every number in PostgreSQL), counts a record may hold."""
    most = COUNT_MAX
    counts = " AND ".join(
        f"{r}.{c} BETWEEN 0 AND {most}" for c in ("input", "output", "cache_read", "cache_write", "cache_write_1h")
    )
    return f"(({r}.t > -{LATEST!r} AND {r}.t < {LATEST!r}) OR {r}.t IS NULL) AND {counts}"


def not_shared(r: str = "r") -> str:
    """A response whose id no other session holds (shared ids are in no sum: triggers.py)."""
    return (
        f"NOT ({r}.response_id <> '' AND EXISTS (SELECT 1 FROM huddle.shared_ids s"
        f" WHERE s.source = {r}.source AND s.response_id = {r}.response_id))"
    )


def partials(exponents: dict[int, int]) -> list[float]:
    """The exact sum of {e: m}, each standing for m * 2**(e - 1075) (as a double of
    biased exponent e and signed integer mantissa m is), as a few doubles that add up
    to it exactly (what usage.report.add_exact keeps)."""
    if not exponents:
        return []
    low = min(exponents)
    whole = sum(m << (e - low) for e, m in exponents.items())
    scale = low - 1075
    out: list[float] = []
    if scale >= -1000:  # no piece is subnormal: each is its integer's double, scaled exactly
        while whole:
            hi = float(whole)
            out.append(math.ldexp(hi, scale))
            whole -= int(hi)
        return out
    rest = Fraction(whole) * Fraction(2) ** scale
    while rest:
        piece = float(rest)
        out.append(piece)
        rest -= Fraction(piece)
    return out


def exact_cost(hi: object, lo: object) -> list[float]:
    """hi * 2**-40 + lo * 2**-100 (sums of the split costs) as exact partials."""
    return partials({975: (int(hi or 0) << 60) + int(lo or 0)})  # type: ignore[call-overload]
