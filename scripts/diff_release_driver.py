"""One revision's answers over one home, for `scripts/diff-release`.

Run by the python of the revision's own venv, with the home in the environment
(CLAUDE_CONFIG_DIR, CODEX_HOME, VIBE_HOME, HOME, a fresh HUDDLE_HOME). Standard
library only, and only huddle's public contracts: the `huddle` click group (its
`--json` commands, run in this process) and the web app's read-only routes over real
HTTP (`huddle serve` in a process of its own). Prints one JSON
object: {route: {instance: answer}}.

    python diff_release_driver.py OUT.json [EXTRA_IDS.json]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HUDDLE = os.path.join(os.path.dirname(sys.executable), "huddle")
CLI_SESSIONS = 3  # the per-session --json twins: for this many sessions of each home (the routes do all)
CONTENT_REFS = 12  # read-back spans per session
USAGE_GROUPS = ("day", "session", "project", "model", "agent")
SEARCH_WORDS = ("the", "error", "README")  # words most sample sessions hold
AT = "2099-01-01T00:00:00Z"  # states as of a time long after every sample: the same for both runs


def cli(*args: str) -> object:
    """`huddle ARGS` as the console script runs it, in this process (click's runner):
    the same code and output, without a process start per command."""
    from click.testing import CliRunner

    from huddle.cli import main as group

    r = CliRunner().invoke(group, list(args), catch_exceptions=True)
    out = getattr(r, "stdout", r.output)
    if r.exit_code != 0:
        why = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
        return {"exit": r.exit_code, "error": repr(why) if why else (r.output.strip().splitlines() or [""])[-1]}
    try:
        return json.loads(out)
    except ValueError:
        return {"not_json": out[:200]}


class Server:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [HUDDLE, "serve", "--host", "127.0.0.1", "--port", "0", "--no-open"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.base = ""
        deadline = time.monotonic() + 60
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
            if m:
                self.base = m.group(1)
                break
        if not self.base:
            self.close()
            raise RuntimeError("huddle serve did not start")
        # a server from the cache answers before its first read is done (rows as last
        # built): the answers compared are those after it
        while time.monotonic() < deadline:
            info = self.get("/api/info")
            if not (isinstance(info, dict) and info.get("reading")):
                break
            time.sleep(0.05)

    def get(self, path: str) -> object:
        for _ in range(50):
            try:
                with urllib.request.urlopen(self.base + path, timeout=60) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as exc:
                try:
                    body = json.loads(exc.read())
                except ValueError:
                    body = None
                return {"status": exc.code, "body": body}
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        return {"status": "unreachable"}

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def q(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def searched(srv: Server, word: str) -> object:
    """A search once the server's index is built (it builds in the background)."""
    deadline = time.monotonic() + 120
    while True:
        answer = srv.get(f"/api/search?q={q(word)}&limit=200")
        index = answer.get("index") if isinstance(answer, dict) else None
        if not isinstance(index, dict) or not index.get("building") or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def events_all(srv: Server, sid: str) -> list:
    out: list = []
    after = -1
    for _ in range(1000):
        page = srv.get(f"/api/sessions/{q(sid)}/events?after={after}&limit=5000")
        if not isinstance(page, dict) or "events" not in page:
            return [page]
        out.extend(page["events"])
        if not page["events"] or page.get("next_after", after) == after:
            break
        after = page["next_after"]
    return out


def transcript_all(srv: Server, sid: str, agent: str) -> list:
    pages = []
    path = f"/api/sessions/{q(sid)}/transcript?agent={q(agent)}&limit=500"
    page = srv.get(path)
    pages.append(page)
    while isinstance(page, dict) and page.get("has_more") and page.get("first_line") is not None:
        page = srv.get(f"{path}&before={page['first_line']}")
        pages.append(page)
        if len(pages) > 200:
            break
    return pages


def main() -> None:
    out_path = sys.argv[1]
    extra = None
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            extra = json.load(f)
    res: dict[str, dict[str, object]] = {}

    def put(route: str, inst: str, answer: object) -> None:
        res.setdefault(route, {})[inst] = answer

    srv = Server()
    try:
        info = srv.get("/api/info")
        if isinstance(info, dict) and info.get("demo"):
            put("GET /api/info", "-", {"demo": True, "note": "no source of this revision reads this home"})
            with open(out_path, "w") as f:
                json.dump(res, f)
            return
        board: object = None
        for _ in range(20):  # the watcher's first pass: ask until two answers agree
            again = srv.get("/api/sessions")
            if again == board:
                break
            board = again
            time.sleep(0.3)
        ids = [s["id"] for s in board.get("sessions", [])] if isinstance(board, dict) else []
        if extra is not None:
            ids = [i for i in extra if i not in ids]
        else:
            put("GET /api/info", "-", {k: v for k, v in (info or {}).items() if k != "watching"})
            put("GET /api/sessions", "-", board)
            put(f"GET /api/sessions?at={AT}", "-", srv.get(f"/api/sessions?at={AT}"))
            for by in USAGE_GROUPS:
                put(f"GET /api/usage?by={by}", "-", srv.get(f"/api/usage?by={by}"))
            put("GET /api/doctor", "-", srv.get("/api/doctor"))
            for word in SEARCH_WORDS:
                put("GET /api/search?q=", word, searched(srv, word))
        for sid in ids:
            put("GET /api/sessions/{id}", sid, srv.get(f"/api/sessions/{q(sid)}"))
            evs = events_all(srv, sid)
            put("GET /api/sessions/{id}/events", sid, evs)
            tr = srv.get(f"/api/sessions/{q(sid)}/transcripts")
            put("GET /api/sessions/{id}/transcripts", sid, tr)
            agents = [a["id"] for a in tr.get("agents", [])] if isinstance(tr, dict) else []
            for a in agents:
                put("GET /api/sessions/{id}/transcript?agent=", f"{sid} {a}", transcript_all(srv, sid, a))
            put("GET /api/sessions/{id}/export?format=json", sid, srv.get(f"/api/sessions/{q(sid)}/export?format=json"))
            refs = [e["ref"] for e in evs if isinstance(e, dict) and e.get("ref")]
            step = max(1, len(refs) // CONTENT_REFS)
            for ref in refs[::step][:CONTENT_REFS]:
                put(
                    "GET /api/sessions/{id}/content/{ref}",
                    f"{sid} {ref}",
                    srv.get(f"/api/sessions/{q(sid)}/content/{q(ref)}"),
                )
    finally:
        srv.close()
    if extra is not None:  # only the sessions the other revision listed and this one did not
        with open(out_path, "w") as f:
            json.dump(res, f)
        return
    put("huddle status --json", "-", cli("status", "--json"))
    put(f"huddle status --json --at {AT}", "-", cli("status", "--json", "--at", AT))
    for by in USAGE_GROUPS:
        put(f"huddle usage --json --by {by}", "-", cli("usage", "--json", "--by", by))
    put("huddle doctor --json", "-", cli("doctor", "--json"))  # (after status: the sessions asleep)
    for word in SEARCH_WORDS:
        put("huddle search WORD --json", word, cli("search", word, "--json", "--limit", "200"))
    for sid in sorted(ids)[:CLI_SESSIONS]:
        put("huddle export ID --format json", sid, cli("export", sid, "--format", "json"))
        put("huddle show ID --json", sid, cli("show", sid, "--json"))
        put("huddle events ID --json", sid, cli("events", sid, "--json", "--limit", "5000"))
        put("huddle transcripts ID --json", sid, cli("transcripts", sid, "--json"))
        put("huddle transcript ID --json", sid, cli("transcript", sid, "--json", "--limit", "500"))
    with open(out_path, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
