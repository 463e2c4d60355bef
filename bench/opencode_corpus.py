"""Write a large OpenCode database shaped like the real one.

The schema is the one OpenCode 1.18.33 created (read from a sample); the rows are the real
rows of tests/fixtures/samples/opencode (the 50-response session, shell, files, errors, a
lead with its sub-agent), copied under new ids and times until the database holds the
asked number of lead sessions. WAL mode, as OpenCode keeps it, checkpointed at the end
(a WAL of a few pages is left, as a running OpenCode leaves one).

    python bench/opencode_corpus.py OUT_DIR [--sessions 1000]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "samples" / "opencode"
TEMPLATES = ["09-long", "02-shell", "03-files", "05-errors", "07-subagent", "04-continue"]
KILO_TEMPLATES = ["02-shell", "05-errors", "07-subagent", "04-continue", "10-fork-title", "01-qa"]
_IDS = re.compile(r"\b(?:msg|prt)_[0-9A-Za-z]{26}\b")
TABLES = ("session", "message", "part", "event_sequence", "event")


def _open_sample(name: str, app: str = "opencode") -> sqlite3.Connection:
    """A sample's database (`app`: opencode, or kilo for Kilo CLI's, the same schema)."""
    d = SAMPLES.parent / app / name / "home" / ".local" / "share" / app
    return sqlite3.connect(f"file:{d}/{app}.db?mode=ro&readonly_shm=1", uri=True)


def _rows(name: str, app: str = "opencode") -> dict[str, tuple[list[str], list[tuple]]]:
    c = _open_sample(name, app)
    try:
        out = {}
        for t in TABLES:
            cur = c.execute(f"SELECT * FROM {t}")
            out[t] = ([d[0] for d in cur.description], cur.fetchall())
        return out
    finally:
        c.close()


def write_opencode_corpus(
    out: str, n_sessions: int = 1000, app: str = "opencode", templates_of: list[str] = TEMPLATES
) -> str:
    path = Path(out) / f"{app}.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")
    src = _open_sample(templates_of[0], app)
    schema = [
        r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")
    ]
    src.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    for sql in schema:
        db.execute(sql)
    templates = {name: _rows(name, app) for name in templates_of}
    db.execute("BEGIN")
    leads = 0
    n = 0
    while leads < n_sessions:
        name = templates_of[n % len(templates_of)]
        rows = templates[name]
        sids = [r[0] for r in rows["session"][1]]
        ids = {sid: f"{sid[:-6]}{n:06d}" for sid in sids}
        shift = n * 60_000  # a minute apart, in ms
        for t in TABLES:
            cols, data = rows[t]
            for r in data:
                r = list(r)
                for i, col in enumerate(cols):
                    v = r[i]
                    if isinstance(v, str):
                        for old, new in ids.items():
                            v = v.replace(old, new)
                        if col == "id" and t in ("message", "part"):
                            v = f"{v}{n:06d}"
                        if col == "message_id" or (col == "id" and t == "event"):
                            v = f"{v}{n:06d}"
                        if col == "data" and t == "event":  # the ids it names, renamed like the rows
                            v = _IDS.sub(lambda mt, n=n: f"{mt.group(0)}{n:06d}", v)
                        r[i] = v
                    elif isinstance(v, int) and col.startswith("time_") and v > 10**12:
                        r[i] = v + shift
                db.execute(f"INSERT INTO {t} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", r)
        leads += sum(1 for r in rows["session"][1] if r[rows["session"][0].index("parent_id")] is None)
        n += 1
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("UPDATE session SET time_updated = time_updated WHERE rowid = 1")  # a few pages left in the WAL
    size = path.stat().st_size + (Path(f"{path}-wal").stat().st_size if Path(f"{path}-wal").exists() else 0)
    total = db.execute("SELECT count(*) FROM session").fetchone()[0]
    parts = db.execute("SELECT count(*) FROM part").fetchone()[0]
    db_keep.append(db)  # kept open: main() exits without closing, which leaves -wal and -shm in place
    return f"{leads} lead sessions ({total} with sub-agents), {parts} parts, {size / 1e6:.0f} MB in {path}"


db_keep: list[sqlite3.Connection] = []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--app", default="opencode", help="kilo: Kilo CLI's samples and database name")
    a = ap.parse_args()
    templates = KILO_TEMPLATES if a.app == "kilo" else TEMPLATES
    print(write_opencode_corpus(a.out, a.sessions, a.app, templates), flush=True)
    os._exit(0)  # no clean close: the WAL stays, as beside a running OpenCode


if __name__ == "__main__":
    sys.exit(main())
