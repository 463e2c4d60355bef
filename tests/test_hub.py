"""The PostgreSQL hub against a real server started here (Debian's postgresql, initdb in
a temp folder, 127.0.0.1, a free port): two simulated machines (two homes), one pushing
twice, one holding a copy of the other's files; the hub's figures equal each machine's
own `huddle usage` exactly. Then incremental pushes, --watch across a server restart,
credentials, content, the schema's versions and `serve --hub`."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from huddle.cli import main
from huddle.core import Huddle, Keeper, WholeMode
from huddle.hub import connect
from huddle.hub.push import Pusher
from huddle.hub.schema import LATEST
from huddle.sources import Settings
from pg_server import PASSWORD, USER, Postgres, bindir

SAMPLES = Path(__file__).parent / "fixtures" / "samples"
CLAUDE = SAMPLES / "claude"
FIELDS = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost_usd", "responses", "sessions")

pytestmark = pytest.mark.skipif(
    bindir() is None, reason="PostgreSQL server binaries missing: scripts/test installs them"
)


@pytest.fixture(scope="module")
def pg():
    server = Postgres().start()
    yield server
    server.stop()


_dbs = iter(range(1000))


@pytest.fixture
def dsn(pg):
    """A fresh database per test on the one server."""
    return pg.dsn(pg.create_db(f"hub{next(_dbs)}"))


def machine_env(
    tmp_path: Path, name: str, claude: Path | None = None, codex: Path | None = None, vibe: Path | None = None
):
    """A simulated machine: its own huddle home and agent folders (copies of samples)."""
    root = tmp_path / name
    root.mkdir()
    env = {"HUDDLE_HOME": str(root / "huddle-home"), "HUDDLE_SOURCES": ""}
    env["CLAUDE_CONFIG_DIR"] = str(root / "claude")
    env["CODEX_HOME"] = str(root / "codex")
    env["VIBE_HOME"] = str(root / "vibe")
    for src, key in ((claude, "CLAUDE_CONFIG_DIR"), (codex, "CODEX_HOME"), (vibe, "VIBE_HOME")):
        if src is not None:
            shutil.copytree(src, env[key])
    return env


def run(env, *args):
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exit_code == 0, (r.output, r.exception)
    return r


def usage(env, *extra):
    return json.loads(run(env, "usage", "--json", *extra).stdout)


def fields(d):
    return {f: d[f] for f in FIELDS}


VIBE = SAMPLES / "vibe" / "2.26.1-legacy-subagent"
CODEX = SAMPLES / "codex" / "multiturn" / "codex_home"


def test_two_machines_one_pushing_twice_one_a_copy_count_once(tmp_path, dsn):
    a = machine_env(tmp_path, "a", claude=CLAUDE / "02-subagents" / "config", codex=CODEX)
    # b holds a copy of a's Claude files, and sessions of its own
    b = machine_env(tmp_path, "b", claude=CLAUDE / "02-subagents" / "config", vibe=VIBE)
    both = machine_env(tmp_path, "both", claude=CLAUDE / "02-subagents" / "config", codex=CODEX, vibe=VIBE)
    run(a, "push", dsn, "--machine", "a")
    run(b, "push", dsn, "--machine", "b")
    r = run(a, "push", dsn, "--machine", "a")  # again: nothing new to write
    assert "pushed 0 sessions, 0 responses" in r.stderr
    local_a, local_b, union = usage(a), usage(b), usage(both)
    assert local_a["totals"]["responses"] and local_b["totals"]["responses"]
    # the hub's total is every response once, as one machine holding all the files says
    hub = usage(a, "--hub", dsn)
    assert fields(hub["totals"]) == fields(union["totals"])
    assert hub["counted"]["responses"] == union["counted"]["responses"]
    # per machine: exactly what each machine's own `huddle usage` says
    by = {row["machine"]: row for row in usage(a, "--hub", dsn, "--by", "machine")["rows"]}
    assert fields(by["a"]) == fields(local_a["totals"])
    assert fields(by["b"]) == fields(local_b["totals"])
    assert fields(usage(a, "--hub", dsn, "--machine", "b")["totals"]) == fields(local_b["totals"])
    # the other groupings too, row for row
    for group in ("day", "model", "agent", "project"):
        got = {r["key"]: fields(r) for r in usage(a, "--hub", dsn, "--by", group)["rows"]}
        want = {r["key"]: fields(r) for r in usage(both, "--by", group)["rows"]}
        assert got == want, group
    # the board: one row per session, with the machines that hold it
    board = json.loads(run(a, "status", "--hub", dsn, "--json").stdout)
    local = json.loads(run(both, "status", "--json").stdout)
    assert sorted(r["id"] for r in board["sessions"]) == sorted(r["id"] for r in local["sessions"])
    shared = [r for r in board["sessions"] if r["source"] == "claude"]
    assert shared and all(r["machines"] == ["a", "b"] for r in shared)
    assert {r["machine"] for r in board["sessions"] if r["source"] == "codex"} == {"a"}
    assert {r["machine"] for r in board["sessions"] if r["source"] == "vibe"} == {"b"}
    same = {r["id"]: r for r in local["sessions"]}
    for row in board["sessions"]:  # the local shape, plus the hub's fields
        assert set(same[row["id"]]) - {"doing"} <= set(row)
        assert row["usage"] == same[row["id"]]["usage"]
    only_b = json.loads(run(a, "status", "--hub", dsn, "--json", "--machine", "b").stdout)
    assert {r["source"] for r in only_b["sessions"]} == {"claude", "vibe"}


def _half(tmp_path: Path, name: str):
    env = machine_env(tmp_path, name, claude=CLAUDE / "01-basic-tools" / "config")
    lead = max(Path(env["CLAUDE_CONFIG_DIR"]).glob("projects/*/*.jsonl"), key=lambda p: p.stat().st_size)
    lines = lead.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    lead.write_bytes(b"".join(lines[:half]))
    return env, lead, lines[half:]


def test_an_incremental_push_writes_only_what_was_appended(tmp_path, dsn):
    env, lead, rest = _half(tmp_path, "m")
    first = run(env, "push", dsn, "--machine", "m").stderr
    with lead.open("ab") as f:
        f.writelines(rest)
    second = run(env, "push", dsn, "--machine", "m").stderr
    assert "pushed 1 sessions" in second
    n_first = int(first.split("sessions, ")[1].split(" responses")[0])
    n_second = int(second.split("sessions, ")[1].split(" responses")[0])
    total = usage(env)["totals"]["responses"]
    assert n_first + n_second == total and n_second < total
    assert fields(usage(env, "--hub", dsn)["totals"]) == fields(usage(env)["totals"])


class Cycles:
    """Counts a loop's rounds; `wait(n)` blocks until n more have run from now."""

    def __init__(self) -> None:
        self.n = 0
        self.cond = threading.Condition()

    def __call__(self) -> None:
        with self.cond:
            self.n += 1
            self.cond.notify_all()

    def wait(self, more: int = 1, timeout: float = 60) -> bool:
        with self.cond:
            goal = self.n + more
            return self.cond.wait_for(lambda: self.n >= goal, timeout=timeout)


def test_watch_pushes_within_seconds_and_survives_a_server_restart(tmp_path, pg):
    dsn = pg.dsn(pg.create_db("watched"))
    env, lead, rest = _half(tmp_path, "w")
    p = Pusher(Huddle(Settings.from_env(env), keep=Keeper(WholeMode())), dsn, "w")
    cycles = Cycles()
    errors: list[str] = []
    t = threading.Thread(
        target=p.watch,
        kwargs={"every": 0.05, "on_cycle": cycles, "on_error": lambda m, d: errors.append(m)},
        daemon=True,
    )
    t.start()
    try:
        assert cycles.wait(1)
        with connect(dsn) as c:
            before = c.execute("SELECT count(*) FROM huddle.responses").fetchone()[0]
        assert before > 0
        pg.halt()  # the hub goes away...
        with lead.open("ab") as f:  # ...while the session goes on
            f.writelines(rest)
        assert cycles.wait(2)  # the append is read, and its push fails
        assert errors and all(PASSWORD not in m for m in errors)
        pg.start()
        want = fields(usage(env)["totals"])
        got = None
        for _ in range(40):  # back-off is at most a few seconds here; each round re-checks
            assert cycles.wait(1)
            got = fields(usage(env, "--hub", dsn)["totals"])
            if got == want:
                break
        assert got == want
    finally:
        p.stop.set()
        t.join(30)
        p.close()


def test_credentials_come_from_pgpassfile_and_are_never_printed(tmp_path, pg):
    pg.create_db("creds")
    env = machine_env(tmp_path, "c", claude=CLAUDE / "01-basic-tools" / "config")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg.port}:*:{USER}:{PASSWORD}\n")
    passfile.chmod(0o600)
    bare = pg.dsn("creds", password=False)
    run({**env, "PGPASSFILE": str(passfile)}, "push", bare, "--machine", "c")
    r = run({**env, "PGPASSFILE": str(passfile)}, "usage", "--hub", bare, "--json")
    assert json.loads(r.stdout)["totals"]["responses"] > 0
    # a wrong password in the DSN: one line, without the password
    bad = bare + " password=not-the-Secret-42"
    r = CliRunner().invoke(main, ["push", bad], env={**env, "PGPASSFILE": str(tmp_path / "none")})
    assert r.exit_code == 1
    assert "not-the-Secret-42" not in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and "cannot reach the hub" in r.output
    url = f"postgresql://{USER}:not-the-Secret-42@127.0.0.1:{pg.port}/creds"
    r = CliRunner().invoke(main, ["status", "--hub", url], env=env)
    assert r.exit_code == 1 and "not-the-Secret-42" not in r.output


def test_no_text_leaves_without_with_content(tmp_path, dsn):
    env = machine_env(tmp_path, "t", claude=CLAUDE / "02-subagents" / "config")
    run(env, "push", dsn, "--machine", "t")
    h = Huddle(Settings.from_env(env))
    h.refresh()
    prompts = [s.first_prompt for s in h.sessions() if s.first_prompt]
    assert prompts
    with connect(dsn) as c:
        dump = json.dumps(
            [list(r) for t in ("sessions", "agents", "responses") for r in c.execute(f"SELECT * FROM huddle.{t}")],
            default=str,
        )
    for p in prompts:
        assert p[:40] not in dump
    run(env, "push", dsn, "--machine", "t", "--with-content")
    board = json.loads(run(env, "status", "--hub", dsn, "--json").stdout)
    titles = {r["id"]: r["title"] for r in board["sessions"]}
    assert all(titles[s.id] == s.title for s in h.sessions())


def test_the_schema_is_versioned_and_a_newer_hub_is_refused(dsn):
    with connect(dsn) as c:
        assert c.execute("SELECT max(version) FROM huddle.schema_version").fetchone()[0] == LATEST
    with connect(dsn) as c:  # a second connect migrates nothing again
        assert c.execute("SELECT count(*) FROM huddle.schema_version").fetchone()[0] == LATEST
        c.execute("INSERT INTO huddle.schema_version (version, what) VALUES (%s, 'from the future')", (LATEST + 1,))
        c.commit()
    r = CliRunner().invoke(main, ["status", "--hub", dsn])
    assert r.exit_code == 1 and "newer than this huddle" in r.output


def test_serve_hub_shows_every_machine_with_a_filter(tmp_path, dsn):
    from huddle.hub.watcher import HubWatcher
    from huddle.server import ServerThread

    a = machine_env(tmp_path, "a", claude=CLAUDE / "01-basic-tools" / "config")
    b = machine_env(tmp_path, "b", codex=CODEX)
    run(a, "push", dsn, "--machine", "a")
    run(b, "push", dsn, "--machine", "b")
    h = Huddle(Settings.from_env(a))
    watcher = lambda h, publish: HubWatcher(h, publish, dsn, every=0.1, days=None)  # noqa: E731
    with ServerThread(h, watcher=watcher) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        rows = c.get("/api/sessions").json()["sessions"]
        assert {r["machine"] for r in rows} == {"a", "b"}
        only_b = c.get("/api/sessions", params={"machine": "b"}).json()["sessions"]
        assert {r["source"] for r in only_b} == {"codex"}
        assert rows == json.loads(run(a, "status", "--hub", dsn, "--json").stdout)["sessions"]


def test_without_psycopg_the_message_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    r = CliRunner().invoke(main, ["push", "host=127.0.0.1"])
    assert r.exit_code == 1
    assert r.output.strip() == "Error: the hub needs psycopg: pip install 'huddle[hub]'"


def test_with_content_is_redacted_on_the_hub(tmp_path, dsn):
    from test_otel import SECRET, _with_secret

    config = _with_secret(tmp_path)
    env = machine_env(tmp_path, "s", claude=config)
    run(env, "push", dsn, "--machine", "s", "--with-content")
    board = json.loads(run(env, "status", "--hub", dsn, "--json").stdout)
    text = json.dumps(board)
    assert "Look around this project" in text  # the title is the prompt, with content
    i = text.find(SECRET)
    assert i < 0, text[max(0, i - 300) : i + 60]
    assert "[REDACTED:" in text


def test_serve_hub_with_otlp_pushes_what_the_receiver_takes(tmp_path, dsn):
    """`serve --hub --otlp`: a machine without huddle sends its agent's telemetry to the
    hub's server; its sessions go to the hub (as otlp@HOST) and count there."""
    from huddle.hub.watcher import HubWatcher
    from huddle.otel import otlp
    from huddle.otel.telemetry import Store
    from test_otlp_receiver import TURN, claude_logs

    env = machine_env(tmp_path, "srv")
    Store(env["HUDDLE_HOME"]).take(list(otlp.logs(claude_logs(TURN))), "logs")
    h = Huddle(Settings.from_env(env))
    w = HubWatcher(h, lambda msgs: None, dsn, days=None, telemetry_as="otlp@srv")
    try:
        w.start()
        w.tick()
    finally:
        w.stop()
    board = json.loads(run(env, "status", "--hub", dsn, "--json").stdout)
    (row,) = board["sessions"]
    assert row["source"] == "telemetry" and row["machine"] == "otlp@srv"
    assert usage(env, "--hub", dsn)["totals"]["responses"] == 2
