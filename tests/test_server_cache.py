"""`huddle serve` from the cache (a lazy core): the board answers at once with the rows
as last built, the first read runs behind it, sessions nothing moved in stay unread
until a page asks, and what they show is what a cold read shows. Real uvicorn."""

from __future__ import annotations

import contextlib
import os
import time

import httpx
import pytest

import web_corpus
from helpers import wait_for
from huddle.core import Huddle, Keeper, coldread
from huddle.server import ServerThread
from huddle.views import api
from huddle.views.board import board_json, leave_board
from said import as_json

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}
DEADLINE = 20.0


def _age(root, seconds: float = 86400.0) -> None:
    """Every file and folder below `root` last written `seconds` ago (files copied just
    now would be read again: the cache trusts only what stood still)."""
    t = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames + dirnames:
            os.utime(os.path.join(dirpath, name), (t, t))


def _status(settings) -> None:
    """What `huddle status` leaves: the cache, with every row."""
    h = Huddle(settings, keep=Keeper())
    h.refresh()
    built: dict = {}
    leave_board(h, board_json(h, built=built), built)
    h.cache.store.close()


def _wait(what, deadline: float = DEADLINE):
    return wait_for(what, deadline=deadline)


@contextlib.contextmanager
def _held(h):
    """The core's lock taken by this thread until `release()` (or the block's end)."""
    h.lock.acquire()
    held = [True]

    def release() -> None:
        if held[0]:
            held[0] = False
            h.lock.release()

    try:
        yield release
    finally:
        release()


@pytest.fixture
def home(tmp_path):
    settings = web_corpus.build(tmp_path)
    for folder in settings.folders.values():
        _age(folder)
    _status(settings)
    return settings


def _sleeping_claude(h):
    """A Claude session the core left unread: (key, id, main file)."""
    key = next(k for k in sorted(h.dormant) if k.startswith("claude:"))
    sid = key.split(":", 1)[1]
    main = next(f for f in h.dormant[key].head["files"] if f[0].endswith(sid + ".jsonl"))[0]
    return key, sid, web_corpus.Path(main)


def _cold(settings):
    h = Huddle(settings)
    h.refresh()
    return h


def _rows(board):
    return sorted(board["sessions"], key=lambda r: (r["source"], r["id"]))


def test_the_board_answers_from_the_cache_before_the_first_read(home):
    expected = _rows(as_json(api.sessions(_cold(home))))
    h = Huddle(home, keep=Keeper())
    # the core's lock held: the first read cannot run, and the board must still answer
    with _held(h) as release, ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url) as c:
        early = c.get("/api/sessions").json()
        assert not srv.state.watcher.started
        assert _rows(early) == expected
        assert any("reading the session files" in n for n in early.get("notes", []))
        release()
        _wait(lambda: srv.state.watcher.started)
        board = c.get("/api/sessions").json()
    assert _rows(board) == expected
    assert not any("reading the session files" in n for n in board.get("notes", []))


def test_sessions_nothing_moved_in_stay_unread_and_read_whole_when_asked(home):
    cold = _cold(home)
    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        _wait(lambda: srv.state.watcher.started)
        asleep = sorted(h.dormant)
        assert len(asleep) > len(cold.handles) // 2  # most of the samples sleep
        assert _rows(c.get("/api/sessions").json()) == _rows(as_json(api.sessions(cold)))
        for key in asleep[:6]:
            sid = key.split(":", 1)[1]
            assert c.get(f"/api/sessions/{sid}").json() == api.session_detail(cold, sid)
            assert c.get(f"/api/sessions/{sid}/events").json() == api.events(cold, sid)
            assert key not in h.dormant and h.handles[key].session.complete


def test_a_sleeping_session_that_moves_is_read_and_pushed(home):
    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        _wait(lambda: srv.state.watcher.started)
        _key, sid, main = _sleeping_claude(h)
        before = c.get(f"/api/sessions/{sid}/events").json()["events"]  # a page opens it: read whole
        web_corpus.append_say(main, "said after the start")
        srv.state.watcher.wake.set()

        def pushed():
            ev = c.get(f"/api/sessions/{sid}/events").json()["events"]
            return ev if any(e.get("text") == "said after the start" for e in ev) else None

        after = _wait(pushed)
        assert after[: len(before)] == before
        new = after[len(before) :]
        assert [e["seq"] for e in new] == list(range(before[-1]["seq"] + 1, before[-1]["seq"] + 1 + len(new)))
        row = _wait(lambda: next((r for r in c.get("/api/sessions").json()["sessions"] if r["id"] == sid), None))
        assert row["state"] != "ended" or row["events"]["say"] >= 1


def test_the_stream_pushes_a_woken_session_from_where_its_page_read_it(home):
    from test_server import read_sse

    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        _wait(lambda: srv.state.watcher.started)
        _key, sid, main = _sleeping_claude(h)
        last = c.get(f"/api/sessions/{sid}/events").json()["events"][-1]["seq"]
        msgs = read_sse(
            f"{srv.url}api/stream?session={sid}",
            lambda ms: any(m["event"] == "events" for m in ms),
            on_hello=lambda: web_corpus.append_say(main, "pushed from the cache"),
        )
        got = next(m for m in msgs if m["event"] == "events")["data"]["events"]
        assert got[0]["seq"] == last + 1 and any(e.get("text") == "pushed from the cache" for e in got)


def test_search_finds_what_sleeping_sessions_say(home):
    cold = _cold(home)
    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        _wait(lambda: srv.state.watcher.started)
        _wait(lambda: srv.state.indexer.idle.is_set() and not srv.state.indexer.index.building)
        key = next(k for k in sorted(h.dormant) if k.startswith("claude:"))
        s = cold.handles[key].session
        word = next(
            w for e in s.events if e.kind == "say" and e.text for w in e.text.split() if len(w) > 6 and w.isalpha()
        )
        got = c.get("/api/search", params={"q": word, "limit": 200}).json()
        assert any(r["key"] == key and r["snippet"] for r in got["results"]), got
    # built in a child process: what it read whole is no memory of the server's
    assert srv.state.indexer.built_by not in (None, os.getpid())


def test_the_next_start_shows_what_the_last_one_read(home):
    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        _wait(lambda: srv.state.watcher.started)
        key, _sid, main = _sleeping_claude(h)
        web_corpus.append_say(main, "seen by the first server")
        srv.state.watcher.wake.set()
        _wait(lambda: key in h.handles)
        _age(main.parent)
        srv.state.watcher.wake.set()
        _wait(lambda: srv.state.watcher.ticks > 0 and h.generation > 0)
    expected = _rows(as_json(api.sessions(_cold(home))))
    again = Huddle(home, keep=Keeper())
    with _held(again) as release, ServerThread(again, watch_options=FAST) as srv, httpx.Client(base_url=srv.url) as c:
        early = c.get("/api/sessions").json()
        assert not srv.state.watcher.started and _rows(early) == expected
        release()
        _wait(lambda: srv.state.watcher.started)


@pytest.mark.parametrize("workers", [False, True, "apart"], ids=["in-process", "fresh-workers", "child-process"])
def test_a_first_start_without_a_cache_holds_no_settled_timeline(tmp_path, monkeypatch, workers):
    read_by_workers: set[str] = set()
    read_here: list[int] = []
    # the samples are small: read them in fresh worker processes anyway
    monkeypatch.setattr(coldread, "MIN_BYTES", 0)
    real = coldread.read_in_parallel

    def noted(handles, sources, spawn=None, *rest):
        assert spawn is not None  # a process with threads never forks
        read_here.append(len(handles))
        done = real(handles, sources, spawn, *rest) if workers is True else set()
        read_by_workers.update(done)
        return done

    monkeypatch.setattr("huddle.core.huddle.read_in_parallel", noted)
    settings = web_corpus.build(tmp_path)
    for folder in settings.folders.values():
        _age(folder)
    cold = _cold(settings)
    h = Huddle(settings, keep=Keeper())
    opts = {**FAST, "read_apart": workers == "apart"}
    with _held(h) as release, ServerThread(h, watch_options=opts) as srv, httpx.Client(base_url=srv.url) as c:
        early = c.get("/api/sessions").json()
        assert early["sessions"] == [] and c.get("/api/info").json()["reading"] is True
        release()
        _wait(lambda: srv.state.watcher.started)
        assert _rows(c.get("/api/sessions").json()) == _rows(as_json(api.sessions(cold)))
        assert c.get("/api/info").json()["reading"] is False
        # read once, kept as the cache keeps it, and the settled ones left unread again
        assert h.dormant and all(not x.session.complete for x in h.handles.values())
        key = sorted(h.dormant)[0]
        sid = key.split(":", 1)[1]
        assert c.get(f"/api/sessions/{sid}/events").json() == api.events(cold, sid)
    if workers == "apart":  # the child read everything: here, only what had not settled
        assert srv.state.watcher.last_error is None and sum(read_here) < len(cold.handles) // 2
        assert len(srv.state.watcher.built) < len(cold.handles) // 2  # (its rows stand: none built again)
    else:
        assert len(read_by_workers) > len(cold.handles) // 2 if workers else not read_by_workers


def test_the_board_at_a_past_moment_replays_whole_timelines(home):
    cold = _cold(home)
    starts = sorted(s.started_at for s in cold.sessions() if s.started_at)
    at = starts[len(starts) // 2] + 1.0  # some sessions under way then, some not begun
    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        _wait(lambda: srv.state.watcher.started)
        got = c.get("/api/sessions", params={"at": str(at)}).json()
    assert _rows(got) == _rows(as_json(api.sessions(cold, at=at)))
    assert not any(x.session.complete for x in h.handles.values())  # read for it, not kept


def test_usage_on_a_lazy_server_is_a_cold_reads(home):
    cold = _cold(home)
    h = Huddle(home, keep=Keeper())
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        _wait(lambda: srv.state.watcher.started)
        for by in ("day", "model", "session", "agent"):
            got = c.get("/api/usage", params={"by": by}).json()
            assert got["rows"] == api.usage(cold, by=by)["rows"] and got["totals"] == api.usage(cold, by=by)["totals"]


def test_timelines_no_page_follows_are_let_go_but_the_last_few(home):
    """A server open all day holds whole the sessions its pages follow and the last few
    read (`keep_whole`); the others go back to the cache's form, answer as before, and
    are read whole again when a page comes back."""
    from test_server import read_sse

    cold = _cold(home)
    h = Huddle(home, keep=Keeper())
    opts = {**FAST, "let_go_every": 0.1, "keep_whole": 1}
    with ServerThread(h, watch_options=opts) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        _wait(lambda: srv.state.watcher.started)
        keys = [k for k in sorted(h.dormant) if k.startswith("claude:")][:4]
        ids = [k.split(":", 1)[1] for k in keys]
        assert c.get(f"/api/sessions/{ids[0]}/events").json() == api.events(cold, ids[0])  # a page opens
        main = next(f for f in h.handles[keys[0]].files() if f.endswith(ids[0] + ".jsonl"))

        def whole() -> set[str]:
            with h.lock:
                return {k for k, x in h.handles.items() if x.session.complete}

        def others_then_append() -> None:  # the first page open (followed), three more opened and left
            for sid in ids[1:]:
                assert c.get(f"/api/sessions/{sid}/events").json() == api.events(cold, sid)
            _wait(lambda: whole() == {keys[0], keys[-1]})
            web_corpus.append_say(web_corpus.Path(main), "said to an open page")
            srv.state.watcher.wake.set()

        msgs = read_sse(
            f"{srv.url}api/stream?session={ids[0]}",
            lambda ms: any(
                m["event"] == "events" and any(e.get("text") == "said to an open page" for e in m["data"]["events"])
                for m in ms
            ),
            on_hello=others_then_append,
        )
        assert not any(m["event"] == "reset" for m in msgs)
        read_again: list[str] = []
        h.on_complete.append(lambda key, _s: read_again.append(key))  # (told under the core's lock)
        for sid in ids[1:3]:  # let go: the same answers, read whole again for the page
            assert c.get(f"/api/sessions/{sid}").json() == api.session_detail(cold, sid)
            assert c.get(f"/api/sessions/{sid}/events").json() == api.events(cold, sid)
        assert {keys[1], keys[2]} <= set(read_again)  # (whether still held now is the let-go's pace)
        assert _rows(c.get("/api/sessions").json()) == _rows(as_json(api.sessions(_cold(home))))
