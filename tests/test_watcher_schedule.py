"""The watcher's schedule: what changes with no file touched is seen on the row's own
time, not at the next full pass; a live signal's move is a change of its session."""

from __future__ import annotations

import threading
import time

import web_corpus
from huddle.core import Huddle
from huddle.live.watcher import Watcher
from huddle.model.attention import State
from huddle.model.attention.debounce import Debouncer
from live_agents import ClaudeProcess, claude_live, wait_until


def test_your_turn_turns_idle_on_time_without_a_full_pass(tmp_path):
    settings, sid, main = web_corpus.one_session(tmp_path)
    h = Huddle(settings)
    h.idle_after = 2.0  # type: ignore[attr-defined]  (a short idle threshold, as a setting would give)
    web_corpus.append_say(main, "all done")
    published: list = []
    lock = threading.Lock()

    def publish(msgs):
        with lock:
            published.extend(msgs)

    w = Watcher(h, publish, poll_watched=600.0, full_every=600.0)
    t_said = time.time()
    w.start()
    try:
        key = f"claude:{sid}"
        assert w.rows[key].state == "your_turn"
        full_at = w._last_full
        wait_until(lambda: w.rows[key].state == "idle", t_said + 2.0 + 1.5, "idle on time")
        assert w._last_full == full_at, "seen by the row's schedule, not a full pass"
        with lock:
            assert any(k == "board" and any(r.state == "idle" for r in d["sessions"]) for k, d, _ in published)
    finally:
        w.stop()


def test_a_registry_flip_is_a_change_of_its_session(tmp_path):
    settings, sid, config = claude_live(tmp_path)
    claude = ClaudeProcess(config, sid, "busy")
    try:
        h = Huddle(settings)
        h.refresh()
        assert h.refresh() == set()  # nothing moved
        claude.set("waiting", "permission prompt")
        assert h.refresh() == {f"claude:{sid}"}  # no transcript grew; the registry did
        assert h.refresh() == set()
    finally:
        claude.stop()


def test_debounce_shows_a_move_of_the_process_word_at_once():
    d = Debouncer(hold=0.5)
    w, n = State("working"), State("needs_you")
    assert d("k", w, now=0.0, signal=(True, "busy", None)).state == "working"
    # inferred from the transcript alone (same signal): held
    assert d("k", n, now=0.1, signal=(True, "busy", None)).state == "working"
    # the process itself says it waits: shown now
    assert d("k", n, now=0.2, signal=(True, "waiting", "permission prompt")).state == "needs_you"
    assert d("k", w, now=0.3, signal=(True, "busy", None)).state == "working"


def test_status_watch_shows_a_registry_flip_at_once(tmp_path):
    import os
    import queue
    import subprocess
    import sys

    from live_agents import WITHIN

    settings, sid, config = claude_live(tmp_path)
    claude = ClaudeProcess(config, sid, "busy")
    env = {**os.environ, **settings.env(), "COLUMNS": "200"}
    p = subprocess.Popen(
        [sys.executable, "-m", "huddle", "status", "--watch"], stdout=subprocess.PIPE, env=env, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in p.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()

    seen: list[str] = []

    def until(text: str, deadline: float) -> str:
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.time()))
            except queue.Empty:
                raise AssertionError(f"status --watch: no {text!r} within the deadline: {seen}") from None
            seen.append(line)
            if text in line:
                return line

    try:
        until("working", time.time() + 60)
        t0 = time.time()
        claude.set("waiting", "permission prompt")
        assert "permission prompt" in until("needs you", t0 + WITHIN)
        t0 = time.time()
        claude.set("busy")
        until("working", t0 + WITHIN)
    finally:
        p.terminate()
        assert p.wait(timeout=20) == 0
        reader.join(timeout=20)  # it reads to the end of the pipe, then the pipe is closed
        p.stdout.close()  # type: ignore[union-attr]
        claude.stop()
