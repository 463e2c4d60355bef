"""The hub takes any row (issue 34): a session row that is not a JSON object, nests 5,000
deep, or carries a time of 1e300 or NaN, and responses out of any sane range, written by
any machine, cost that row: `status --hub`, `usage --hub` and `serve --hub` go on with
every other row, a note names the machine and the session, and the hub's doctor
(huddle.hub.check.problems, for `huddle doctor --hub`) lists each one. A real PostgreSQL."""

from __future__ import annotations

import json
import math

import pytest

from huddle.hub import connect
from huddle.model.events import COUNT_MAX
from pg_server import Postgres, bindir
from test_hub import CLAUDE, fields, machine_env, run, usage

pytestmark = pytest.mark.skipif(bindir() is None, reason="PostgreSQL server binaries missing")


@pytest.fixture(scope="module")
def pg():
    server = Postgres().start()
    yield server
    server.stop()


_dbs = iter(range(1000))


@pytest.fixture
def dsn(pg):
    return pg.dsn(pg.create_db(f"hostile{next(_dbs)}"))


DEEP = "[" * 5000 + "]" * 5000
_SESSION = (
    "INSERT INTO huddle.sessions (key, source, id, machine, started_at, updated_at, pushed_at, row)"
    " VALUES (%s, 'claude', %s, 'evil', %s::float8, %s::float8, %s::float8, %s::jsonb)"
)
_HOLDER = "INSERT INTO huddle.session_machines (session_key, machine, pushed_at) VALUES (%s, 'evil', 1)"
_RESPONSE = (
    "INSERT INTO huddle.responses (session_key, response_key, source, response_id, agent_id, agent_label, model, t,"
    " input, output, cache_read, cache_write, cache_write_1h)"
    " VALUES (%s, %s, 'claude', %s, 'a', 'lead', 'claude-opus-5-5', %s::float8, %s, 0, 0, 0, 0)"
)


def _hostile(dsn: str) -> None:
    """Rows another machine wrote, the way a broken or hostile huddle (or psql) could."""
    conn = connect(dsn)
    with conn.transaction():
        conn.execute("INSERT INTO huddle.machines (name, first_push, last_seen) VALUES ('evil', 1, 'NaN')")
        rows = {
            "claude:array": ("array", "1", "1", "1", "[1, 2, 3]"),
            "claude:deep": ("deep", "1", "1", "1", '{"id": "deep", "source": "claude", "x": ' + DEEP + "}"),
            "claude:times": (
                "times",
                "NaN",
                "1e300",
                "NaN",
                json.dumps(
                    {
                        "id": "times",
                        "source": "claude",
                        "title": {"a": 1},
                        "state": 7,
                        "updated_at": 1e300,
                        "state_since": [1],
                        "tokens": 1e300,
                        "cost": {"usd": 1e308, "unpriced": "x"},
                        "agents": "not a list",
                        "background": [1, None],
                        "usage": 3,
                    }
                ).replace("1e+300", "1e400"),
            ),
        }
        for key, (sid, started, updated, pushed, row) in rows.items():
            conn.execute(_SESSION, (key, sid, started, updated, pushed, row))
            conn.execute(_HOLDER, (key,))
        for i, (t, n) in enumerate([("NaN", 5), ("1e300", 5), ("1", 9 * 10**18), ("1", -5), ("-1e300", 1)]):
            conn.execute(_RESPONSE, ("claude:times", f"r{i}", f"resp-{i}", t, n))
    conn.close()


def test_any_row_from_any_machine_costs_that_row(tmp_path, dsn):
    a = machine_env(tmp_path, "a", claude=CLAUDE / "02-subagents" / "config")
    run(a, "push", dsn, "--machine", "a")
    local = usage(a)
    _hostile(dsn)

    board = json.loads(run(a, "status", "--hub", dsn, "--json").stdout)
    mine = json.loads(run(a, "status", "--json").stdout)
    ids = {r["id"] for r in board["sessions"]}
    assert {r["id"] for r in mine["sessions"]} <= ids
    assert "array" not in ids and "deep" not in ids
    (times,) = [r for r in board["sessions"] if r["id"] == "times"]  # what can be shown of it is
    assert times["machine"] == "evil" and isinstance(times["title"], str) and times["agents"] == []
    assert times["cost"]["usd"] is None or math.isfinite(times["cost"]["usd"])
    json.dumps(board, allow_nan=False)  # every number a number
    said = board.get("notes") or []
    for key in ("claude:array", "claude:deep"):
        assert any(key in n and "evil" in n for n in said), said
    run(a, "status", "--hub", dsn)  # the table, too
    run(a, "status", "--hub", dsn, "--machine", "evil")

    hub = usage(a, "--hub", dsn)
    assert fields(hub["totals"]) == fields(local["totals"])  # the out-of-range responses left out
    json.dumps(hub, allow_nan=False)
    assert any("evil" in n and "claude:times" in n for n in hub["notes"]), hub["notes"]
    for by in ("day", "machine", "session", "model", "agent"):
        got = usage(a, "--hub", dsn, "--by", by)
        json.dumps(got, allow_nan=False)

    from huddle.hub.check import problems

    conn = connect(dsn)
    try:
        found = problems(conn)
    finally:
        conn.close()
    named = {(p["machine"], p["session"]) for p in found}
    assert {("evil", "claude:array"), ("evil", "claude:deep"), ("evil", "claude:times")} <= named, found
    assert not any(p["machine"] == "a" for p in found)
    assert all(p["what"] and "\n" not in p["what"] for p in found)


def test_serve_hub_takes_any_row(tmp_path, dsn):
    import httpx

    from huddle.core import Huddle
    from huddle.hub.watcher import HubWatcher
    from huddle.server import ServerThread
    from huddle.sources import Settings

    a = machine_env(tmp_path, "a", claude=CLAUDE / "01-basic-tools" / "config")
    run(a, "push", dsn, "--machine", "a")
    _hostile(dsn)
    h = Huddle(Settings.from_env(a))
    watcher = lambda h, publish: HubWatcher(h, publish, dsn, every=0.1, days=None)  # noqa: E731
    with ServerThread(h, watcher=watcher) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        got = c.get("/api/sessions").json()
        assert {r["machine"] for r in got["sessions"]} == {"a", "evil"}
        assert any("claude:deep" in n for n in got["notes"])  # (a row it cannot take is said, not dropped)
        assert not any("have not moved" in n for n in got["notes"])  # (every session asked for)
        assert srv.state.watcher.last_error is None
    assert COUNT_MAX < 9 * 10**18


def test_doctor_hub_names_the_machine_and_session_of_each_bad_row(tmp_path, dsn):
    a = machine_env(tmp_path, "a", claude=CLAUDE / "01-basic-tools" / "config")
    run(a, "push", dsn, "--machine", "a")
    _hostile(dsn)
    data = json.loads(run(a, "doctor", "--hub", dsn, "--json").stdout)
    named = {(p["machine"], p["session"]) for p in data["problems"]}
    assert {("evil", "claude:array"), ("evil", "claude:deep"), ("evil", "claude:times")} <= named
    assert "postgresql" in data["hub"] and "password" not in json.dumps(data)
    text = run(a, "doctor", "--hub", dsn).stdout
    assert "evil" in text and "claude:deep" in text and "nested too deep" in text
