"""What `huddle otel` already sent, per endpoint: $HUDDLE_HOME/otel/cursor.sqlite.

One row per span sent (session, span id, the end it was sent with), so `--follow`
sends only spans that are new or whose end moved (an agent that went on working),
across restarts. SQLite from the standard library: a row is added per span sent,
never a whole file rewritten.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable

from huddle.io import private

from .plan import SpanPlan

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sent (
  endpoint TEXT NOT NULL,
  session TEXT NOT NULL,
  span INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  PRIMARY KEY (endpoint, session, span)
) WITHOUT ROWID
"""


def _signed(span_id: int) -> int:
    return span_id - (1 << 64) if span_id >= (1 << 63) else span_id


def _unsigned(v: int) -> int:
    return v + (1 << 64) if v < 0 else v


class Cursor:
    def __init__(self, huddle_home: str, endpoint: str) -> None:
        folder = os.path.join(huddle_home, "otel")
        self.path = os.path.join(folder, "cursor.sqlite")
        self.endpoint = endpoint
        self.db = sqlite3.connect(
            private.database(self.path), timeout=30, check_same_thread=False
        )  # one user at a time
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(_SCHEMA)
        self.db.commit()

    def sent(self, session_key: str) -> dict[int, int]:
        """span id -> the end (ns) it was sent with, for one session."""
        rows = self.db.execute(
            "SELECT span, end_ns FROM sent WHERE endpoint = ? AND session = ?", (self.endpoint, session_key)
        )
        return {_unsigned(span): end for span, end in rows}

    def record(self, session_key: str, spans: Iterable[SpanPlan]) -> None:
        self.db.executemany(
            "INSERT INTO sent (endpoint, session, span, end_ns) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (endpoint, session, span) DO UPDATE SET end_ns = excluded.end_ns",
            [(self.endpoint, session_key, _signed(p.span_id), p.end) for p in spans],
        )

    def commit(self) -> None:
        self.db.commit()

    def close(self) -> None:
        self.db.commit()
        self.db.close()
