"""The search index shared by threads: the server's indexing thread writes while request
threads read, close it (a test, a shutdown) or delete it (damage found by a search).

One suite run crashed (SIGSEGV) when the index's sqlite3 connection was closed by one
thread while the indexing thread was stepping a statement on it. These tests stop the
indexing thread inside a statement (a trace callback runs inside sqlite3_step), then
close or reset from another thread, every time at a different statement. Events only:
the indexing thread goes on once the closer is seen waiting for the store's lock."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

import web_corpus
from conftest import SAMPLES
from huddle.core import Huddle
from huddle.search import SearchIndex
from huddle.search.live import LiveIndexer
from huddle.search.store import Store
from huddle.sources import Settings
from huddle.sources.opencode.db import Database

INDEXER = "huddle-search-index"
DEADLINE = 30.0  # a guard against a hang, never a wait that passes a test


class WatchedLock:
    """The store's lock, telling the test when a thread has to wait for it."""

    def __init__(self, inner, contended: threading.Event):
        self.inner = inner
        self.contended = contended

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self.inner.acquire(blocking=False):
            return True
        if not blocking:
            return False
        if threading.current_thread().name != INDEXER:  # the closer, not the paused thread
            self.contended.set()
        return self.inner.acquire(True, timeout)

    def release(self) -> None:
        self.inner.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Pause:
    """Holds the indexing thread inside one SQL statement per round, until the other
    thread is seen waiting for the store's lock (or, with the bug, has closed)."""

    def __init__(self) -> None:
        self.arm = threading.Event()
        self.inside = threading.Event()  # the indexing thread is in a statement
        self.waiting = threading.Event()  # the closer waits for the store's lock
        self.closed = threading.Event()  # the closer's close returned
        self.violations: list[str] = []
        self.statements = 0
        # held between rounds (_hammer): the thread waits at its next statement for the
        # test's next round, so how many rounds land is not up to the machine's load;
        # never while the closer waits for the lock (a transaction holds it: it goes on)
        self.holding = False
        self.closing = False
        self.turn = threading.Event()

    def trace(self, sql: str) -> None:
        if threading.current_thread().name != INDEXER:
            return
        self.statements += 1
        end = time.monotonic() + DEADLINE
        while self.holding and not self.closing and not self.arm.is_set() and time.monotonic() < end:
            self.turn.wait(0.05)
        if not self.arm.is_set():
            return
        self.turn.clear()
        self.arm.clear()
        self.inside.set()
        if not self.waiting.wait(DEADLINE):
            self.violations.append(f"the close neither waited for the lock nor ended: {sql[:60]}")
        elif self.closed.is_set():
            self.violations.append(f"closed while a statement ran: {sql[:60]}")
        self.waiting.clear()


@pytest.fixture
def paused(tmp_path, monkeypatch):
    """A core over every sample, its index with a watched lock, and every connection
    the store opens traced."""
    cfg = web_corpus.build(tmp_path)
    h = Huddle(cfg)
    h.refresh()
    pause = Pause()
    _traced(monkeypatch, Store, "_connect", pause)
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    index.store.lock = WatchedLock(index.store.lock, pause.waiting)
    return cfg, h, index, pause


def _traced(monkeypatch, cls, method: str, pause: Pause) -> None:
    """Every connection `cls.method` opens calls `pause.trace` at each statement."""
    opened = getattr(cls, method)

    def traced(self):
        db = opened(self)
        db.set_trace_callback(pause.trace)
        return db

    monkeypatch.setattr(cls, method, traced)


def _next_statement(pause: Pause, indexer: LiveIndexer) -> bool:
    """Arm the pause and wait until the indexing thread is held in a statement; False
    once it has nothing more to do."""
    pause.closed.clear()
    pause.arm.set()
    pause.turn.set()
    end = time.monotonic() + DEADLINE
    while not pause.inside.wait(0.05):
        if indexer.idle.is_set() and not pause.inside.is_set():
            pause.arm.clear()
            return False
        assert time.monotonic() < end, "the indexing thread stopped moving"
    pause.inside.clear()
    return True


def _hammer(pause: Pause, indexer: LiveIndexer, close, most: int) -> int:
    """Start the indexing thread and `close()` while it is inside a statement, up to
    `most` times, until it is done (the first statement is always held). Returns how
    many closes landed inside a statement."""
    pause.arm.set()
    pause.holding = True
    indexer.start()
    closes = 0
    try:
        while closes < most and _next_statement(pause, indexer):
            pause.closing = True
            close()
            pause.closing = False
            pause.closed.set()
            closes += 1
        pause.holding = False  # the rest runs free
        pause.turn.set()
        assert indexer.idle.wait(DEADLINE)
    finally:
        pause.holding = False
        pause.turn.set()
        indexer.stop()
    assert pause.violations == []
    return closes


def _clean_rows(cfg, h) -> int:
    """The rows an index built with nobody in its way holds (in a home of its own)."""
    other = SearchIndex(os.path.join(cfg.huddle_home, "clean"), cfg.folders)
    other.update(h)
    rows = other.store.stats()["rows"]
    other.store.close()
    return rows


def _orphans(index: SearchIndex) -> int:
    with index.store.lock:
        db = index.store.open()
        return db.execute("SELECT COUNT(*) FROM rows WHERE file NOT IN (SELECT id FROM files)").fetchone()[0]


def test_closing_while_the_indexing_thread_writes_waits_for_its_statement(paused):
    cfg, h, index, pause = paused
    indexer = LiveIndexer(h, index)
    closes = _hammer(pause, indexer, index.store.close, 40)  # from this thread, mid-statement
    # Each close that lands inside a statement is checked (pause.violations); how many
    # land before the build is done is the machine's scheduling (a loaded one lets the
    # thread run on while a close returns), so the count is not what passes the test.
    assert closes >= 1, f"no close landed inside a statement ({pause.statements} statements)"
    assert indexer.last_error is None
    # closed and opened again between transactions, the index lost nothing
    assert index.store.stats()["rows"] == _clean_rows(cfg, h)
    assert _orphans(index) == 0


def test_a_reset_by_another_thread_mid_build_starts_the_build_over(paused):
    """A search that finds the file damaged deletes it while the thread writes: the
    thread's next write raises Reset (never rows for files of the deleted index)."""
    cfg, h, index, pause = paused
    indexer = LiveIndexer(h, index)
    indexer.start()
    try:
        for _ in range(3):  # a few statements in: part of the first build is written
            assert _next_statement(pause, indexer)
            pause.waiting.set()  # nothing closes this round: let it go on
        assert _next_statement(pause, indexer)
        index.reset()
        pause.closed.set()
        _wait(lambda: indexer.idle.is_set() and not index.building, "the rebuild")
    finally:
        indexer.stop()
    assert pause.violations == []
    assert index.generation == 1
    assert index.store.stats()["rows"] == _clean_rows(cfg, h)
    assert index.store.stats()["dead_rows"] == 0
    assert _orphans(index) == 0


def test_stopping_mid_build_ends_at_the_next_transaction_and_closes(paused):
    cfg, h, index, pause = paused
    indexer = LiveIndexer(h, index)
    indexer.start()
    assert _next_statement(pause, indexer)
    indexer.stopping.set()  # what stop() does first; the statement is still held
    pause.waiting.set()  # let it go on
    indexer.stop()
    assert not indexer._thread.is_alive()
    assert index.store.db is None, "the thread closed its connection as it ended"
    assert pause.violations == []
    rows = index.store.stats()["rows"]
    assert rows < _clean_rows(cfg, h), "the build stopped part way, not at its end"


def test_a_scan_closing_opencodes_database_waits_for_the_indexers_read_back(tmp_path, monkeypatch):
    """OpenCode's records are database rows: the indexing thread reads them back through
    the source's connection, which the watcher's scans close. The close waits for the
    row being read, and every row comes back whole."""
    oc = tmp_path / "opencode"
    shutil.copytree(SAMPLES / "opencode" / "07-subagent" / "home" / ".local" / "share" / "opencode", oc)
    cfg = Settings(folders={"opencode": str(oc)}, huddle_home=str(tmp_path / "hh"))
    h = Huddle(cfg, sources=["opencode"])
    h.refresh()
    (handle,) = [hd for hd in h.handles.values() if hd.session.events]
    db = handle.source.database(handle.path)
    db.close()
    pause = Pause()
    _traced(monkeypatch, Database, "_open", pause)
    db.lock = WatchedLock(db.lock, pause.waiting)
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    indexer = LiveIndexer(h, index)
    closes = _hammer(pause, indexer, db.close, 20)  # what the next scan does, from the watcher's thread
    assert closes >= 1 and pause.statements >= 3, (closes, pause.statements)
    assert indexer.last_error is None
    assert index.store.stats()["rows"] == _clean_rows(cfg, h)


def _wait(fn, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not fn():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)
