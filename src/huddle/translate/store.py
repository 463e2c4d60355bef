"""$HUDDLE_HOME/translate/cache.db: every string translated once, and huddle's own tokens.

`strings`: (language, the original's SHA-256) -> the translation, so a string is sent to
a model once per language, whatever page, notification or restart asks again.
`spent`: one row per model response huddle itself asked for (translation), with its
tokens: `huddle usage` lists them as huddle's own, never among the sessions'.
The folder and the database are the user's alone (0700, 0600); SQLite makes its
journal with the database's mode.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS strings (lang TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL,
  at REAL NOT NULL, PRIMARY KEY (lang, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spent (t REAL NOT NULL, what TEXT NOT NULL, via TEXT NOT NULL, model TEXT NOT NULL,
  input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL);
"""
FIELDS = ("input", "output", "cache_read", "cache_write")


def folder(home: str) -> str:
    return os.path.join(home, "translate")


def db_path(home: str) -> str:
    return os.path.join(folder(home), "cache.db")


def key_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Store:
    def __init__(self, home: str) -> None:
        self.home = home
        os.makedirs(folder(home), mode=0o700, exist_ok=True)
        path = db_path(home)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # made the user's before SQLite opens it
        os.close(fd)
        os.chmod(path, 0o600)
        self.lock = threading.Lock()
        self.db = sqlite3.connect(path, check_same_thread=False, timeout=10)
        with self.lock:
            self.db.executescript(SCHEMA)

    def get(self, lang: str, texts: list[str]) -> dict[str, str]:
        """{original: translation} of those already translated."""
        out: dict[str, str] = {}
        keys = {key_of(t): t for t in texts}
        with self.lock:
            for i in range(0, len(keys), 500):
                part = list(keys)[i : i + 500]
                q = f"SELECT key, text FROM strings WHERE lang = ? AND key IN ({','.join('?' * len(part))})"
                for k, text in self.db.execute(q, [lang, *part]):
                    out[keys[k]] = text
        return out

    def put(self, lang: str, pairs: dict[str, str]) -> None:
        now = time.time()
        with self.lock, self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO strings VALUES (?, ?, ?, ?)",
                [(lang, key_of(o), t, now) for o, t in pairs.items()],
            )

    def spend(self, via: str, model: str, usage: dict[str, int], what: str = "translation") -> None:
        row = (time.time(), what, via, model or "unknown", *(max(0, int(usage.get(f, 0) or 0)) for f in FIELDS))
        with self.lock, self.db:
            self.db.execute("INSERT INTO spent VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
        from huddle.io import answers

        answers.drop(self.home, answers.USAGE)  # `usage --json` said from its stored answer would miss it

    def close(self) -> None:
        with self.lock:
            self.db.close()


def spent(home: str, since: float | None = None, until: float | None = None) -> list[dict[str, Any]]:
    """huddle's own model responses (read-only; none when nothing was ever translated)."""
    path = db_path(home)
    if not os.path.exists(path):
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return []
    try:
        rows = db.execute("SELECT t, what, via, model, input, output, cache_read, cache_write FROM spent").fetchall()
    except sqlite3.Error:
        return []
    finally:
        db.close()
    out = []
    for t, what, via, model, *n in rows:
        if (since is not None and t < since) or (until is not None and t >= until):
            continue
        out.append({"t": t, "what": what, "via": via, "model": model, **dict(zip(FIELDS, n))})
    return out
