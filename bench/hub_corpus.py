"""A generated hub: a team's year of sessions written straight into PostgreSQL with COPY.

`fill(conn, machines, rows)` writes `machines` machines' sessions (about 200 model
responses each, over the year before `END`), their board rows, the machines holding
copies (3% of sessions are on a second machine), forks (2% of sessions repeat the first
responses of an earlier session of theirs: ids two sessions hold), and `rows` responses:
models and sub-agents as a team's mix, token counts shaped like real ones (large cache
reads, small inputs, some prompts past a long-context threshold). Deterministic (one
seed). The triggers are off while the rows go in; the sums are then added up once
(triggers.resum), which is also what a hub written before them gets when it migrates.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from typing import Any

END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
YEAR = 365 * 86400.0
CLAUDE_MODELS = [("claude-opus-4-7", 0.5), ("claude-sonnet-4-5", 0.35), ("claude-haiku-4-5", 0.15)]
CODEX_MODELS = [("gpt-6.2-sol", 0.7), ("gpt-5.4", 0.3)]
LABELS = ["Explore", "general-purpose", "Plan"]
STATES = ["ended"] * 2 + ["idle"]  # (a session of days ago is at rest; the last day's may be live)
LIVE = ["your_turn", "working", "needs_you", "idle", "ended"]


def _pick(rnd: random.Random, weighted: list[tuple[str, float]]) -> str:
    x = rnd.random()
    for name, w in weighted:
        x -= w
        if x <= 0:
            return name
    return weighted[-1][0]


def _row(key: str, source: str, sid: str, machine: str, project: str, start: float, end: float, n: int) -> dict:
    """A board row as a push writes it (views.board's shape, no text)."""
    from huddle.model.times import iso

    return {
        "id": sid,
        "source": source,
        "title": "",
        "project": project,
        "cwd": f"/home/dev/work/{project}",
        "state": "ended",
        "state_since": iso(end),
        "started_at": iso(start),
        "updated_at": iso(end),
        "agents": [{"id": sid, "label": "lead", "state": "ended", "model": "", "tokens": 0}],
        "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
        "tokens": 0,
        "cost": {"usd": 0.0, "unpriced": []},
        "events": n,
        "resume": f"claude --resume {sid}" if source == "claude" else f"codex resume {sid}",
        "machine": machine,
        "background": [],
        "skipped_lines": 0,
    }


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def fill(conn: Any, machines: int, rows: int, seed: int = 20261130, say: Any = print) -> dict[str, float]:
    """Write the hub; returns seconds per step."""
    rnd = random.Random(seed)
    per = 200
    n_sessions = max(1, rows // per)
    times: dict[str, float] = {}
    sessions: list[tuple[str, str, str, float, str]] = []  # key, source, machine, start, project
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        with cur.copy(
            "COPY huddle.sessions (key, source, id, machine, title, cwd, project, state, started_at, updated_at,"
            " pushed_at, row) FROM STDIN"
        ) as cp:
            for i in range(n_sessions):
                m = f"m{i % machines:02d}"
                source = "claude" if rnd.random() < 0.7 else "codex"
                sid = str(uuid.UUID(int=rnd.getrandbits(128)))
                key = f"{source}:{sid}"
                start = END - YEAR + rnd.random() * YEAR
                end = start + rnd.random() * 3 * 3600
                project = f"proj{rnd.randint(0, 59)}"
                sessions.append((key, source, m, start, project))
                row = json.dumps(_row(key, source, sid, m, project, start, end, per))
                state = rnd.choice(LIVE if end > END - 86400 else STATES)
                cp.write(
                    f"{key}\t{source}\t{sid}\t{m}\t\t/home/dev/work/{project}\t{project}\t{state}\t{start!r}\t{end!r}"
                    f"\t{end!r}\t{_esc(row)}\n"
                )
        with cur.copy("COPY huddle.session_machines (session_key, machine, pushed_at) FROM STDIN") as cp:
            for key, _, m, start, _ in sessions:
                cp.write(f"{key}\t{m}\t{start!r}\n")
                if rnd.random() < 0.03:
                    other = f"m{(int(m[1:]) + 1) % machines:02d}"
                    if other != m:
                        cp.write(f"{key}\t{other}\t{start!r}\n")
        cur.execute(
            "INSERT INTO huddle.machines (name, first_push, last_seen, huddle_version)"
            " SELECT DISTINCT machine, 0, 0, 'bench' FROM huddle.session_machines"
        )
    conn.commit()
    times["sessions"] = time.perf_counter() - t0
    say(f"  {n_sessions:,} sessions, {machines} machines: {times['sessions']:.1f} s")

    t0 = time.perf_counter()
    conn.execute("ALTER TABLE huddle.responses DISABLE TRIGGER USER")
    written = 0
    by_session: list[list[tuple[str, str]]] = []  # per session: (response key, id) of its first responses
    with (
        conn.cursor() as cur,
        cur.copy(
            "COPY huddle.responses (session_key, response_key, source, response_id, agent_id, agent_label, model,"
            " t, input, output, cache_read, cache_write, cache_write_1h) FROM STDIN"
        ) as cp,
    ):
        for i, (key, source, _m, start, _p) in enumerate(sessions):
            n = rnd.randint(per // 10, per * 2 - per // 10) if i < n_sessions - 1 else max(1, rows - written)
            n = min(n, rows - written)
            if n <= 0:
                break
            models = CLAUDE_MODELS if source == "claude" else CODEX_MODELS
            lead = _pick(rnd, models)
            subs = [(f"a{rnd.getrandbits(40):010x}", rnd.choice(LABELS)) for _ in range(rnd.randint(0, 3))]
            lead_id = key.split(":", 1)[1]
            fork = by_session[rnd.randrange(len(by_session))] if by_session and rnd.random() < 0.02 else []
            t = start
            lines = []
            kept: list[tuple[str, str]] = []
            for j in range(n):
                t += rnd.expovariate(1 / 30.0)
                if j < len(fork):
                    rid = fork[j][1]
                    agent, label, model = lead_id, "lead", lead
                else:
                    rid = f"msg_{i:06d}_{j:04d}"
                    if subs and rnd.random() < 0.3:
                        agent, label = rnd.choice(subs)
                        model = _pick(rnd, models)
                    else:
                        agent, label, model = lead_id, "lead", lead
                big = rnd.random() < 0.03
                inp = rnd.randint(1, 4000)
                cr = rnd.randint(150_000, 260_000) if big else rnd.randint(8_000, 150_000)
                cw = rnd.randint(0, 20_000)
                c1 = cw if rnd.random() < 0.2 else 0
                rk = f"r:{agent}:{rid}"
                if j < 8:
                    kept.append((rk, rid))
                lines.append(
                    f"{key}\t{rk}\t{source}\t{rid}\t{agent}\t{label}\t{model}\t{t!r}\t{inp}\t"
                    f"{rnd.randint(10, 4000)}\t{cr}\t{cw}\t{c1}\n"
                )
            by_session.append(kept)
            cp.write("".join(lines))
            written += n
            if i % 5000 == 0 and i:
                say(f"  {written:,} responses ({time.perf_counter() - t0:.0f} s)")
    conn.execute("ALTER TABLE huddle.responses ENABLE TRIGGER USER")
    conn.commit()
    times["responses"] = time.perf_counter() - t0
    say(f"  {written:,} responses by COPY: {times['responses']:.1f} s")

    t0 = time.perf_counter()
    conn.execute("INSERT INTO huddle.prices (model) SELECT DISTINCT model FROM huddle.responses ON CONFLICT DO NOTHING")
    conn.execute(
        "INSERT INTO huddle.shared_ids (source, response_id) SELECT source, response_id FROM huddle.responses"
        " GROUP BY 1, 2 HAVING min(session_key) <> max(session_key)"
    )
    conn.commit()
    times["shared"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    from huddle.cost.pricing import current
    from huddle.hub.prices import sync

    conn.execute("SET work_mem = '256MB'")
    sync(conn, current())  # prices every model: the sums are added up once, priced (no response is out of range)
    conn.commit()
    times["sums"] = time.perf_counter() - t0
    say(f"  sums added up: {times['sums']:.1f} s")
    return times
