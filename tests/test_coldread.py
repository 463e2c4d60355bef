"""Cold reads shared between forked workers give the same board as one process."""

from __future__ import annotations

from conftest import SAMPLES
from huddle.core import FirstRead, Huddle, coldread
from huddle.sources import Settings
from huddle.views.board import board_json
from said import as_json


def settings(tmp_path):
    return Settings(
        folders={
            "claude": str(SAMPLES / "claude" / "02-subagents" / "config"),
            "codex": str(SAMPLES / "codex" / "subagents_v2" / "codex_home"),
            "vibe": str(SAMPLES / "vibe" / "3.0.3-unified-subagent"),
        },
        huddle_home=str(tmp_path / "hh"),
    )


def rows(h):
    return [{k: v for k, v in r.items() if k != "state_since"} for r in as_json(board_json(h))["sessions"]]


def test_parallel_first_read_equals_a_plain_one(tmp_path, monkeypatch):
    plain = Huddle(settings(tmp_path))
    plain.refresh()
    monkeypatch.setattr(coldread, "MIN_BYTES", 0)  # the samples are small: read them in workers anyway
    forked = Huddle(settings(tmp_path))
    new = {k: h for src in forked.sources if src.exists() for k, h in src.scan({}).items()}
    done = coldread.read_in_parallel(dict(new), forked.sources)
    assert done == set(new) and len(done) >= 4
    forked2 = Huddle(settings(tmp_path))
    forked2.refresh(FirstRead())
    assert rows(forked2) == rows(plain)
    # a session read by a worker comes back without its timeline; asking for it reads it again
    key = next(iter(forked2.handles))
    assert not forked2.handles[key].session.complete
    whole = forked2.complete(key)
    assert whole.complete and len(whole.events) == len(plain.session(key).events)


def test_workers_started_fresh_read_the_same_from_a_thread(tmp_path, monkeypatch):
    """A process with threads (the server) starts its workers fresh, never forks: each
    scans the sources itself for the sessions it is given."""
    import threading

    plain = Huddle(settings(tmp_path))
    plain.refresh()
    monkeypatch.setattr(coldread, "MIN_BYTES", 0)
    spawned = Huddle(settings(tmp_path))
    got: dict = {}

    def first_read() -> None:
        new = {k: h for src in spawned.sources if src.exists() for k, h in src.scan({}).items()}
        got["done"] = coldread.read_in_parallel(new, spawned.sources, spawn=spawned.settings)
        got["new"] = new

    t = threading.Thread(target=first_read)
    t.start()
    t.join(120)
    assert got["done"] == set(got["new"]) and len(got["done"]) >= 4
    assert all(not h.session.complete and h.source is not None for h in got["new"].values())
    again = Huddle(settings(tmp_path))
    again.refresh(FirstRead(spawn=True))
    assert rows(again) == rows(plain)


def test_the_cache_keeps_a_workers_pickle_unless_its_session_moved_since(tmp_path, monkeypatch):
    """What a worker pickled is what the cache stores (not unpickled only to be pickled
    again), while the session's version is the one it was pickled at."""
    import pickle

    from huddle.core.cache import HandleCache

    monkeypatch.setattr(coldread, "MIN_BYTES", 0)
    h = Huddle(settings(tmp_path))
    new = {k: x for src in h.sources if src.exists() for k, x in src.scan({}).items()}
    assert coldread.read_in_parallel(new, h.sources) == set(new)
    moved = sorted(new)[0]
    new[moved].session.version += 1  # (as a settle or a recount after the read does)
    made = {k: coldread._pickled[x][1] for k, x in new.items() if k != moved}
    cache = HandleCache(str(tmp_path / "hh"), ("key",))
    cache.load(h.sources)
    cache.save(new)
    stored = cache.store.blobs(list(new))
    assert {k: stored[k] for k in made} == made  # the workers' own bytes
    assert stored[moved] == pickle.dumps(new[moved], protocol=pickle.HIGHEST_PROTOCOL)
    assert coldread.pickled(new[moved]) is None and not coldread._pickled  # used once, then let go
    again = HandleCache(str(tmp_path / "hh"), ("key",)).load(h.sources)
    assert {k: x.session.usage.to_dict() for k, x in again.items()} == {
        k: x.session.usage.to_dict() for k, x in new.items()
    }


def test_jobs_cut_the_bytes_evenly_biggest_first():
    """Several jobs per worker, each key in one job, the biggest read first, each job a
    share of what is left (so the last are small: the workers end together); a session
    larger than a job's share is a job alone (workers take the next job when free)."""
    sizes = {f"claude:{i}": 10 + i for i in range(400)} | {"codex:big": 50000}
    jobs = coldread.jobs_for(sizes, workers=2)
    keys = [k for job in jobs for k in job]
    assert sorted(keys) == sorted(sizes)  # every session once
    assert jobs[0] == ["codex:big"]
    assert len(jobs) > 4
    bytes_of = [sum(sizes[k] for k in job) for job in jobs]
    assert bytes_of[1] > 2 * bytes_of[-2]  # shares shrink as the read goes on
    least = sum(sizes.values()) // (2 * coldread.SMALLEST_JOB)
    assert all(b < least + 410 for b in bytes_of[-3:])  # the last are the smallest share
    assert coldread.jobs_for({}, workers=2) == []
