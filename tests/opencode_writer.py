"""A stand-in for a running OpenCode in the tests: another process that holds a copy of a
sample database open read-write in WAL mode (as OpenCode does) and runs the statements it
is sent, one JSON line each, answering "ok" or the error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
c.execute("PRAGMA journal_mode = WAL")
c.execute("PRAGMA wal_autocheckpoint = 0")  # keep the data in the WAL, as a fresh OpenCode home has it
print("ready", flush=True)
for line in sys.stdin:
    try:
        sql, args = json.loads(line)
        rows = c.execute(sql, args).fetchall()
        print(json.dumps(["ok", rows]), flush=True)
    except Exception as exc:
        print(json.dumps(["error", str(exc)]), flush=True)
"""


class Writer:
    def __init__(self, db: Path):
        self.p = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.p.stdout.readline().strip() == "ready"

    def run(self, sql: str, *args):
        self.p.stdin.write(json.dumps([sql, list(args)]) + "\n")
        self.p.stdin.flush()
        status, rows = json.loads(self.p.stdout.readline())
        assert status == "ok", rows
        return rows

    def add_text(self, session: str, part_id: str, text: str, at: int = 1796119393999) -> None:
        """A finished text part in the session's newest message, as OpenCode writes one
        (its own commit), and the session's event sequence moved (a second commit)."""
        (msg,) = self.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", session)
        self.run(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
            part_id,
            msg[0],
            session,
            at,
            at,
            json.dumps({"type": "text", "text": text, "time": {"start": 1, "end": 2}}),
        )
        self.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", session)

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=10)
        self.p.stdout.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
