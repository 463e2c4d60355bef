"""Two more kept tables, said from `huddle.session_sums` (triggers.py) by the same
statement triggers: what a report over every day reads whole instead of regrouping.

- `huddle.session_lines`: a session's line, one row each (its sums over every model,
  its models and the unpriced ones with their tokens): `--by session` and `--by
  machine` read 50,000 rows as they are, where grouping 114,000 cost the server a
  third of the report (10M-row bench hub).
- `huddle.model_sums`: the hub's totals per model and source (a few rows): the totals
  of a report over every day and every machine. Kept by difference (a session's rows
  go out, then in again), so no write sums the hub; tokens are numeric, as a sum of
  every machine's may pass a bigint.

Neither keeps a first time: no report says the first time of its totals, and a line's
is session_sums' least.
"""

from __future__ import annotations

_SUMS = "n, input, output, cache_read, cache_write, cache_write_1h"
_COST = "priced, odd, hi, lo"

# a session's sums, as session_sums and session_lines keep them
SUMMED = """
  n bigint NOT NULL,
  input bigint NOT NULL, output bigint NOT NULL, cache_read bigint NOT NULL,
  cache_write bigint NOT NULL, cache_write_1h bigint NOT NULL,
  first_t float8,
  priced bigint NOT NULL,
  odd bigint NOT NULL,
  hi numeric NOT NULL, lo numeric NOT NULL,"""

TABLES = f"""
CREATE TABLE huddle.session_lines (
  session_key text PRIMARY KEY,{SUMMED}
  models text[] NOT NULL,  -- its models, each once, in code point order (as Python sorts them)
  unpriced text[],  -- of them, those with no rates (NULL: none), in that order
  unpriced_tokens bigint[]  -- and their tokens (input, output, cache read and write), one each
);
CREATE TABLE huddle.model_sums (
  model text NOT NULL,
  source text NOT NULL,
  n bigint NOT NULL,
  input numeric NOT NULL, output numeric NOT NULL, cache_read numeric NOT NULL,
  cache_write numeric NOT NULL, cache_write_1h numeric NOT NULL,
  priced bigint NOT NULL,
  odd bigint NOT NULL,
  hi numeric NOT NULL, lo numeric NOT NULL,
  PRIMARY KEY (model, source)
);
"""


def restate_lines(keys: str) -> str:
    """session_lines of the sessions `keys` (a query) said again from their session_sums
    (a session with none has no line)."""
    by_model = (  # (a model under two sources: once)
        f"SELECT session_key, model, sum(n) AS n, sum(input) AS input, sum(output) AS output,"
        f" sum(cache_read) AS cache_read, sum(cache_write) AS cache_write, sum(cache_write_1h) AS cache_write_1h,"
        f" min(first_t) AS first_t, sum(priced) AS priced, sum(odd) AS odd, sum(hi) AS hi, sum(lo) AS lo"
        f" FROM huddle.session_sums WHERE session_key IN ({keys}) GROUP BY 1, 2"
    )
    c = 'ORDER BY model COLLATE "C"'
    return f"""
DELETE FROM huddle.session_lines WHERE session_key IN ({keys});
INSERT INTO huddle.session_lines (session_key, {_SUMS}, first_t, {_COST}, models, unpriced, unpriced_tokens)
SELECT session_key, sum(n), sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cache_write_1h),
  min(first_t), sum(priced), sum(odd), sum(hi), sum(lo), array_agg(model {c}),
  array_agg(model {c}) FILTER (WHERE priced = 0),
  array_agg(input + output + cache_read + cache_write {c}) FILTER (WHERE priced = 0)
FROM ({by_model}) s GROUP BY 1 ORDER BY 1;
"""


def move_models(where: str, sign: int) -> str:
    """Add (1) or take out (-1) the session_sums rows `where` to or from model_sums."""
    s = f"{sign}"
    sums = ", ".join(f"{s} * sum({c})" for c in (_SUMS + ", " + _COST).split(", "))
    keep = ", ".join(f"{c} = m.{c} + excluded.{c}" for c in (_SUMS + ", " + _COST).split(", "))
    return f"""
INSERT INTO huddle.model_sums AS m (model, source, {_SUMS}, {_COST})
SELECT model, source, {sums} FROM huddle.session_sums WHERE {where} GROUP BY 1, 2 ORDER BY 1, 2
ON CONFLICT (model, source) DO UPDATE SET {keep};
"""


DROP_EMPTY = "DELETE FROM huddle.model_sums WHERE n = 0;\n"


def fill() -> str:
    """Migration 4: both said from the session_sums a hub holds, then read by its roles."""
    return f"""
{TABLES}
{restate_lines("SELECT session_key FROM huddle.session_sums")}
{move_models("true", 1)}
ANALYZE huddle.session_lines;
ANALYZE huddle.model_sums;
DO $grant$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'huddle_lead') THEN
    GRANT SELECT ON huddle.session_lines, huddle.model_sums TO huddle_lead;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'huddle_machine') THEN
    GRANT SELECT ON huddle.session_lines, huddle.model_sums TO huddle_machine;
  END IF;
END $grant$;
"""
