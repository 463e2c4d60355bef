"""`huddle usage --hub` summed in PostgreSQL gives the report the machines' own `huddle
usage` gives, figure for figure (the JSON compared whole): costs computed in SQL bit for
bit as cost.pricing does and summed exactly, days as Python's datetime rounds them, a
response counted once. Over a real server (tests/pg_server.py) and responses made to be
awkward: times a fraction of a microsecond around midnight, before 1970 and unknown,
prompts on both sides of a long-context threshold, priced and unpriced models, ids
shared by sessions (one started earlier, one with no start), bounds inside a day and on
midnights; the kept sums (triggers.py) through inserts, updates, deletes and ids that
become shared, and rates other than the hub's."""

from __future__ import annotations

import json
import math
import random
import struct
from fractions import Fraction

import pytest

from hub_kept import assert_lines_kept
from huddle.cost.pricing import Price, Rates, Table, current
from huddle.hub import connect
from huddle.hub.prices import sync
from huddle.hub.read import counted, summed, usage_report
from huddle.hub.report import Bounds
from huddle.hub.sums import partials
from huddle.usage.index import day_aligned, group_rows
from huddle.usage.report import aggregate
from pg_server import Postgres, bindir

pytestmark = pytest.mark.skipif(
    bindir() is None, reason="PostgreSQL server binaries missing: scripts/test installs them"
)

DAY = 86400.0
MIDNIGHT = 1_795_996_800.0  # 2026-11-30T00:00:00Z
MODELS = ["claude-sonnet-4-5", "claude-opus-4-7", "gpt-6.2-sol", "no-such-model", ""]
LABELS = ["lead", "Explore", "general-purpose"]


@pytest.fixture(scope="module")
def server():
    pg = Postgres().start()
    yield pg
    pg.stop()


@pytest.fixture
def pg_conn(server):
    conn = connect(server.dsn(server.create_db(f"kept{next(_dbs)}")))
    yield conn
    conn.close()


_dbs = iter(range(1000))


@pytest.fixture(scope="module")
def hub(server):
    conn = connect(server.dsn(server.create_db("sums")))
    _fill(conn, random.Random(20261130))
    sync(conn, current())  # the hub priced as a machine's push prices it
    yield conn
    conn.close()


def _times(rnd: random.Random) -> float | None:
    k = rnd.random()
    if k < 0.05:
        return None
    if k < 0.1:
        return -DAY * rnd.randint(1, 400) + rnd.choice([0.0, -4e-7, 4e-7, -5e-7, 5e-7, 0.5])
    base = MIDNIGHT + DAY * rnd.randint(-3, 3)
    if k < 0.6:  # around a midnight, down to a fraction of a microsecond (half of one rounds to even)
        return base + rnd.choice([-1e-6, -5e-7, -4.9e-7, -5.1e-7, -1e-7, 0.0, 1e-7, 5e-7, 2.5e-6, -2.5e-6])
    return base + rnd.uniform(0, DAY)


def _tokens(rnd: random.Random) -> tuple[int, int, int, int, int]:
    big = rnd.random() < 0.3  # prompts past a 200k long-context threshold, and right at it
    inp = rnd.choice([0, 1, 3, rnd.randint(1, 5000), 199_999, 200_000, 200_001]) if not big else rnd.randint(1, 300_000)
    cw = rnd.randint(0, 80_000)
    return inp, rnd.randint(0, 40_000), rnd.randint(0, 150_000), cw, rnd.randint(0, cw)


def _fill(conn, rnd: random.Random) -> None:
    machines = ["a", "b", "c"]
    sessions = []
    for i in range(40):
        start = None if i % 11 == 0 else MIDNIGHT + rnd.uniform(-4, 4) * DAY
        src = rnd.choice(["claude", "codex"])
        key = f"{src}:s{i:02d}"
        sessions.append((key, src, start))
        conn.execute(
            "INSERT INTO huddle.sessions (key, source, id, machine, title, project, started_at, pushed_at, row)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, 0, '{}')",
            (key, src, f"s{i:02d}", machines[i % 3], f"title {i}", f"p{i % 4}", start),
        )
        for m in {machines[i % 3], machines[(i * 7) % 3]}:
            conn.execute("INSERT INTO huddle.session_machines VALUES (%s, %s, 0)", (key, m))
    n = 0
    for key, src, _start in sessions:
        for _ in range(rnd.randint(0, 120)):
            n += 1
            rid = "" if rnd.random() < 0.2 else f"r{rnd.randint(0, 1500)}"  # shared ids: counted once
            conn.execute(
                "INSERT INTO huddle.responses VALUES (%s, %s, %s, %s, 'x', %s, %s, %s, %s, %s, %s, %s, %s)",
                (key, f"k{n}", src, rid, rnd.choice(LABELS), rnd.choice(MODELS), _times(rnd), *_tokens(rnd)),
            )
    conn.commit()


BOUNDS = [
    (None, None),
    (MIDNIGHT, None),  # on midnights
    (MIDNIGHT - DAY, MIDNIGHT + DAY),
    (MIDNIGHT - 5e-7, MIDNIGHT + 1.5 * DAY),  # inside days
    (None, MIDNIGHT + 0.25 * DAY),
    (MIDNIGHT + 0.25 * DAY, MIDNIGHT + 0.75 * DAY),  # both in one day
    (MIDNIGHT - 2 * DAY + 3600, MIDNIGHT + 2 * DAY - 5e-7),
    (MIDNIGHT - 2e-7, MIDNIGHT + 2.5 * DAY),  # responses 5e-7 before it round into the day after it
    (MIDNIGHT + 10 * DAY, None),  # nothing counted: the duplicates still said
]


def local(conn, by, since, until, table, machine=None):
    """What `huddle usage` says of these rows on a machine: the local index's per-day
    sums when both bounds are midnights, else every row by its time
    (usage.index.counted_from_index)."""
    rows = counted(conn, machine)
    if day_aligned(since) and day_aligned(until):
        grouped = {
            "sessions": [{**{k: v for k, v in s.items() if k != "rows"}, "groups": group_rows(s["rows"], table)}
                         for s in rows["sessions"]],
            "duplicates": rows["duplicates"],
        }  # fmt: skip
        return aggregate(grouped, by, since, table, until=until)
    return aggregate(rows, by, since, table, until=until)


@pytest.mark.parametrize("since, until", BOUNDS)
@pytest.mark.parametrize("machine", [None, "b"])
def test_sums_in_sql_give_the_report_the_machines_give(hub, since, until, machine):
    table = current()
    for by in ("day", "session", "project", "model", "agent"):
        want = local(hub, by, since, until, table, machine)
        got = summed(hub, by, since, until, table, machine)
        assert got is not None
        assert json.dumps(got) == json.dumps(want), by
    assert want["counted"]["duplicates_skipped"] > 0


def test_a_bound_a_rounding_crosses_is_read_by_time(hub):
    b = Bounds(MIDNIGHT - 2e-7, MIDNIGHT + 2.5 * DAY)  # (by time: the end is inside a day)
    assert b.d1 == int(MIDNIGHT // DAY)
    b.tighten(hub)  # (the fixture holds responses 5e-7 and 4.9e-7 before midnights: days after them)
    assert b.d1 == int(MIDNIGHT // DAY) + 1
    assert b.windows[0] == (MIDNIGHT - 2e-7, MIDNIGHT + DAY + 0.001)


@pytest.mark.parametrize("since", [MIDNIGHT - 5e-7, None])  # (every day: from the per-session sums)
def test_by_machine_is_each_machines_report(hub, since):
    table = current()
    got = usage_report(hub, "machine", since, table)
    for row in got["rows"]:
        want = local(hub, "day", since, None, table, row["machine"])["totals"]
        assert {k: v for k, v in row.items() if k not in ("key", "machine")} == want
    assert len(got["rows"]) == 3
    assert got["totals"] == local(hub, "day", since, None, table)["totals"]
    one = usage_report(hub, "machine", since, table, "b")  # --machine b: its row, its totals
    assert one["rows"] == [r for r in got["rows"] if r["machine"] == "b"]
    assert one["totals"] == local(hub, "day", since, None, table, "b")["totals"]


def test_by_session_puts_the_collector_back_as_it_was(hub):
    """--by session pauses the cycle collector and promotes what it made (by_session.
    no_cycles): after, it runs again, and what was frozen for good stays frozen."""
    import gc

    assert gc.isenabled() and gc.get_freeze_count() == 0
    usage_report(hub, "session", None, current())
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        usage_report(hub, "session", None, current())
        assert gc.isenabled() and gc.get_freeze_count() > 0  # (less what was freed meanwhile)
    finally:
        gc.unfreeze()


def test_other_rates_than_the_hubs_are_summed_from_the_rows(hub):
    """A user's pricing file (or another huddle's table): those models from the rows, at
    the reader's rates, still exactly the reader's own report."""
    t = current()
    table = Table({**t.models, "claude-opus-4-7": Price(Rates(7.0, 31.0, 0.7, 9.0, 14.0))}, t.aliases, t.as_of)
    for by in ("day", "model"):
        got = summed(hub, by, MIDNIGHT - DAY, None, table, None)
        assert got is not None and any("claude-opus-4-7" in n for n in got["notes"])
        got["notes"] = []
        assert json.dumps(got) == json.dumps(local(hub, by, MIDNIGHT - DAY, None, table)), by


@pytest.mark.parametrize("rate", [1e300, 1e-16])
def test_rates_the_sums_cannot_hold_are_summed_from_the_rows(hub, rate):
    """A user file may set a rate PostgreSQL's checked arithmetic would overflow on, or
    one whose costs are too small to split exactly (below 2**-48 USD)."""
    t = current()
    table = Table({**t.models, "claude-opus-4-7": Price(Rates(rate, rate, rate, rate, rate))}, t.aliases, t.as_of)
    assert summed(hub, "day", None, None, table, None) is None
    got = usage_report(hub, "day", None, table)
    assert got == aggregate(counted(hub), "day", None, table)


def _sums(conn):
    return conn.execute(
        "SELECT session_key, day, agent_label, model, band, source, n, input, output, cache_read, cache_write,"
        " cache_write_1h, first_t, priced, odd, hi, lo FROM huddle.usage_sums ORDER BY 1, 2, 3, 4, 5, 6"
    ).fetchall()


def test_the_kept_sums_are_what_summing_every_row_again_gives(pg_conn):
    """Inserts, upserts that change counts and models, deletes (a session with its
    responses), ids that become shared: the kept sums equal a fresh sum of the rows."""
    from huddle.hub.triggers import resum

    conn = pg_conn
    rnd = random.Random(7)
    _fill(conn, rnd)
    sync(conn, current())
    for i in range(60):
        k = rnd.random()
        key = f"{rnd.choice(['claude', 'codex'])}:s{rnd.randint(0, 39):02d}"
        if k < 0.4:  # counts, times and models of some responses rewritten
            conn.execute(
                "UPDATE huddle.responses SET output = output + %s, t = t - 30000, model = %s"
                " WHERE session_key = %s AND response_key LIKE %s",
                (rnd.randint(0, 900), rnd.choice(MODELS), key, f"k{rnd.randint(1, 9)}%"),
            )
        elif k < 0.55:
            conn.execute("DELETE FROM huddle.sessions WHERE key = %s", (key,))
        else:  # new responses, some with an id another session holds
            conn.execute(
                "INSERT INTO huddle.responses SELECT %s, 'n' || %s || response_key, source, response_id, agent_id,"
                " agent_label, model, t, input, output, cache_read, cache_write, cache_write_1h"
                " FROM huddle.responses WHERE session_key <> %s AND session_key LIKE %s || ':%%'"
                " AND EXISTS (SELECT 1 FROM huddle.sessions WHERE key = %s) ORDER BY response_key LIMIT 5",
                (key, i, key, key.split(":")[0], key),
            )
        conn.commit()
    kept = _sums(conn)
    held_twice = conn.execute(
        "SELECT source, response_id FROM huddle.responses WHERE response_id <> '' GROUP BY 1, 2"
        " HAVING min(session_key) <> max(session_key)"
    ).fetchall()
    shared = set(conn.execute("SELECT source, response_id FROM huddle.shared_ids").fetchall())
    assert held_twice and set(held_twice) <= shared  # (an id stays shared once it was: the rows decide it)
    assert _per_session(conn) == _per_session_again(conn)
    assert_lines_kept(conn)
    conn.execute("TRUNCATE huddle.usage_sums, huddle.bad_responses")
    conn.execute(resum())
    conn.commit()
    assert _sums(conn) == kept
    for by in ("session", "machine"):  # the reports of every day, from the per-session sums
        got = usage_report(conn, by, None, current())
        want = aggregate(counted(conn), by, None, current()) if by == "session" else None
        assert want is None or json.dumps(got) == json.dumps(want)
    table = current()  # a re-pricing says the per-session sums of those models again
    conn.execute("UPDATE huddle.prices SET b_in = b_in * 2 WHERE model = 'claude-opus-4-7'")
    conn.execute("SELECT huddle.reprice(ARRAY['claude-opus-4-7'])")
    conn.commit()
    assert _per_session(conn) == _per_session_again(conn)
    assert_lines_kept(conn)
    sync(conn, table)
    assert _per_session(conn) == _per_session_again(conn)
    assert_lines_kept(conn)


_SESSION = "session_key, model, source, n, input, output, cache_read, cache_write, cache_write_1h, first_t, priced, odd, hi, lo"


def _per_session(conn):
    got = conn.execute(f"SELECT {_SESSION} FROM huddle.session_sums ORDER BY 1, 2, 3").fetchall()
    conn.commit()
    return got


def _per_session_again(conn):
    """session_sums as usage_sums says them (what the triggers keep it to)."""
    got = conn.execute(
        "SELECT session_key, model, source, sum(n), sum(input), sum(output), sum(cache_read), sum(cache_write),"
        " sum(cache_write_1h), min(first_t), sum(priced), sum(odd), sum(hi), sum(lo)"
        " FROM huddle.usage_sums GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()
    conn.commit()
    return got


@pytest.mark.parametrize("was", [2, 3])
def test_an_older_hub_is_brought_up_with_its_sums(server, was):
    """A hub made by the huddle before the per-session sums (schema 2) or before the kept
    lines (3), written to, then opened by this one: the migrations say them from what it
    holds, and the reports over every day are the machines' own."""
    import psycopg

    from huddle.hub.schema import LATEST, MIGRATIONS

    dsn = server.dsn(server.create_db(f"older{was}"))
    with psycopg.connect(dsn) as c:
        c.execute("CREATE SCHEMA huddle")
        c.execute(
            "CREATE TABLE huddle.schema_version ("
            " version integer PRIMARY KEY, what text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, what, sql in MIGRATIONS[:was]:
            c.execute(sql)
            c.execute("INSERT INTO huddle.schema_version (version, what) VALUES (%s, %s)", (version, what))
        _fill(c, random.Random(3))
        sync(c, current())
        c.execute(  # a lead's group, made by `huddle hub init` on that hub (roles are the cluster's)
            "DO $r$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'huddle_lead') THEN"
            " CREATE ROLE huddle_lead NOLOGIN; END IF; END $r$"
        )
    conn = connect(dsn)  # (migrates)
    try:
        assert conn.execute("SELECT max(version) FROM huddle.schema_version").fetchone()[0] == LATEST
        for kept in ("session_sums", "session_lines", "model_sums"):  # a lead reads what the reports read
            assert conn.execute(
                "SELECT has_table_privilege('huddle_lead', %s, 'SELECT')", (f"huddle.{kept}",)
            ).fetchone()[0]
        conn.commit()
        assert _per_session(conn) and _per_session(conn) == _per_session_again(conn)
        assert_lines_kept(conn)
        for by in ("session", "project", "model"):
            assert json.dumps(summed(conn, by, None, None, current(), None)) == json.dumps(
                local(conn, by, None, None, current())
            ), by
        got = usage_report(conn, "machine", None, current())  # (from the kept lines)
        for row in got["rows"]:
            want = local(conn, "day", None, None, current(), row["machine"])["totals"]
            assert {k: v for k, v in row.items() if k not in ("key", "machine")} == want
    finally:
        conn.close()


@pytest.mark.parametrize("seed", range(5))
def test_partials_are_the_exact_sum_of_the_doubles(seed):
    rnd = random.Random(seed)
    xs = [rnd.choice([1.0, -1.0]) * rnd.random() * 10 ** rnd.randint(-12, 6) for _ in range(500)] + [5e-324, 0.0]
    by: dict[int, int] = {}
    for x in xs:
        bits = int.from_bytes(struct.pack(">d", x), "big")  # as the query splits it: sign, exponent, mantissa
        biased = (bits >> 52) & 2047
        mant = (bits & ((1 << 52) - 1)) | ((1 << 52) if biased else 0)
        by[max(biased, 1)] = by.get(max(biased, 1), 0) + (-mant if bits >> 63 else mant)
    parts = partials(by)
    assert sum(map(Fraction, parts)) == sum(map(Fraction, xs))
    assert math.fsum(parts) == math.fsum(xs)
