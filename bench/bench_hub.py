"""The PostgreSQL hub: a cold push of 1,000 sessions, an incremental push after one
append, and `huddle usage --hub` over 10 machines' worth of rows.

    python bench/bench_hub.py [--sessions 1000] [--gb 0.25] [--runs 3]

A real PostgreSQL is started for the run (tests/pg_server.py: Debian's server, initdb in
a temp folder, 127.0.0.1). The corpus is the Claude generator's (bench/claude_corpus.py),
written once under bench/corpus/hub/. Every command is a fresh `huddle` process; a cold
push also reads the corpus (new HUDDLE_HOME, empty hub). Ten machines: the first
machine's rows copied nine times under new session keys in SQL (same shapes), then
`usage --hub` (by day and by machine) timed beside the local `huddle usage` of one.
Runs are interleaved and repeated; the medians are printed (2 shared cores: noisy).
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


def huddle(env: dict[str, str], *args: str) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "huddle", *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"huddle {' '.join(args[:1])} failed: {p.stderr}")
    return wall, p.stdout, p.stderr


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
    a = ap.parse_args()
    import psycopg

    from pg_server import Postgres

    root = corpus(a.gb, a.sessions)
    pg = Postgres().start()
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
            huddle(env, "usage")  # the local index, built once
            t_hub, t_machine, t_local = [], [], []
            for _ in range(a.runs):
                t_hub.append(huddle(env, "usage", "--hub", dsn, "--json")[0])
                t_machine.append(huddle(env, "usage", "--hub", dsn, "--json", "--by", "machine")[0])
                t_local.append(huddle(env, "usage", "--json")[0])
            _, out, _ = huddle(env, "usage", "--hub", dsn, "--json", "--by", "machine")
            rows = json.loads(out)["rows"]
        print(
            f"usage --hub over 10 machines ({ns:,} sessions, {n:,} response rows): median {statistics.median(t_hub):.2f} s"
        )
        print(f"usage --hub --by machine: median {statistics.median(t_machine):.2f} s ({len(rows)} rows)")
        print(f"local huddle usage of one machine (from its index): median {statistics.median(t_local):.2f} s")
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
