"""The hub keeps usage summed as responses are written: `huddle.usage_sums`.

One row per session, UTC day, agent, model and price band (and source) (base or long-context rates)
holds the count, the token sums, the first time and the exact cost sum (sums.py) of the
responses counted there, priced at the rates in `huddle.prices`. Statement triggers on
`huddle.responses` keep it so for every write, whoever makes it (a push, a copy, a
session deleted with its responses, psql): what was there leaves the sums, what is
there now enters them. A report then reads a few hundred thousand sums at most, not
every response (hub/report.py).

A response id held by two sessions (a fork's copy) is counted in one of them only, and
which one depends on the machines a report looks at: such ids go to `shared_ids` and
their responses leave the sums for good (a report decides their owner from the rows;
there are few). Responses out of range (sums.good) are counted in `bad_responses` per
session, never summed. Writers take one advisory lock for the transaction, so two
machines writing the same id at once cannot both count it, and a re-pricing
(hub/prices.py) never interleaves with a write.
"""

from __future__ import annotations

from . import lines
from .sums import UNKNOWN_DAY, band, cost, day_of, good, not_shared, split_hi, split_lo

LOCK = 0x68756465  # pg_advisory_xact_lock key of every write to the sums ("hude")

_NOT_SHARED = not_shared()


def fold(rows: str, sign: int, where: str = "") -> str:
    """Add (sign 1) or take out (-1) the responses `rows` (a table or a subquery aliased
    r's columns) to or from the sums. Taking out marks a group whose first time may
    have gone (NaN); `settle` works those out again."""
    s = f"{sign}"
    first = (
        "least(u.first_t, excluded.first_t)"
        if sign > 0
        else "CASE WHEN excluded.first_t IS NOT NULL AND excluded.first_t <= u.first_t THEN 'NaN'::float8"
        " ELSE u.first_t END"
    )
    return f"""
INSERT INTO huddle.usage_sums AS u (session_key, day, agent_label, model, band, source, n, input, output,
  cache_read, cache_write, cache_write_1h, first_t, priced, odd, hi, lo)
SELECT session_key, day, agent_label, model, band, source, {s} * count(*), {s} * sum(input), {s} * sum(output),
  {s} * sum(cache_read), {s} * sum(cache_write), {s} * sum(cache_write_1h), min(t), {s} * count(c),
  {s} * count(*) FILTER (WHERE c IS NOT NULL AND hi IS NULL), {s} * coalesce(sum(hi), 0), {s} * coalesce(sum(lo), 0)
FROM (
  SELECT r.session_key, r.agent_label, r.model, r.source, r.t, r.input, r.output, r.cache_read, r.cache_write,
         r.cache_write_1h, {day_of("r.t")} AS day, {band()} AS band, x.c, {split_hi("x.c")} AS hi, {split_lo("x.c")} AS lo
  FROM {rows} r LEFT JOIN huddle.prices p ON p.model = r.model
  CROSS JOIN LATERAL (SELECT {cost()} AS c) x
  WHERE {good()} {where}
) g
GROUP BY 1, 2, 3, 4, 5, 6
ORDER BY 1, 2, 3, 4, 5, 6
ON CONFLICT (session_key, day, agent_label, model, band, source) DO UPDATE SET
  n = u.n + excluded.n, input = u.input + excluded.input, output = u.output + excluded.output,
  cache_read = u.cache_read + excluded.cache_read, cache_write = u.cache_write + excluded.cache_write,
  cache_write_1h = u.cache_write_1h + excluded.cache_write_1h, priced = u.priced + excluded.priced,
  odd = u.odd + excluded.odd, hi = u.hi + excluded.hi, lo = u.lo + excluded.lo, first_t = {first};
"""


# the first time of a group whose earliest response was taken out, from the rows left
SETTLE = f"""
UPDATE huddle.usage_sums u SET first_t = (
  SELECT min(r.t) FROM huddle.responses r LEFT JOIN huddle.prices p ON p.model = r.model
  WHERE r.session_key = u.session_key AND r.agent_label = u.agent_label AND r.model = u.model
    AND r.source = u.source AND {day_of("r.t")} = u.day AND {band()} = u.band AND {good()} AND {_NOT_SHARED})
WHERE u.first_t = 'NaN'::float8;
DELETE FROM huddle.usage_sums WHERE n = 0;
"""


def _bad(rows: str, sign: int) -> str:
    return f"""
INSERT INTO huddle.bad_responses AS b (session_key, n)
SELECT r.session_key, {sign} * count(*) FROM {rows} r WHERE NOT ({good()}) GROUP BY 1 ORDER BY 1
ON CONFLICT (session_key) DO UPDATE SET n = b.n + excluded.n;
DELETE FROM huddle.bad_responses WHERE n = 0;
"""


def _taken_out(rows: str) -> str:
    return _bad(rows, -1) + fold(rows, -1, f"AND {_NOT_SHARED}") + SETTLE


def _touched(rows: str) -> str:
    """The sessions whose sums a write of `rows` may change: theirs, and those holding an
    id the write made shared (their responses left the sums)."""
    return (
        f"SELECT session_key FROM {rows} UNION SELECT r.session_key FROM huddle.responses r"
        f" JOIN huddle.shared_ids s ON s.source = r.source AND s.response_id = r.response_id"
        f" JOIN {rows} n ON n.source = s.source AND n.response_id = s.response_id WHERE r.response_id <> ''"
    )


def resession(keys: str, version: int = 4) -> str:
    """session_sums of the sessions `keys` (a query) said again from their usage_sums: a
    few rows each (usage_sums' key starts with the session), and no first time to settle;
    from schema 4 their lines and the hub's totals per model too (lines.py)."""
    restated = f"""
DELETE FROM huddle.session_sums WHERE session_key IN ({keys});
INSERT INTO huddle.session_sums ({_SESSION_COLS})
SELECT {_SESSION_SUMS} FROM huddle.usage_sums WHERE session_key IN ({keys}) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
"""
    if version < 4:
        return restated
    theirs = f"session_key IN ({keys})"
    return (
        lines.move_models(theirs, -1)
        + restated
        + lines.move_models(theirs, 1)
        + lines.DROP_EMPTY
        + lines.restate_lines(keys)
    )


_SESSION_COLS = "session_key, model, source, n, input, output, cache_read, cache_write, cache_write_1h, first_t, priced, odd, hi, lo"
_SESSION_SUMS = (
    "session_key, model, source, sum(n), sum(input), sum(output), sum(cache_read), sum(cache_write),"
    " sum(cache_write_1h), min(first_t), sum(priced), sum(odd), sum(hi), sum(lo)"
)


def _put_in(rows: str) -> str:
    """New responses in: ids they make shared take their other holders' responses out of
    the sums (counted there until now), then the new ones not shared go in."""
    newly = f"""
WITH cand AS (SELECT DISTINCT source, response_id FROM {rows} WHERE response_id <> ''),
multi AS (
  SELECT c.source, c.response_id FROM cand c
  JOIN huddle.responses r ON r.source = c.source AND r.response_id = c.response_id AND r.response_id <> ''
  WHERE NOT EXISTS (SELECT 1 FROM huddle.shared_ids s WHERE s.source = c.source AND s.response_id = c.response_id)
  GROUP BY 1, 2 HAVING min(r.session_key) <> max(r.session_key)
),
marked AS (INSERT INTO huddle.shared_ids (source, response_id) SELECT source, response_id FROM multi
           ON CONFLICT DO NOTHING RETURNING source, response_id)
"""
    before = (
        "(SELECT r.* FROM marked m JOIN huddle.responses r ON r.source = m.source AND r.response_id = m.response_id"
        " AND r.response_id <> ''"
        f" WHERE NOT EXISTS (SELECT 1 FROM {rows} n"
        " WHERE n.session_key = r.session_key AND n.response_key = r.response_key))"
    )
    return (
        f"INSERT INTO huddle.prices (model) SELECT DISTINCT model FROM {rows} ORDER BY 1 ON CONFLICT DO NOTHING;\n"
        + _bad(rows, 1)
        + newly
        + fold(before, -1)
        + SETTLE
        + fold(rows, 1, f"AND {_NOT_SHARED}")
    )


def _function(name: str, body: str) -> str:
    # SECURITY DEFINER: a pushing role writes responses; the sums are the hub owner's to keep
    return f"""
CREATE OR REPLACE FUNCTION huddle.{name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $body$
BEGIN
  PERFORM pg_advisory_xact_lock({LOCK});
  {body}
  RETURN NULL;
END
$body$;
"""


def _reprice(version: int) -> str:
    """huddle.reprice as schema `version` has it: these models' sums added up again from
    their rows, at the rates huddle.prices now holds (and what is kept from them)."""
    theirs = "model = ANY(models)"
    sessions = f"""
  DELETE FROM huddle.session_sums WHERE {theirs};
  INSERT INTO huddle.session_sums ({_SESSION_COLS})
  SELECT {_SESSION_SUMS} FROM huddle.usage_sums WHERE {theirs} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
"""
    if version >= 4:  # (the same sessions hold these models after: only their costs moved)
        sessions = (
            lines.move_models(theirs, -1)
            + sessions
            + lines.move_models(theirs, 1)
            + lines.restate_lines(  # (session_lines has a column `models` too: the argument named whole)
                "SELECT session_key FROM huddle.session_sums WHERE model = ANY(reprice.models)"
            )
        )
    return f"""
CREATE OR REPLACE FUNCTION huddle.reprice(models text[]) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $body$
BEGIN
  PERFORM pg_advisory_xact_lock({LOCK});
  DELETE FROM huddle.usage_sums WHERE {theirs};
  {fold("(SELECT r.* FROM huddle.responses r WHERE r.model = ANY(models) AND " + _NOT_SHARED + ")", 1)}
  {SETTLE}
  {sessions if version >= 3 else ""}
END
$body$;
"""


def install(version: int = 4) -> str:
    """The functions and triggers as schema `version` has them (CREATE OR REPLACE: a
    later migration restates them); 2: before session_sums, 3: before session_lines."""

    def again(keys: str) -> str:
        return resession(keys, version) if version >= 3 else ""

    return _reprice(version) + (
        _function("responses_inserted", _put_in("new_rows") + again(_touched("new_rows")))
        + _function("responses_deleted", _taken_out("old_rows") + again("SELECT session_key FROM old_rows"))
        + _function(
            "responses_updated",
            _taken_out("old_rows")
            + _put_in("new_rows")
            + again(_touched("new_rows") + " UNION SELECT session_key FROM old_rows"),
        )
        + """
DROP TRIGGER IF EXISTS responses_inserted ON huddle.responses;
DROP TRIGGER IF EXISTS responses_deleted ON huddle.responses;
DROP TRIGGER IF EXISTS responses_updated ON huddle.responses;
CREATE TRIGGER responses_inserted AFTER INSERT ON huddle.responses REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION huddle.responses_inserted();
CREATE TRIGGER responses_deleted AFTER DELETE ON huddle.responses REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION huddle.responses_deleted();
CREATE TRIGGER responses_updated AFTER UPDATE ON huddle.responses
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION huddle.responses_updated();
"""
    )


TABLES = f"""
-- The rates usage_sums are priced at, per model as the responses name it (NULL rates: unpriced).
CREATE TABLE huddle.prices (
  model text PRIMARY KEY,
  b_in float8, b_out float8, b_cr float8, b_cw float8, b_cw1h float8,
  l_in float8, l_out float8, l_cr float8, l_cw float8, l_cw1h float8,
  above bigint,
  as_of text NOT NULL DEFAULT ''
);
CREATE TABLE huddle.shared_ids (
  source text NOT NULL,
  response_id text NOT NULL,
  PRIMARY KEY (source, response_id)
);
CREATE TABLE huddle.usage_sums (
  session_key text NOT NULL,
  day integer NOT NULL,  -- the UTC day Python's datetime gives the response's time; {UNKNOWN_DAY}: no time
  agent_label text NOT NULL,
  model text NOT NULL,
  band smallint NOT NULL,  -- 1: the long-context rates applied
  source text NOT NULL,  -- the responses' source (the session's: a report by source needs no join)
  n bigint NOT NULL,  -- (bigints: PostgreSQL sums them in 128 bits; a count past one is refused, not wrapped)
  input bigint NOT NULL, output bigint NOT NULL, cache_read bigint NOT NULL,
  cache_write bigint NOT NULL, cache_write_1h bigint NOT NULL,
  first_t float8,
  priced bigint NOT NULL,  -- responses with a cost
  odd bigint NOT NULL,  -- of them, costs that cannot be split exactly (sums.py)
  hi numeric NOT NULL, lo numeric NOT NULL,  -- the exact cost: hi * 2**-40 + lo * 2**-100
  PRIMARY KEY (session_key, day, agent_label, model, band, source)
);
CREATE INDEX usage_sums_day ON huddle.usage_sums (day);
CREATE INDEX usage_sums_unsettled ON huddle.usage_sums (session_key) WHERE first_t = 'NaN'::float8 OR n = 0;
CREATE TABLE huddle.bad_responses (
  session_key text PRIMARY KEY,
  n bigint NOT NULL
);
-- the edges of a --since/--until inside a day are read from the rows
CREATE INDEX responses_t ON huddle.responses (t);
-- the hub board: the sessions that moved lately first, and what was written since a look
-- (by the hub's own clock: a machine's may be off)
CREATE INDEX sessions_updated ON huddle.sessions (updated_at DESC NULLS LAST);
ALTER TABLE huddle.sessions ADD COLUMN changed_at float8 NOT NULL DEFAULT 0;
CREATE INDEX sessions_changed ON huddle.sessions (changed_at);
CREATE FUNCTION huddle.session_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  NEW.changed_at := extract(epoch FROM clock_timestamp());
  RETURN NEW;
END
$body$;
CREATE TRIGGER session_changed BEFORE INSERT OR UPDATE ON huddle.sessions
  FOR EACH ROW EXECUTE FUNCTION huddle.session_changed();
"""


SESSION_SUMS = f"""
-- usage_sums added up per session and model (no day, agent or band): what a report over
-- every day reads (by session, project, model, machine), a row per session or two
CREATE TABLE huddle.session_sums (
  session_key text NOT NULL,
  model text NOT NULL,
  source text NOT NULL,{lines.SUMMED}
  PRIMARY KEY (session_key, model, source)
);
INSERT INTO huddle.session_sums ({_SESSION_COLS})
SELECT {_SESSION_SUMS} FROM huddle.usage_sums GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
ANALYZE huddle.session_sums;  -- (the first reports' plans: not a guess at an empty table's)
DO $grant$ BEGIN  -- the roles `huddle hub init` made read it as they read usage_sums
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'huddle_lead') THEN
    GRANT SELECT ON huddle.session_sums TO huddle_lead;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'huddle_machine') THEN
    GRANT SELECT ON huddle.session_sums TO huddle_machine;
  END IF;
END $grant$;
"""


def backfill() -> str:
    """What a hub written before the sums holds, summed (unpriced until a machine prices
    it: hub/prices.py)."""
    return f"""
INSERT INTO huddle.prices (model) SELECT DISTINCT model FROM huddle.responses ON CONFLICT DO NOTHING;
INSERT INTO huddle.shared_ids (source, response_id)
  SELECT source, response_id FROM huddle.responses WHERE response_id <> ''
  GROUP BY 1, 2 HAVING min(session_key) <> max(session_key);
{resum()}
"""


def resum() -> str:
    """Every response summed again (into empty sums), the shared ids as they are."""
    return f"""
INSERT INTO huddle.bad_responses (session_key, n)
  SELECT r.session_key, count(*) FROM huddle.responses r WHERE NOT ({good()}) GROUP BY 1;
{fold("huddle.responses", 1, "AND " + _NOT_SHARED)}
"""
