"""Words as the index's stemmed table holds them: SQLite's own porter tokenizer asked
(an in-memory FTS5 table and its vocabulary), so what a page marks is what matched."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

_local = threading.local()


def _db() -> sqlite3.Connection:
    db = getattr(_local, "db", None)
    if db is None:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.db = db
    return db


def stems(words: Sequence[str]) -> list[str]:
    """Each word's stem (the words as `text.word_list` cuts them: one token each)."""
    if not words:
        return []
    db = _db()
    with db:
        db.execute("DELETE FROM t")
        db.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (" ".join(words),))
        got = dict(db.execute("SELECT offset, term FROM v").fetchall())
    return [got.get(i, w) for i, w in enumerate(words)]
