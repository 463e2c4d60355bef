"""The hub at a team's scale: 50 machines, 10 million response rows (bench/hub_corpus.py,
written with COPY), then every `huddle usage --hub` report warm, `serve --hub`'s first
board answer, and a push after one appended line.

    python bench/bench_hub_big.py [--machines 50] [--rows 10000000] [--keep DIR] [--runs 3]

A real PostgreSQL (Debian's, tests/pg_server.py) on 127.0.0.1 with its default settings
but `shared_buffers` (--buffers, default 1GB: a hub's server is a database server).
`--keep DIR` keeps the server's data there and reuses it next time (the build is the
slow part). Reports are timed in-process (the library call `huddle usage --hub` makes,
its connection open: what a warm server answers) and as a whole `huddle` process (the
CLI: Python's start, the imports, a connection). The push is the issue's: a machine
with 1,000 sessions (bench/claude_corpus.py) pushed into the big hub, one line
appended, pushed again: a one-shot `huddle push` (wall and CPU of the process) and a
`--watch` cycle (the pusher's refresh and push_once, in-process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))

DAY = 86400.0


def server(keep: str | None, buffers: str):
    from pg_server import Postgres, bindir, free_port

    if keep and os.path.exists(os.path.join(keep, "data", "PG_VERSION")):
        pg = Postgres.__new__(Postgres)
        pg.bin, pg.root, pg.data, pg.port = bindir(), keep, os.path.join(keep, "data"), free_port()
        pg.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        fresh = False
    else:
        pg = Postgres()
        fresh = True
        if keep:
            os.makedirs(os.path.dirname(os.path.abspath(keep)), exist_ok=True)
            subprocess.run(["rm", "-rf", keep], check=True)
            subprocess.run(["mv", pg.root, keep], check=True)
            pg.root, pg.data = keep, os.path.join(keep, "data")
    with open(os.path.join(pg.data, "postgresql.auto.conf"), "a") as f:
        f.write(f"shared_buffers = '{buffers}'\n")  # (the last line that sets it wins)
    pg.start()
    return pg, fresh


def backend_cpu(conn) -> float:
    """CPU seconds the connection's server process has used (as root or the server's user)."""
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    conn.commit()
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn, runs: int, conn=None) -> tuple[float, list[float], float, float]:
    """(median wall, walls, median CPU here, median CPU of the server's process)."""
    fn()  # warm: the first answer reads the tables into the server's cache
    walls, mine, theirs = [], [], []
    for _ in range(runs):
        b0 = backend_cpu(conn) if conn is not None else 0.0
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        mine.append(time.process_time() - c0)
        theirs.append(backend_cpu(conn) - b0 if conn is not None else 0.0)
    return statistics.median(walls), walls, statistics.median(mine), statistics.median(theirs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", type=int, default=50)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", default=None, metavar="DIR")
    ap.add_argument("--buffers", default="1GB")
    ap.add_argument("--skip-push", action="store_true")
    ap.add_argument("--parts", default="reports,cli,serve,push", help="which of reports, cli, serve, push")
    a = ap.parse_args()
    import psycopg

    from hub_corpus import END, fill
    from huddle.cost.pricing import current
    from huddle.hub import connect
    from huddle.hub.read import usage_report

    pg, fresh = server(a.keep, a.buffers)
    try:
        if fresh:
            pg.create_db("big")
        dsn = pg.dsn("big")
        conn = connect(dsn)
        n = conn.execute("SELECT count(*) FROM huddle.responses").fetchone()[0]
        conn.commit()
        if n == 0:
            print(f"building: {a.machines} machines, {a.rows:,} responses")
            t0 = time.perf_counter()
            steps = fill(conn, a.machines, a.rows)
            with psycopg.connect(dsn, autocommit=True) as c:
                t1 = time.perf_counter()
                c.execute("VACUUM ANALYZE")
                steps["vacuum analyze"] = time.perf_counter() - t1
            print(
                f"built in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{k} {v:.0f} s" for k, v in steps.items())
            )
        n, ns, ng = conn.execute(
            "SELECT (SELECT count(*) FROM huddle.responses), (SELECT count(*) FROM huddle.sessions),"
            " (SELECT count(*) FROM huddle.usage_sums)"
        ).fetchone()
        size = conn.execute("SELECT pg_size_pretty(pg_database_size('big'))").fetchone()[0]
        conn.commit()
        print(f"hub: {n:,} responses, {ns:,} sessions, {ng:,} kept sums, {size}")
        table = current()
        cases = [(by, None, None, None) for by in ("day", "session", "project", "model", "agent", "machine")]
        cases += [
            ("day", END - 30 * DAY, None, None),  # --since a date
            ("model", END - 90 * DAY, END - 30 * DAY, None),  # --since/--until dates
            ("day", END - 7 * DAY - 5 * 3600.5, END - 2 * 3600.25, None),  # bounds inside days (2h, 7d ago)
            ("day", None, None, "m07"),  # --machine
            ("session", END - 30 * DAY, None, "m07"),
        ]
        parts = set(a.parts.split(","))
        print(f"reports, in-process, warm (median of {a.runs}):" if "reports" in parts else "")
        for by, since, until, machine in cases if "reports" in parts else []:
            med, walls, mine, theirs = timed(
                lambda b=by, s=since, m=machine, u=until: usage_report(conn, b, s, table, m, until=u), a.runs, conn
            )
            got = usage_report(conn, by, since, table, machine, until=until)
            what = f"--by {by}" + (" --since" if since else "") + (" --until" if until else "")
            what += f" --machine {machine}" if machine else ""
            print(
                f"  {what:40} {med:6.3f} s wall (CPU {mine:.3f} here + {theirs:.3f} the server's)"
                f" {[round(w, 3) for w in walls]} ({len(got['rows']):,} rows, {got['totals']['responses']:,} responses)"
            )
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HUDDLE_SOURCES": ""}
        with tempfile.TemporaryDirectory() as home:
            env["HUDDLE_HOME"] = home
            print("the CLI, a whole process each (median of runs):" if "cli" in parts else "")
            for by in ("day", "machine", "session") if "cli" in parts else ():

                def cli(by=by):
                    subprocess.run(
                        [sys.executable, "-m", "huddle", "usage", "--hub", dsn, "--json", "--by", by],
                        env=env,
                        check=True,
                        capture_output=True,
                    )

                med, walls, _, _ = timed(cli, a.runs)
                print(f"  huddle usage --hub --json --by {by:10} {med:6.3f} s {[round(w, 3) for w in walls]}")
            from huddle.hub.read import BOARD_DAYS, board

            if "serve" in parts:
                now = time.time()
                med, walls, mine, theirs = timed(lambda: board(conn, since=now - BOARD_DAYS * DAY), a.runs, conn)
                got = board(conn, since=now - BOARD_DAYS * DAY)
                print(
                    f"the hub's board (the live and the last week's: {len(got['sessions']):,} of {got['count']:,}),"
                    f" in-process: {med:.3f} s wall (CPU {mine:.3f} here + {theirs:.3f} the server's)"
                )
                print("serve --hub, first board answer:")
            for _ in range(a.runs) if "serve" in parts else ():
                print(f"  {first_board(env, dsn):.2f} s from the process's start")
        conn.close()
        if not a.skip_push and "push" in parts:
            push_after_append(pg, dsn, a.runs)
    finally:
        pg.halt() if a.keep else pg.stop()


def first_board(env: dict, dsn: str) -> float:
    from pg_server import free_port

    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "serve", "--hub", dsn, "--port", str(port), "--no-open", "--no-notify"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/sessions", timeout=5) as r:
                    body = json.loads(r.read())
                took = time.perf_counter() - t0
                assert body["sessions"] is not None
                return took
            except OSError:
                if p.poll() is not None:
                    raise SystemExit("serve --hub stopped") from None
                time.sleep(0.02)
    finally:
        p.terminate()
        p.wait(10)


def push_after_append(pg, dsn: str, runs: int) -> None:
    import resource

    from bench_hub import corpus, env_for
    from huddle.core import FirstRead, Huddle, Keeper
    from huddle.hub.push import Pusher
    from huddle.sources import Settings

    root = corpus(0.25, 1000)
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        claude = Path(work) / "claude"
        subprocess.run(["cp", "-r", str(root), str(claude)], check=True)
        env = env_for(claude, home)
        t0 = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-m", "huddle", "push", dsn, "--machine", "real"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        print(f"push of 1,000 sessions into the big hub, cold: {time.perf_counter() - t0:.1f} s ({p.stderr.strip()})")
        f = min(claude.glob("projects/*/*.jsonl"), key=lambda p: p.stat().st_size)
        one_shot, cpu = [], []
        for i in range(runs):
            append(f, f"x{i}")
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            p = subprocess.run(
                [sys.executable, "-m", "huddle", "push", dsn, "--machine", "real"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            one_shot.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        print(
            f"push after one appended line, one-shot `huddle push`: median {statistics.median(one_shot):.2f} s wall,"
            f" {statistics.median(cpu):.2f} s CPU {[round(w, 2) for w in one_shot]} ({p.stderr.strip()})"
        )
        pusher = Pusher(Huddle(Settings.from_env(env), keep=Keeper()), dsn, "real")
        pusher.h.refresh(FirstRead())
        pusher.push_once()
        cycle = []
        for i in range(runs):
            append(f, f"w{i}")
            t0 = time.perf_counter()
            pusher.h.refresh()
            n, r = pusher.push_once()
            cycle.append(time.perf_counter() - t0)
        pusher.close()
        print(
            f"push after one appended line, a --watch cycle (refresh + push): median {statistics.median(cycle):.3f} s"
            f" {[round(w, 3) for w in cycle]} ({n} session, {r} responses)"
        )


def append(f: Path, tag: str) -> None:
    """One more response's line, with a new message id."""
    last = [ln for ln in f.read_bytes().splitlines() if b'"assistant"' in ln][-1]
    d = json.loads(last)
    d["message"]["id"] = f"{d['message'].get('id', 'msg')}-{tag}"
    d["uuid"] = f"{d.get('uuid', 'u')}-{tag}"
    with f.open("ab") as fh:
        fh.write((json.dumps(d) + "\n").encode())


if __name__ == "__main__":
    main()
