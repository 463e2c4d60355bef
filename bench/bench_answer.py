"""Answering hosted agents: how fast a request reaches the card's buttons, how fast a
click reaches the agent's stdin, and how many pending requests one server holds.

    python bench/bench_answer.py [--calls 20] [--runs 50]

1. The real Claude Code CLI (npm 2.1.332, installed as the tests install it) hosted by
   `huddle host`, against the scripted model server on 127.0.0.1, asks for `--calls`
   Bash calls in a row. For each: from the host's `ask` entry (its time: the moment the
   agent's request was read) to the card's Allow button in the board in Chromium (a
   MutationObserver's clock in the page), and from the click to the `stdin` entry the
   host writes just before the control_response goes to the agent's stdin.
2. `--runs` hosted runs at once, each with one permission pending (a stand-in speaking
   Claude's control protocol, so 50 runs fit on a laptop: the CLI itself is ~200 MB a
   process): how many the one server's board holds as answerable, how long until all
   show, and the time to answer each through POST /api/sessions/{id}/answer.

The machine is shared: figures are medians (and p90) of noisy samples.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import httpx  # noqa: E402

import agent_clis as ac  # noqa: E402
import hosting  # noqa: E402
from fake_models import FakeModels  # noqa: E402
from huddle.core import Huddle  # noqa: E402
from huddle.server import ServerThread  # noqa: E402
from huddle.sources import Settings  # noqa: E402

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}
STAND_IN = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "user":
        print(json.dumps({"type": "control_request", "request_id": "r1", "request": {"subtype": "can_use_tool",
              "tool_name": "Bash", "input": {"command": "make", "description": "build"}, "tool_use_id": "t1"}}), flush=True)
    elif m.get("type") == "control_response":
        print(json.dumps({"type": "result", "subtype": "success", "result": "ok"}), flush=True)
"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def say(name: str, xs: list[float]) -> None:
    print(f"{name}: median {statistics.median(xs) * 1000:.0f} ms, p90 {pct(xs, 0.9) * 1000:.0f} ms (n={len(xs)})")


def latencies(tmp: Path, calls: int) -> None:
    from playwright.sync_api import sync_playwright

    script = {
        "bench": [
            ("tool", "Bash", {"command": f"echo {i} > step{i}.txt", "description": f"step {i}"}) for i in range(calls)
        ]
    }
    with FakeModels(script) as fm:
        env = ac.claude_env(tmp, fm.url)
        hh = tmp / "hh"
        d, _ = ac.start_run(hh, "bench", ac.claude_argv(), env, tmp / "proj", prompt="[[scn:bench]] go")
        h = Huddle(Settings(folders={}, huddle_home=str(hh)))
        h.refresh()
        to_buttons, to_stdin = [], []
        with ServerThread(h, watch_options=FAST) as srv, sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
            page = b.new_page()
            page.goto(srv.url)
            page.evaluate(
                """() => { window.seen = {}; new MutationObserver(() => {
                    for (const a of document.querySelectorAll('.ask[data-request] button[data-act="allow"]')) {
                        const r = a.closest('.ask').dataset.request; if (!(r in window.seen)) window.seen[r] = Date.now() / 1000; }
                  }).observe(document.body, {subtree: true, childList: true}); }"""
            )
            for _ in range(calls):
                done = {e["request"] for e in ac.log_entries(d) if e["kind"] == "answer"}
                ask = hosting.wait_until(
                    lambda done=done: next(
                        (
                            e
                            for e in ac.log_entries(d)
                            if e["kind"] == "ask" and e["type"] == "permission" and e["request"] not in done
                        ),
                        None,
                    ),
                    "the next ask",
                    120,
                )
                req = ask["request"]
                button = page.locator(f'.ask[data-request="{req}"] button[data-act="allow"]')
                button.wait_for(timeout=60_000)
                shown = page.evaluate(f"window.seen['{req}']")
                to_buttons.append(shown - ask["t"])
                clicked = page.evaluate("Date.now() / 1000")
                button.click()
                out = ac.wait_entry(d, kind="answer", request=req)
                stdin = hosting.wait_until(
                    lambda out=out: next(
                        (e for e in ac.log_entries(d) if e["seq"] > out["seq"] and e["kind"] == "stdin"), None
                    ),
                    "the answer on the agent's stdin",
                )
                to_stdin.append(stdin["t"] - clicked)
            b.close()
        ac.huddle_cli("stop", str(d))
    say("agent's request -> the card's Allow button", to_buttons)
    say("click -> the agent's stdin", to_stdin)


def many(tmp: Path, runs: int) -> None:
    hh = tmp / "hh-many"
    stand_in = tmp / "stand_in.py"
    stand_in.write_text(STAND_IN)
    env = {**os.environ, "HUDDLE_HOME": str(hh)}
    started = time.time()
    dirs = []
    for i in range(runs):
        d, _ = ac.start_run(
            hh, f"run{i:02d}", [sys.executable, str(stand_in)], env, tmp / "proj", prompt="go", protocol="claude"
        )
        dirs.append(d)
    for d in dirs:
        ac.wait_entry(d, kind="ask", type="permission")
    h = Huddle(Settings(folders={}, huddle_home=str(hh)))
    h.refresh()
    with ServerThread(h, watch_options=FAST) as srv:
        t0 = time.time()

        def pending():
            rows = httpx.get(f"{srv.url}api/sessions").json()["sessions"]
            return sum(len((r.get("answer") or {}).get("pending") or []) for r in rows if r["source"] == "hosted")

        held = hosting.wait_until(lambda: pending() >= runs and pending(), "every run's request", 120)
        shown = time.time() - t0
        token = httpx.get(f"{srv.url}api/info").json()["answer_token"]
        headers = {"content-type": "application/json", "origin": srv.url.rstrip("/"), "x-huddle-token": token}
        took = []
        for d in dirs:
            req = next(e for e in ac.log_entries(d) if e["kind"] == "ask" and e["type"] == "permission")["request"]
            a = time.time()
            r = httpx.post(
                f"{srv.url}api/sessions/{d.name}/answer", headers=headers, json={"request": req, "choice": "allow"}
            )
            took.append(time.time() - a)
            assert r.status_code == 200, r.text
        rss = int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) // 1024
    for d in dirs:
        ac.huddle_cli("stop", str(d))
    print(
        f"{runs} hosted runs: one server holds {held} pending requests, all on its board {shown:.2f} s after its start "
        f"(runs started in {t0 - started:.1f} s); this process's RSS {rss} MB"
    )
    say("POST /api/sessions/{id}/answer, each", took)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        os.environ.setdefault("HUDDLE_HOME", str(tmp / "hh"))
        latencies(tmp, args.calls)
        many(tmp, args.runs)
        hosting.cleanup()


if __name__ == "__main__":
    main()
