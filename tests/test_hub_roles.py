"""Roles on the hub (hub/roles.py), on a real PostgreSQL: `huddle hub init` and
`huddle hub grant`; a machine pushes (with its content), a lead reads the board and
every usage report, equal to the owner's, and never a prompt; neither can write the
sums around the triggers, nor a lead read a session's text."""

from __future__ import annotations

import json

import psycopg
import pytest
from click.testing import CliRunner

from huddle.cli import main
from huddle.core import Huddle
from huddle.sources import Settings
from pg_server import Postgres, bindir
from test_hub import CLAUDE, CODEX, machine_env, run, usage

pytestmark = pytest.mark.skipif(bindir() is None, reason="PostgreSQL server binaries missing")


@pytest.fixture(scope="module")
def pg():
    server = Postgres().start()
    yield server
    server.stop()


def as_role(pg, db: str, name: str, password: str) -> str:
    return f"host=127.0.0.1 port={pg.port} user={name} password={password} dbname={db}"


def grant(owner: str, name: str, flag: str) -> str:
    r = CliRunner().invoke(main, ["hub", "grant", owner, name, flag])
    assert r.exit_code == 0, r.output
    return r.stdout.strip()


def test_a_lead_reads_aggregates_and_never_a_prompt(tmp_path, pg):
    db = pg.create_db("roles")
    owner = pg.dsn(db)
    r = CliRunner().invoke(main, ["hub", "init", owner])
    assert r.exit_code == 0, r.output
    assert CliRunner().invoke(main, ["hub", "init", owner]).exit_code == 0  # again: nothing breaks
    machine = as_role(pg, db, "laptop1", grant(owner, "laptop1", "--machine"))
    lead = as_role(pg, db, "boss", grant(owner, "boss", "--lead"))

    env = machine_env(tmp_path, "a", claude=CLAUDE / "02-subagents" / "config", codex=CODEX)
    run(env, "push", machine, "--machine", "a", "--with-content")  # a machine may push, text and all
    h = Huddle(Settings.from_env(env))
    h.refresh()
    prompts = [s.first_prompt[:30] for s in h.sessions() if s.first_prompt]
    assert prompts

    mine = json.loads(run(env, "status", "--hub", owner, "--json").stdout)
    theirs = json.loads(run(env, "status", "--hub", lead, "--json").stdout)
    assert sorted(r["id"] for r in theirs["sessions"]) == sorted(r["id"] for r in mine["sessions"])
    text = json.dumps(theirs)
    assert not [p for p in prompts if p in text]
    assert any(p in json.dumps(mine) for p in prompts)  # (the owner sees what was pushed with content)
    for row in theirs["sessions"]:
        assert row["title"] == "" and "doing" not in row and row.get("cwd") is None  # (null: said as unknown)
        assert row["usage"] == next(r for r in mine["sessions"] if r["id"] == row["id"])["usage"]
    for by in ("day", "session", "project", "model", "agent", "machine"):
        assert usage(env, "--hub", lead, "--by", by)["rows"] == [
            {**r, **({"title": ""} if by == "session" else {})} for r in usage(env, "--hub", owner, "--by", by)["rows"]
        ], by
    assert usage(env, "--hub", lead)["totals"] == usage(env)["totals"]

    with psycopg.connect(lead) as c:
        for sql in (
            "SELECT row FROM huddle.sessions",
            "SELECT title FROM huddle.sessions",
            "SELECT * FROM huddle.agents",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
            c.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("DELETE FROM huddle.responses")
    # a machine writes responses; the sums are the triggers' alone
    with psycopg.connect(machine) as c, pytest.raises(psycopg.errors.InsufficientPrivilege):
        c.execute("UPDATE huddle.usage_sums SET n = n + 1")
    r = CliRunner().invoke(main, ["push", lead, "--machine", "x"], env=env)
    assert r.exit_code == 1 and "permission denied" in r.output and "Traceback" not in r.output


def test_grant_says_what_it_needs(tmp_path, pg):
    owner = pg.dsn(pg.create_db("roles2"))
    r = CliRunner().invoke(main, ["hub", "grant", owner, "someone"])
    assert r.exit_code == 2 and "--lead or --machine" in r.output
    r = CliRunner().invoke(main, ["hub", "grant", owner, "bad name;", "--lead"])
    assert r.exit_code == 2 and "role name" in r.output
