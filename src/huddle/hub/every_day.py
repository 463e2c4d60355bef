"""Reports over every day, at the reader's rates as the hub's, read from the kept lines
(lines.py): `--by session` (each session's line as it is), `--by machine` (a machine's
line: the lines of the sessions it holds), and the totals (the hub's per model, or the
sessions a machine holds). What the rows add (`pieces`: responses whose id sessions
share, counted in the first to start) comes beside them: as pieces of a session's line
(read.summed adds them in) or summed into a machine's.

Each statement ends report.query's; `held` (a session's machines) is there when a
machine is asked for or the lines are per machine.
"""

from __future__ import annotations

_COLS = ("n", "input", "output", "cache_read", "cache_write", "cache_write_1h", "first", "priced", "odd", "hi", "lo")
_AGGS = ["sum"] * 6 + ["min"] + ["sum"] * 4
NONE = "NULL, NULL, NULL, NULL, NULL"


def _summed(src: str, named: bool = False) -> str:
    return ", ".join(f"{a}({src}.{c})" + (f" AS {c}" if named else "") for a, c in zip(_AGGS, _COLS, strict=True))


def _of(alias: str, first: str = "first_t") -> str:
    """session_lines' sums (or pieces', whose first time is `first`) in the order of _COLS."""
    return ", ".join(f"{alias}.{first if c == 'first' else c}" for c in _COLS)


def totals(machine: bool) -> tuple[str, str]:
    """(a CTE, the 'total', 'model' and 'source' rows): the hub's kept totals, or those
    of the sessions a machine holds (their session_sums), and the pieces."""
    if machine:
        kept = (
            "SELECT u.model, u.source, u.n, u.input, u.output, u.cache_read, u.cache_write, u.cache_write_1h,"
            " u.first_t, u.priced, u.odd, u.hi, u.lo"
            " FROM huddle.session_sums u JOIN held hd ON hd.session_key = u.session_key"
        )
        lined = "huddle.session_lines l JOIN held hd ON hd.session_key = l.session_key"
    else:
        kept = (
            "SELECT m.model, m.source, m.n, m.input, m.output, m.cache_read, m.cache_write, m.cache_write_1h,"
            " NULL::float8, m.priced, m.odd, m.hi, m.lo FROM huddle.model_sums m"
        )
        lined = "huddle.session_lines l"
    out = _summed("g")
    sessions = (  # a session with a line, or with pieces only
        f"(SELECT count(*) FROM {lined}) + (SELECT count(DISTINCT p.key) FROM pieces p"
        " WHERE NOT EXISTS (SELECT 1 FROM huddle.session_lines l WHERE l.session_key = p.key))"
    )
    cte = f"""
g AS MATERIALIZED (
  SELECT t.model, t.source, {_summed("t", named=True)}
  FROM ({kept} UNION ALL SELECT p.model, p.source, {_of("p", "first")} FROM pieces p) t(model, source, {", ".join(_COLS)})
  GROUP BY t.model, t.source
)"""
    rows = f"""
SELECT 'total', NULL, NULL, NULL, NULL, {out}, {sessions}, {NONE}, NULL, NULL, NULL FROM g
UNION ALL
SELECT 'model', NULL, NULL, g.model, NULL, {out}, NULL, {NONE}, NULL, NULL, NULL FROM g GROUP BY g.model
UNION ALL
SELECT 'source', NULL, NULL, NULL, g.source, {out}, NULL, {NONE}, NULL, NULL, NULL FROM g GROUP BY g.source
"""
    return cte, rows


def only_totals(machine: bool) -> str:
    cte, rows = totals(machine)
    return cte + rows


def by_session(sessions: str, machine: bool) -> str:
    """Each session's kept line as it is (its sessions: 1), its pieces beside it, the totals."""
    held = "JOIN held hd ON hd.session_key = l.session_key" if machine else ""
    info = "h.id, h.title, h.project, h.started_at, h.source"
    cte, rows = totals(machine)
    return f"""{cte}
SELECT 'line', l.session_key, NULL, NULL, NULL, {_of("l")}, 1, {info}, l.models, l.unpriced, l.unpriced_tokens
FROM huddle.session_lines l {held} JOIN {sessions} h ON h.key = l.session_key
UNION ALL
SELECT 'piece', p.key, NULL, p.model, p.source, {_of("p", "first")}, 1, {info}, NULL, NULL, NULL
FROM pieces p JOIN {sessions} h ON h.key = p.key
UNION ALL{rows}"""


def by_machine() -> str:
    """A machine's line: the kept lines of the sessions it holds and their pieces summed,
    its models, its unpriced models with their tokens, its sessions."""
    return f"""
lk AS MATERIALIZED (SELECT hd.m, l.* FROM huddle.session_lines l JOIN held hd ON hd.session_key = l.session_key),
sums AS (
  SELECT t.m, {_summed("t", named=True)}
  FROM (SELECT lk.m, {_of("lk")} FROM lk UNION ALL SELECT p.m, {_of("p", "first")} FROM pieces p) t(m, {", ".join(_COLS)})
  GROUP BY t.m
),
named AS (  -- each machine's models once (its sessions have few sets of them: those first)
  SELECT m, array_agg(model) AS models FROM (
    SELECT d.m, unnest(d.models) AS model FROM (SELECT DISTINCT lk.m, lk.models FROM lk) d
    UNION SELECT p.m, p.model FROM pieces p
  ) u GROUP BY m
),
unpriced AS (
  SELECT m, array_agg(model) AS models, array_agg(tokens) AS tokens FROM (
    SELECT m, model, sum(tokens) AS tokens FROM (
      SELECT lk.m, u.model, u.tokens FROM lk, unnest(lk.unpriced, lk.unpriced_tokens) u(model, tokens)
      WHERE lk.unpriced IS NOT NULL
      UNION ALL
      SELECT p.m, p.model, p.input + p.output + p.cache_read + p.cache_write FROM pieces p WHERE p.priced = 0
    ) u GROUP BY m, model
  ) u GROUP BY m
),
held_by AS (  -- a session with a line is once in lk; one with pieces only is added
  SELECT m, sum(k) AS sessions FROM (
    SELECT lk.m, count(*) AS k FROM lk GROUP BY lk.m
    UNION ALL
    SELECT p.m, count(DISTINCT p.key) FROM pieces p
    WHERE NOT EXISTS (SELECT 1 FROM huddle.session_lines l WHERE l.session_key = p.key) GROUP BY p.m
  ) k GROUP BY m
)
SELECT 'line', s.m, NULL, NULL, NULL, {", ".join(f"s.{c}" for c in _COLS)}, k.sessions, {NONE},
       n.models, u.models, u.tokens
FROM sums s JOIN held_by k ON k.m = s.m JOIN named n ON n.m = s.m LEFT JOIN unpriced u ON u.m = s.m
"""
