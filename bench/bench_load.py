"""A loaded server in figures: N clients for S seconds against a real `huddle serve`
while a writer appends to a Claude transcript it watches.

    python bench/bench_load.py [--src OLD/src] [--clients 200] [--seconds 60] [--rate 10]

Half the clients hold an event stream of the session written to (GET
/api/stream?session=ID, Server-Sent Events), the other half poll the board
(GET /api/sessions) once a second. The writer appends `--rate` replies a second, each a
new response with its own words. At the end each stream's `events` messages are
compared with the session's timeline (GET /api/sessions/ID/events): events lost (in the
timeline after the stream said hello, never received) and duplicated (received twice),
summed over the streams; a `reset` message (too far behind) is counted apart. The
server's RSS is read from /proc before the clients connect, after they have, and at the
end. `--src` runs an older tree's huddle (`git archive REV src | tar -x -C DIR`), so the
same harness gives the before and the after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "tests" / "fixtures" / "samples" / "claude-history" / "2.1.105" / "01-tools" / "config"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def reply(template: dict, n: int) -> bytes:
    rec = dict(template)
    rec["uuid"] = str(uuid.uuid4())
    rec["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    m = dict(rec["message"])
    m["id"] = f"msg_load_{n}"
    m["content"] = [{"type": "text", "text": f"load line {n}"}]
    m["stop_reason"] = None
    rec["message"] = m
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def start(src: str | None, work: Path) -> tuple[subprocess.Popen, str, Path]:
    config = work / "claude"
    shutil.copytree(SAMPLE, config)
    (main,) = sorted(config.glob("projects/*/*.jsonl"))
    none = str(work / "none")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "HUDDLE"))}
    env.update(HOME=str(work / "home"), HUDDLE_HOME=str(work / "hh"), CLAUDE_CONFIG_DIR=str(config))
    env.update(CODEX_HOME=none, VIBE_HOME=none, GEMINI_DIR=none, HUDDLE_SOURCES="claude")
    if src:
        env["PYTHONPATH"] = src
    cmd = [sys.executable, "-m", "huddle", "serve", "--host", "127.0.0.1", "--port", "0", "--no-open"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert p.stdout is not None
    for line in p.stdout:
        if " at " in line and "serving" in line:
            return p, line.split(" at ", 1)[1].strip().split("?")[0], main
    raise SystemExit("the server did not start")


async def stream(client: httpx.AsyncClient, url: str, sid: str, got: dict, stop: asyncio.Event) -> None:
    seqs: list[int] = []
    got.setdefault("streams", []).append(seqs)
    try:
        async with client.stream("GET", f"{url}api/stream", params={"session": sid}, timeout=None) as r:
            kind = ""
            async for line in r.aiter_lines():
                if stop.is_set():
                    return
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    if kind == "events":
                        seqs.extend(e["seq"] for e in json.loads(line[6:])["events"])
                    elif kind == "reset":
                        got["resets"] = got.get("resets", 0) + 1
                    elif kind == "hello":
                        got.setdefault("hello", []).append(time.monotonic())
    except (httpx.HTTPError, asyncio.CancelledError):
        if not stop.is_set():  # (the end cancels every stream: not a drop)
            got["dropped"] = got.get("dropped", 0) + 1


async def poll(client: httpx.AsyncClient, url: str, got: dict, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            r = await client.get(f"{url}api/sessions", timeout=30)
            got["polls"] = got.get("polls", 0) + 1
            if r.status_code != 200:
                got["poll_errors"] = got.get("poll_errors", 0) + 1
        except httpx.HTTPError:
            got["poll_errors"] = got.get("poll_errors", 0) + 1
        await asyncio.sleep(1.0)


async def timeline(client: httpx.AsyncClient, url: str, sid: str) -> list[dict]:
    out: list[dict] = []
    after: int | None = None
    while True:
        params = {"limit": 500} if after is None else {"after": after, "limit": 500}
        resp = await client.get(f"{url}api/sessions/{sid}/events", params=params)
        r = resp.json()
        if "events" not in r:
            raise SystemExit(f"events: {resp.status_code} {r}")
        out += r["events"]
        after = r["next_after"]
        if not r["has_more"]:
            return out


async def run(a: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="huddle-load-"))
    p, url, main = start(a.src, work)
    try:
        limits = httpx.Limits(max_connections=a.clients + 10, max_keepalive_connections=a.clients + 10)
        async with httpx.AsyncClient(limits=limits) as client:
            rows: list = []
            deadline = time.monotonic() + 120
            while not rows and time.monotonic() < deadline:  # (its first read runs in the background)
                rows = (await client.get(f"{url}api/sessions", timeout=60)).json()["sessions"]
                await asyncio.sleep(0.2)
            sid = rows[0]["id"]
            start_seq = max((e["seq"] for e in await timeline(client, url, sid)), default=-1)
            rss = {"start": rss_mb(p.pid)}
            got: dict = {}
            stop = asyncio.Event()
            n_stream = a.clients // 2
            tasks = [asyncio.create_task(stream(client, url, sid, got, stop)) for _ in range(n_stream)]
            tasks += [asyncio.create_task(poll(client, url, got, stop)) for _ in range(a.clients - n_stream)]
            while len(got.get("hello", ())) < n_stream:
                await asyncio.sleep(0.05)
            rss["connected"] = rss_mb(p.pid)
            template = next(
                json.loads(line) for line in main.read_bytes().splitlines() if b'"type":"assistant"' in line
            )
            end = time.monotonic() + a.seconds
            n = 0
            with open(main, "ab") as f:
                while time.monotonic() < end:
                    f.write(reply(template, n))
                    f.flush()
                    n += 1
                    await asyncio.sleep(1.0 / a.rate)
            await asyncio.sleep(3.0)  # the last appends reach the streams
            rss["end"] = rss_mb(p.pid)
            stop.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            after = await timeline(client, url, sid)
        want = {e["seq"] for e in after if e["seq"] > start_seq}
        lost = dup = 0
        for seqs in got.get("streams", []):
            lost += len(want - set(seqs))
            dup += len(seqs) - len(set(seqs))
        return {
            "clients": a.clients,
            "seconds": a.seconds,
            "appended": n,
            "events_expected_per_stream": len(want),
            "streams": n_stream,
            "events_lost": lost,
            "events_duplicated": dup,
            "resets": got.get("resets", 0),
            "streams_dropped": got.get("dropped", 0),
            "polls": got.get("polls", 0),
            "poll_errors": got.get("poll_errors", 0),
            "rss_mb": {k: round(v, 1) for k, v in rss.items()},
        }
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", help="an older tree's src/ to run")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=10, help="replies appended per second")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(run(a)), indent=2))


if __name__ == "__main__":
    main()
