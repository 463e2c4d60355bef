"""`huddle usage --hub` summed in PostgreSQL gives the report the rows give, figure for
figure (the JSON compared whole): costs computed in SQL bit for bit as views.pricing does
and summed exactly, days as Python's datetime rounds them, a response counted once.
Over a real server (tests/pg_server.py) and responses made to be awkward: times a
fraction of a microsecond around midnight, before 1970 and unknown, prompts on both
sides of a long-context threshold, priced and unpriced models, ids shared by sessions
(one started earlier, one with no start), bounds inside a day and on midnights."""

from __future__ import annotations

import json
import math
import random
import struct
from fractions import Fraction

import pytest

from huddle.hub import connect
from huddle.hub.read import counted, usage_report
from huddle.hub.sums import counted_groups, partials
from huddle.views.pricing import Price, Rates, Table, current
from huddle.views.usage import aggregate
from pg_server import Postgres, bindir

pytestmark = pytest.mark.skipif(
    bindir() is None, reason="PostgreSQL server binaries missing: scripts/test installs them"
)

DAY = 86400.0
MIDNIGHT = 1_795_996_800.0  # 2026-11-30T00:00:00Z
MODELS = ["claude-sonnet-4-5", "claude-opus-4-7", "gpt-6.2-sol", "no-such-model", ""]
LABELS = ["lead", "Explore", "general-purpose"]


@pytest.fixture(scope="module")
def hub():
    server = Postgres().start()
    conn = connect(server.dsn(server.create_db("sums")))
    _fill(conn, random.Random(20261130))
    yield conn
    conn.close()
    server.stop()


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
    (MIDNIGHT + 10 * DAY, None),  # nothing counted: the duplicates still said
]


@pytest.mark.parametrize("since, until", BOUNDS)
@pytest.mark.parametrize("machine", [None, "b"])
def test_sums_in_sql_give_the_report_the_rows_give(hub, since, until, machine):
    table = current()
    for by in ("day", "session", "project", "model", "agent"):
        want = aggregate(counted(hub, machine), by, since, table, until=until)
        sums = counted_groups(hub, table, machine, since, until)
        assert sums is not None
        got = aggregate(sums, by, since, table, until=until, bounded=True)
        assert json.dumps(got) == json.dumps(want), by
    assert want["counted"]["duplicates_skipped"] > 0


def test_by_machine_is_the_rows_report_too(hub):
    table = current()
    got = usage_report(hub, "machine", MIDNIGHT - 5e-7, table)
    for row in got["rows"]:
        want = aggregate(counted(hub, row["machine"]), "day", MIDNIGHT - 5e-7, table)["totals"]
        assert {k: v for k, v in row.items() if k not in ("key", "machine")} == want
    assert len(got["rows"]) == 3


@pytest.mark.parametrize("rate", [1e300, 1e-16])
def test_rates_the_sums_cannot_hold_are_summed_from_the_rows(hub, rate):
    """A user file may set a rate PostgreSQL's checked arithmetic would overflow on, or
    one whose costs are too small to split exactly (below 2**-48 USD)."""
    t = current()
    table = Table({**t.models, "claude-opus-4-7": Price(Rates(rate, rate, rate, rate, rate))}, t.aliases, t.as_of)
    assert counted_groups(hub, table, None, None, None) is None
    assert usage_report(hub, "day", None, table) == aggregate(counted(hub), "day", None, table)


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
