"""The PostgreSQL hub: a cold push of 1,000 sessions, an incremental push after one
append, and `huddle usage --hub` over 10 machines' worth of rows.

    python bench/bench_hub.py [--sessions 1000] [--gb 0.25] [--runs 3] [--against OTHER/src]

A real PostgreSQL is started for the run (tests/pg_server.py: Debian's server, initdb in
a temp folder, 127.0.0.1). The corpus is the Claude generator's (bench/claude_corpus.py),
written once under bench/corpus/hub/. Every command is a fresh `huddle` process; a cold
push also reads the corpus (new HUDDLE_HOME, empty hub). Ten machines: the first
machine's rows copied nine times under new session keys in SQL (same shapes), then
`usage --hub` (by day and by machine) timed beside the local `huddle usage` of one.
Runs are interleaved and repeated; the medians of wall and CPU (user + sys) seconds are
printed (2 shared cores: noisy). `--against` times another tree's `usage --hub` (e.g. a
`git archive` of main) between this tree's runs and says whether their answers match.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
OUT = HERE / "corpus" / "hub"


def corpus(gb: float, sessions: int) -> Path:
    from claude_corpus import write_claude_corpus

    root = OUT / f"claude-{gb:g}gb-{sessions}"
    if not (root / ".done").exists():
        n = write_claude_corpus(str(root), sessions, int(gb * (1 << 30)), big_bytes=int(gb * (1 << 30)) // 10)
        (root / ".done").write_text(str(n))
    return root


def env_for(claude: Path, home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(claude),
            "HUDDLE_SOURCES": "claude",
            "HUDDLE_HOME": home,
            "PYTHONPATH": str(ROOT / "src"),
        }
    )
    return env


CPU: list[float] = []  # CPU seconds (user + sys) of each `huddle` run, beside its wall time


def huddle(env: dict[str, str], *args: str) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-m", "huddle", *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        raise SystemExit(f"huddle {' '.join(args[:1])} failed: {p.stderr}")
    return wall, p.stdout, p.stderr


SERVER: list[str] = []  # the PostgreSQL data folder, once started


def server_cpu() -> float:
    """CPU seconds the server has used: the postmaster's own and its reaped backends'
    (each connection's backend exits with it)."""
    if not SERVER:
        return 0.0
    try:
        with open(os.path.join(SERVER[0], "postmaster.pid")) as f:
            pid = int(f.readline())
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def timed(env: dict[str, str], *args: str) -> tuple[float, float, str, float]:
    """(wall, CPU seconds, stdout, the server's CPU seconds) of one run."""
    s0 = server_cpu()
    wall, out, _ = huddle(env, *args)
    time.sleep(0.2)  # the backend's exit reaped by the postmaster (a bench, not a test)
    return wall, CPU[-1], out, server_cpu() - s0


def said(name: str, runs: list[tuple[float, float, str, float]], extra: str = "") -> str:
    walls, cpus, server = [r[0] for r in runs], [r[1] for r in runs], [r[3] for r in runs]
    return (
        f"{name}: median {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU"
        f" (+ {statistics.median(server):.2f} s the server's) {[round(w, 2) for w in walls]}{extra}"
    )


COPY_MACHINES = """
INSERT INTO huddle.sessions (key, source, id, machine, title, cwd, project, state, started_at, updated_at, pushed_at, row)
  SELECT key || ':m' || g, source, id || ':m' || g, 'm' || g, title, cwd, project, state, started_at, updated_at,
         pushed_at, row || jsonb_build_object('id', id || ':m' || g)
  FROM huddle.sessions, generate_series(1, 9) g WHERE machine = 'm0';
INSERT INTO huddle.session_machines (session_key, machine, pushed_at)
  SELECT key, machine, pushed_at FROM huddle.sessions WHERE machine <> 'm0';
INSERT INTO huddle.agents
  SELECT a.session_key || ':m' || g, a.agent_id, a.parent, a.name, a.type, a.tool_use_id, a.model, a.started_at,
         a.updated_at, a.input, a.output, a.cache_read, a.cache_write, a.cache_write_1h, a.description
  FROM huddle.agents a, generate_series(1, 9) g;
INSERT INTO huddle.responses
  SELECT r.session_key || ':m' || g, r.response_key, r.source, r.response_id || ':m' || g, r.agent_id, r.agent_label,
         r.model, r.t, r.input, r.output, r.cache_read, r.cache_write, r.cache_write_1h
  FROM huddle.responses r, generate_series(1, 9) g;
ANALYZE;
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--gb", type=float, default=0.25)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--against", default=None, metavar="SRC", help="another tree's src/: its usage --hub interleaved")
    a = ap.parse_args()
    import psycopg

    from pg_server import Postgres

    root = corpus(a.gb, a.sessions)
    pg = Postgres().start()
    SERVER.append(pg.data)
    try:
        cold, incr, rows_incr = [], [], []
        for i in range(a.runs):
            db = pg.create_db(f"bench{i}")
            dsn = pg.dsn(db)
            with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
                # a private copy of the corpus so the append does not touch the cached one
                claude = Path(work) / "claude"
                subprocess.run(["cp", "-r", str(root), str(claude)], check=True)
                env = env_for(claude, home)
                w, _, err = huddle(env, "push", dsn, "--machine", "m0")
                cold.append(w)
                if i == 0:
                    print(f"cold: {err.strip()}")
                f = min(claude.glob("projects/*/*.jsonl"), key=lambda p: p.stat().st_size)
                last = f.read_bytes().splitlines(keepends=True)[-4:]
                with f.open("ab") as fh:  # one more turn's worth of lines, with new message ids
                    for line in last:
                        d = json.loads(line)
                        if isinstance(d.get("message"), dict) and d["message"].get("id"):
                            d["message"]["id"] += f"-x{i}"
                        d["uuid"] = f"{d.get('uuid', 'u')}-x{i}"
                        fh.write((json.dumps(d) + "\n").encode())
                w, _, err = huddle(env, "push", dsn, "--machine", "m0")
                incr.append(w)
                rows_incr.append(err.strip())
        print(
            f"push of {a.sessions:,} sessions, cold (reads the corpus too): median {statistics.median(cold):.2f} s {cold}"
        )
        print(f"push after one append: median {statistics.median(incr):.2f} s {incr} ({rows_incr[0]})")
        # ten machines' rows
        dsn = pg.dsn(f"bench{a.runs - 1}")
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(COPY_MACHINES)
            n = c.execute("SELECT count(*) FROM huddle.responses").fetchone()[0]
            ns = c.execute("SELECT count(*) FROM huddle.sessions").fetchone()[0]
        with tempfile.TemporaryDirectory() as home:
            env = env_for(root, home)
            trees = {"this tree": env}
            if a.against:  # the same runs from another tree's src, interleaved (a before/after)
                trees["against"] = {**env, "PYTHONPATH": str(Path(a.against).resolve())}
            huddle(env, "usage")  # the local index, built once
            hub: dict[str, list] = {k: [] for k in trees}
            machine: dict[str, list] = {k: [] for k in trees}
            outs: dict[str, set[str]] = {k: set() for k in trees}
            t_local = []
            for _ in range(a.runs):
                for k, e in trees.items():
                    hub[k].append(timed(e, "usage", "--hub", dsn, "--json"))
                    machine[k].append(timed(e, "usage", "--hub", dsn, "--json", "--by", "machine"))
                    outs[k] |= {hub[k][-1][2], machine[k][-1][2]}
                t_local.append(timed(env, "usage", "--json"))
            rows = json.loads(machine["this tree"][-1][2])["rows"]
        for k in trees:
            print(said(f"{k}: usage --hub over 10 machines ({ns:,} sessions, {n:,} response rows)", hub[k]))
            print(said(f"{k}: usage --hub --by machine", machine[k], f" ({len(rows)} rows)"))
        if a.against:
            same = outs["this tree"] == outs["against"]
            print(f"the two trees' JSON answers: {'identical' if same else 'DIFFERENT'}")
            for name, runs in (("usage --hub", hub), ("--by machine", machine)):
                ratio = statistics.median(r[1] for r in runs["this tree"]) / statistics.median(
                    r[1] for r in runs["against"]
                )
                both = statistics.median(r[1] + r[3] for r in runs["this tree"]) / statistics.median(
                    r[1] + r[3] for r in runs["against"]
                )
                print(f"{name}: this tree / against, CPU: {ratio:.3f}; CPU with the server's: {both:.3f}")
        print(said("local huddle usage of one machine (from its index)", t_local))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
