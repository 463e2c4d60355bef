"""Attention within a second, on every surface: a live signal changes (a real process's
Claude registry file flips, a Codex thread lock is taken and released by another
process, a Vibe session lock likewise), and GET /api/sessions, the SSE stream and the
board in Chromium all show it soon after the change: within WITHIN (live_agents), a
deadline, not a measure; bench/bench_surfaces.py measures the second.

The watcher's safety nets (the stat poll, the full pass) are set far beyond the test's
deadline, so what is seen here came the fast way: the change itself, or the row's own
schedule. Waits are bounded by the deadline, never fixed sleeps."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time

import pytest
from playwright.sync_api import expect

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings
from live_agents import WITHIN, ClaudeProcess, LockHolder, Stream, api_row, claude_live, wait_until
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)

pytestmark = pytest.mark.browser

SLOW_NETS = {"poll_watched": 600.0, "full_every": 600.0}


BOUND = 15.0  # seconds a check may wait before it fails; the figure asserted is the one measured

ARM = """([k, s]) => {
  window.__seen = window.__seen || {};
  const name = k + ' ' + s;
  delete window.__seen[name];
  const look = () => {
    const tr = document.querySelector(`tr[data-key="${k}"]`);
    if (tr && tr.classList.contains('r-' + s) && !(name in window.__seen)) {
      window.__seen[name] = performance.timeOrigin + performance.now();
      return true;
    }
    return false;
  };
  const obs = new MutationObserver(() => { if (look()) obs.disconnect(); });
  obs.observe(document.getElementById('rows'), {childList: true, subtree: true, attributes: true});
}"""


def arm(pg, key: str, state: str) -> None:
    """Before a change: the page notes the moment the row `key` is drawn in `state`."""
    pg.evaluate(ARM, [key, state])


def seen_everywhere(
    srv, stream: Stream, pg, key: str, state: str, t0: float, late: float = 0.0, armed: float | None = None
) -> dict:
    """The row `key` in `state` on the API, the stream and the painted board (armed with
    `arm` before the change at t0), each within WITHIN of the change (+ `late`: a change no
    file tells of waits for the row's next look). Each surface is timed on its own, so a
    slow check does not eat another's second."""
    budget = WITHIN + late
    row = wait_until(lambda: (r := api_row(srv.url, key)) and r["state"] == state and r, t0 + BOUND, f"API {state}")
    api_at = time.time()
    sse_at, _ = stream.row(key, lambda r: r["state"] == state, t0 if armed is None else armed, t0 + BOUND)
    name = f"{key} {state}"
    pg.wait_for_function("(n) => window.__seen && n in window.__seen", arg=name, timeout=BOUND * 1000)
    painted_at = pg.evaluate("(n) => window.__seen[n]", name) / 1000
    took = {"api": api_at - t0, "stream": sse_at - t0, "painted": painted_at - t0}
    assert all(v <= budget for v in took.values()), f"{state} took longer than {budget:.1f} s: {took}"
    return row


@pytest.fixture
def served():
    made = []

    def start(settings: Settings, pg, empty: bool = False):
        h = Huddle(settings)
        srv = ServerThread(h, watch_options=SLOW_NETS).start()
        made.append(srv)
        assert srv.state.watcher.watching or wait_until(lambda: srv.state.watcher.watching, time.time() + 120, "watch")
        stream = Stream(srv.url)
        made.append(stream)
        pg.goto(srv.url)
        pg.wait_for_selector("#rows" if empty else "#rows tr", state="attached")
        return srv, stream

    yield start
    for m in reversed(made):
        (m.close if isinstance(m, Stream) else m.stop)()


@pytest.fixture
def claude_working(tmp_path, page, served):  # noqa: F811
    """A live Claude session (a real process, its registry file saying busy) on a served
    board, shown working: (server, stream, key, the process)."""
    settings, sid, config = claude_live(tmp_path)
    claude = ClaudeProcess(config, sid, "busy")
    try:
        srv, stream = served(settings, page)
        key = f"claude:{sid}"
        wait_until(lambda: (r := api_row(srv.url, key)) and r["state"] == "working", time.time() + 120, "working")
        yield srv, stream, key, claude
    finally:
        claude.stop()


def test_claude_registry_busy_waiting_busy(page, claude_working):  # noqa: F811
    srv, stream, key, claude = claude_working
    arm(page, key, "needs_you")
    t0 = time.time()
    claude.set("waiting", "permission prompt")
    row = seen_everywhere(srv, stream, page, key, "needs_you", t0)
    assert "permission prompt" in row["waiting_for"] and "Bash" in row["waiting_for"]
    assert page.locator(f'tr[data-key="{key}"] .why').inner_text().startswith("permission prompt")

    arm(page, key, "working")
    t0 = time.time()
    claude.set("busy")
    seen_everywhere(srv, stream, page, key, "working", t0)


SESSION_ARM = """(s) => {
  window.__seen = window.__seen || {};
  delete window.__seen[s];
  const look = () => {
    const pill = document.getElementById('s-state');
    if (pill && pill.classList.contains('s-' + s) && !(s in window.__seen)) {
      window.__seen[s] = performance.timeOrigin + performance.now();
      return true;
    }
    return false;
  };
  const obs = new MutationObserver(() => { if (look()) obs.disconnect(); });
  obs.observe(document.body, {childList: true, subtree: true, attributes: true});
}"""


def test_the_session_page_agrees_within_a_second(page, claude_working):  # noqa: F811
    """The session's own page (its state pill and the banner saying why), timed as the
    board is: from the registry's flip to the page drawn."""
    srv, _stream, key, claude = claude_working
    sp = page.context.new_page()
    sid = key.split(":", 1)[1]
    sp.goto(f"{srv.url}session/{sid}")
    sp.wait_for_selector("#s-state.s-working")
    for status, state in (("waiting", "needs_you"), ("busy", "working")):
        sp.evaluate(SESSION_ARM, state)
        t0 = time.time()
        claude.set(status, "permission prompt" if status == "waiting" else None)
        sp.wait_for_function("(s) => window.__seen && s in window.__seen", arg=state, timeout=BOUND * 1000)
        took = sp.evaluate("(s) => window.__seen[s]", state) / 1000 - t0
        assert took <= WITHIN, f"session page {state} after {took:.2f} s"
        if state == "needs_you":
            assert sp.locator("#s-waiting").inner_text().startswith("Needs you: permission prompt")
    assert sp.locator("#s-waiting").is_hidden()
    sp.close()


RECORD_NOTIFICATIONS = """(() => {
  // the page's real Notification, each one noted as it is made and closed
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  const now = () => performance.timeOrigin + performance.now();
  class Noted extends Real {
    constructor(title, opts) {
      super(title, opts);
      this.__i = window.__notes.push({ title, body: opts && opts.body, at: now(), closed: null }) - 1;
    }
    close() { window.__notes[this.__i].closed = now(); super.close(); }
  }
  Object.defineProperty(Noted, "permission", { get: () => Real.permission });
  Noted.requestPermission = (...a) => Real.requestPermission(...a);
  window.Notification = Noted;
})()"""


def test_browser_notifications_one_per_wait_closed_when_answered(page, claude_working):  # noqa: F811
    """The board's "Notify me": a browser notification when the row rises into needs you
    (within a second of the flip, as the row), the same wait never twice, closed when it
    is answered."""
    srv, _stream, key, claude = claude_working
    page.context.grant_permissions(["notifications"], origin=srv.url.rstrip("/"))
    page.add_init_script(RECORD_NOTIFICATIONS)
    page.reload()
    page.wait_for_selector(f'tr[data-key="{key}"].r-working')
    page.click("#notify")
    expect(page.locator("#notify")).to_have_text("Notifying")
    t0 = time.time()
    claude.set("waiting", "permission prompt")
    page.wait_for_function("() => window.__notes.length >= 1", timeout=BOUND * 1000)
    claude.set("waiting", "permission prompt")  # the same wait written again: no second one (counted at the end)
    (note,) = page.evaluate("() => window.__notes")
    assert note["at"] / 1000 - t0 <= WITHIN
    assert note["title"].endswith("needs you") and note["body"].startswith("permission prompt: Bash")
    t0 = time.time()
    claude.set("busy")
    page.wait_for_function("() => window.__notes[0].closed !== null", timeout=BOUND * 1000)
    assert page.evaluate("() => window.__notes[0].closed") / 1000 - t0 <= WITHIN
    assert page.evaluate("() => window.__notes.length") == 1


def test_claude_process_death_is_seen_without_a_file_change(page, claude_working):  # noqa: F811
    """SIGKILL leaves the registry file as it was: the row's own schedule sees the pid go."""
    srv, stream, key, claude = claude_working
    arm(page, key, "ended")
    t0 = time.time()
    claude.stop()
    # the schedule looks at a live row every second: up to one period, then the deadline
    seen_everywhere(srv, stream, page, key, "ended", t0, late=srv.state.watcher.hot_every)


def codex_home(tmp_path, sample: str = "06-your-turn-tui"):
    snap = SAMPLES / "codex-live" / sample / "codex_home"
    home = tmp_path / "codex"
    shutil.copytree(snap / "sessions", home / "sessions")
    (home / "thread-writer-locks").mkdir()
    truth = json.loads((snap.parent / "truth.json").read_text())[0]
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": str(home), "vibe": none}, huddle_home=str(tmp_path / "hh"))
    return settings, truth["thread_id"], home


def taken_then_released(srv, stream: Stream, pg, key: str, take, held_state: str) -> None:
    """Ended with no process on it; another process takes the lock (`take()`): `held_state`
    everywhere within a second, with that process's pid; it lets go: ended again."""
    assert api_row(srv.url, key)["state"] == "ended"
    arm(pg, key, held_state)
    armed = time.time()
    holder = take()
    try:
        row = seen_everywhere(srv, stream, pg, key, held_state, holder.taken_at, armed=armed)
        assert row["pid"] == holder.pid
        arm(pg, key, "ended")
        t0 = time.time()
        holder.release()
        seen_everywhere(srv, stream, pg, key, "ended", t0)
    finally:
        holder.kill()


def test_codex_thread_lock_taken_and_released(tmp_path, page, served):  # noqa: F811
    settings, thread, home = codex_home(tmp_path)
    srv, stream = served(settings, page)
    take = lambda: LockHolder(home / "thread-writer-locks" / f"{thread}.lock")  # noqa: E731
    # loaded by a live process; its turn ended long ago (the sample's time): idle, not ended
    taken_then_released(srv, stream, page, f"codex:{thread}", take, "idle")


def test_a_codex_command_starting_is_seen_from_the_process_table(tmp_path, page, served):  # noqa: F811
    """codex-live 03: an escalated command waits for approval while a live process holds
    the thread. Approved, the command runs as a child of that process: no file moves,
    the process table tells, and the row's own schedule sees it."""
    settings, thread, home = codex_home(tmp_path, "03-needs-you-approval-tui")
    srv, stream = served(settings, page)
    key = f"codex:{thread}"
    arm(page, key, "needs_you")
    armed = time.time()
    holder = LockHolder(home / "thread-writer-locks" / f"{thread}.lock")
    try:
        row = seen_everywhere(srv, stream, page, key, "needs_you", holder.taken_at, armed=armed)
        cmd = row["waiting_for"].removeprefix("approve command: ")
        assert row["waiting_for"].startswith("approve command: ") and "echo approved-live" in cmd
        arm(page, key, "working")
        _pid, started = holder.run(cmd)
        # up to one look at the row and one reading of the process table (each once a second)
        seen_everywhere(srv, stream, page, key, "working", started, late=srv.state.watcher.hot_every + 1.0)
    finally:
        holder.kill()


def vibe_home(tmp_path, sample: str = "3.0.3-unified-approval-waiting"):
    home = tmp_path / "vibe"
    shutil.copytree(SAMPLES / "vibe" / sample / "logs", home / "logs")
    active = home / "logs" / "session" / "active"
    (sid,) = {p.name.split(".")[0] for p in active.glob("*.lock.json")}
    for p in active.glob(f"{sid}.lock*"):
        p.unlink()  # the recorded process is long gone: this test plays a live one
    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": none, "vibe": str(home)}, huddle_home=str(tmp_path / "hh"))
    return settings, sid, active


def test_vibe_session_lock_taken_and_released(tmp_path, page, served):  # noqa: F811
    settings, sid, active = vibe_home(tmp_path)
    srv, stream = served(settings, page)
    take = lambda: LockHolder(active / f"{sid}.lock", active / f"{sid}.lock.json", sid)  # noqa: E731
    taken_then_released(srv, stream, page, f"vibe:{sid}", take, "needs_you")  # the approval it stopped on


def test_the_demo_shows_its_needs_you_moment_on_the_board(page):  # noqa: F811
    """38 s into the story the lead asks permission to push (a live registry file for this
    very process); 10 s later it is allowed. Played 4x faster here, by the test once the
    page is watching, and held at the question until the page has shown it: on a loaded
    machine the page may come up late, and a moment of 2.5 s must not pass unseen."""
    from huddle.demo import Demo

    d = Demo(speed=4.0)
    try:
        with ServerThread(d.huddle(), watch_options=SLOW_NETS) as srv:
            assert wait_until(lambda: srv.state.watcher.watching, time.time() + 120, "watch")
            page.goto(srv.url)
            page.wait_for_selector("#rows", state="attached")
            player = threading.Thread(target=d.play, kwargs={"until": "permission"}, daemon=True)
            player.start()
            key = f"claude:{d.session_id}"
            row = page.locator(f'tr[data-key="{key}"]')
            row.wait_for(timeout=30_000)
            page.wait_for_selector(f'tr[data-key="{key}"].r-needs_you', timeout=30_000)
            player.join(timeout=30)
            assert d.step == "permission"
            assert "git push" in row.locator(".why").inner_text()
            assert page.title().startswith("(1) huddle")
            allowed = {name: act for _at, name, act in d.script()}["allowed"]
            allowed(time.time())
            page.wait_for_selector(f'tr[data-key="{key}"]:not(.r-needs_you)', timeout=10_000)
    finally:
        d.stop()


def test_a_hosted_run_is_seen_from_its_log(tmp_path, page, served):  # noqa: F811
    """`huddle run`'s host writes each exchange and its own exit to a numbered log: the
    turn's end and the run's end reach every surface within a second of the log line."""
    from hosting import HUDDLE, PY, REPLAY, entries, huddle, start_host

    none = str(tmp_path / "none")
    settings = Settings(folders={"claude": none, "codex": none, "vibe": none}, huddle_home=str(tmp_path / "hh"))
    runs = tmp_path / "hh" / "runs"
    runs.mkdir(parents=True)
    srv, stream = served(settings, page, empty=True)
    d = runs / "talk"
    late = SAMPLES / "claude-stream" / "13-late-message-delta" / "hang.jsonl"
    host = start_host(d, PY, REPLAY, str(late), "--wait-stdin", "--hold", "stdin")
    try:
        key = "hosted:talk"
        arm(page, key, "your_turn")
        prompt = {"type": "user", "message": {"role": "user", "content": "Say hi, then run echo hi"}}
        assert huddle("send", str(d), json.dumps(prompt)).returncode == 0
        wait_until(
            lambda: any(e.get("json", {}).get("type") == "result" for e in entries(d)), time.time() + 30, "result"
        )
        logged = next(e for e in entries(d) if e.get("json", {}).get("type") == "result")
        # the host stamps each line as it logs it: the figure runs from that stamp. A turn's
        # end read from the transcript is held by the debouncer (a flicker guard) for its
        # hold before it shows: that much more; the host's exit is its own word, at once
        seen_everywhere(srv, stream, page, key, "your_turn", logged["t"], late=srv.state.watcher.debounce.hold)
        arm(page, key, "ended")
        stopper = subprocess.Popen([*HUDDLE, "stop", str(d)])  # its own start-up is not the figure
        exited = wait_until(lambda: [e for e in entries(d) if e["kind"] == "exited"], time.time() + 120, "exited")
        seen_everywhere(srv, stream, page, key, "ended", exited[0]["t"])
        assert stopper.wait(30) == 0
    finally:
        if host.poll() is None:
            host.kill()
        host.wait()
