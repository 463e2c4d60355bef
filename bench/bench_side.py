"""huddle beside ccusage, AgentsView and claude-code-log, on a real-shaped corpus and a
generated one: one table of paired ratios per corpus.

    python bench/bench_side.py [--corpus real,synthetic] [--copies 23] [--sessions 1000]
                               [--claude-gb 1.1] [--codex-threads 1000] [--codex-mb 550] [--runs 5]
                               [--only usage,status,new,statusline,serve,export,idle,page,parse,tables,board]
                               [--no-cold] [--peers ccusage,agentsview] [--idle 60]

`real` is ../shared/external's real session files cloned with fresh ids (bench/real_corpus.py:
what the synthetic corpus hid, it holds); `synthetic` is claude_corpus.py and codex_corpus.py.
The measures side_paths.py adds (a new session file, export, an idle server, the open page,
the full parse) are described there.

The peers are not dependencies. Install them in a scratch folder outside the repo:

    npm install --prefix /tmp/perf-peers/ccusage ccusage@20.0.24
    python3 -m venv /tmp/perf-peers/av && /tmp/perf-peers/av/bin/pip install agentsview==0.46.1
    python3 -m venv /tmp/perf-peers/ccl && /tmp/perf-peers/ccl/bin/pip install claude-code-log

(looked for there, or in $CCUSAGE and $AGENTSVIEW). huddle runs from this tree's src/, or
from $HUDDLE_SRC (a copy, so the tree can change while a long bench runs). Every tool reads the same folders
(HOME, CLAUDE_CONFIG_DIR, CODEX_HOME and AgentsView's CLAUDE_PROJECTS_DIR and
CODEX_SESSIONS_DIR point into the corpus), TZ=UTC, ccusage with --offline, AgentsView
with telemetry off, on loopback, with its own data folder.

The machine is shared: every measure runs huddle and its peer back to back, in
alternating order, `--runs` times; the table gives the median wall time, the median
CPU time (user + system of the process and its children: the figure load does not
distort) and the median of the per-round ratios. Measures:

  usage cold       `huddle usage --json`, empty home   | `ccusage daily --json --offline` (no cache: always cold)
  usage cold (AV)  the same                             | `agentsview usage daily --json --all --offline`, empty data
  usage warm       huddle, its index there              | agentsview, its database there
  usage append     one line appended to one session before each run, huddle and agentsview alike
  status           `huddle status --json`, cache there  | `agentsview session list --json` (a running daemon)
                   (and with `huddle serve` up, as AgentsView's daemon is: a stale answer asked of it)
  one-shot floor   a Python that imports what a one-shot read loads, reads nothing | the same list
  status line      `huddle statusline`                  | `ccusage statusline --offline`, same stdin
  serve            `huddle serve` to its first /api/sessions (and RSS then) | `agentsview serve` to /api/v1/sessions

Token totals of the three usage reports are compared (input, output, cache read,
cache write) and said equal or not. The corpus is built once under bench/corpus/
(git-ignored); the bench appends to one session file and cuts it back at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
PY = sys.executable
# `huddle` as its console script runs it (`-m huddle` adds runpy's imports, ~20 ms a run)
# What `huddle status --json` imports when it reads what moved (stored.patching), and
# nothing else: the floor under every one-shot path that reads a file.
# (msgspec loaded as the console script loads it, huddle.io.lean, where the version has it)
ONE_SHOT_FLOOR = (
    "try:\n    from huddle.io.lean import lean_msgspec; lean_msgspec()\nexcept ImportError:\n    pass\n"
    "import huddle.oneshot, huddle.stored.patching, huddle.core, huddle.views.board, huddle.views.said\n"
    "from huddle.sources import registry; registry.load_notes()"
)
HUDDLE = [PY, "-c", "import sys; from huddle.entry import main; sys.argv[0] = 'huddle'; sys.exit(main())"]
TOKENS = ("input", "output", "cache_read", "cache_write")


def find(env: str, *candidates: str) -> str | None:
    for c in (os.environ.get(env), *candidates):
        if c and os.path.exists(c):
            return c
    return None


CCUSAGE = find("CCUSAGE", "/tmp/perf-peers/ccusage/node_modules/.bin/ccusage", "/tmp/ccusage/node_modules/.bin/ccusage")
AGENTSVIEW = find(
    "AGENTSVIEW",
    "/tmp/perf-peers/av/lib/python3.11/site-packages/agentsview/bin/agentsview",
    "/tmp/perf-peers/av/bin/agentsview",
)


# -- the corpus ---------------------------------------------------------------------


def build(sessions: int, claude_gb: float, codex_threads: int, codex_mb: int) -> tuple[Path, Path]:
    base = HERE / "corpus" / f"side2-{sessions}-{claude_gb}gb-{codex_threads}-{codex_mb}mb"  # 2: Codex times past
    claude, codex = base / "claude", base / "codex"
    if not (base / "done").exists():
        import claude_corpus
        import codex_corpus

        shutil.rmtree(base, ignore_errors=True)
        t0 = time.perf_counter()
        claude_corpus.write_claude_corpus(
            str(claude), sessions, int(claude_gb * (1 << 30)), seed=1, big_bytes=150 << 20
        )
        if codex_threads:
            codex_corpus.write_codex_corpus(str(codex), codex_threads, codex_mb << 20, seed=1)
        then = time.time() - 3600  # a history: nothing moved in the last hour
        for p in sorted(base.rglob("*"), key=lambda p: -len(p.parts)):
            os.utime(p, (then, then))
        (base / "done").write_text("ok")
        print(f"built {base} in {time.perf_counter() - t0:.0f} s")
    return claude, codex


# -- running -------------------------------------------------------------------------


class Run:
    """Wall and CPU seconds of one command (CPU: user + system of it and its children)."""

    ready: Run | None = None  # a server's first read done (serve_until_answer)

    def __init__(self, wall: float, cpu: float, out: str = "", rss_mb: float | None = None):
        self.wall, self.cpu, self.out, self.rss_mb = wall, cpu, out, rss_mb


def timed(cmd: list[str], env: dict, stdin: str | None = None) -> Run:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({p.returncode}): {p.stderr.strip()[:400]}")
    return Run(wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.stdout)


def then(*runs: Run) -> Run:
    """Commands run one after the other, as one."""
    return Run(sum(r.wall for r in runs), sum(r.cpu for r in runs), runs[-1].out)


def proc_cpu_rss(pid: int) -> tuple[float, float]:
    """CPU seconds (with waited-for children) and RSS in MB of a running process."""
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = sum(int(x) for x in fields[11:15]) / tick
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return cpu, rss


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`huddle serve` running on the bench's home, as AgentsView's daemon runs beside its
    CLI: a stale `status --json` is asked of it (huddle.io.served). Up once its first
    read is done."""

    def __init__(self, huddle: list[str], env: dict) -> None:
        self.p = subprocess.Popen(
            [*huddle, "serve", "--no-open", "--no-notify", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def __enter__(self) -> Served:
        assert self.p.stdout is not None
        url, t0 = "", time.time()
        while not url and time.time() - t0 < 600:
            line = self.p.stdout.readline()
            if not line and self.p.poll() is not None:
                raise SystemExit("huddle serve exited")
            url = line.split(" at ", 1)[1].strip() if "serving" in line and " at " in line else ""
        while time.time() - t0 < 600:
            with urllib.request.urlopen(url + "api/info", timeout=30) as r:
                if not json.loads(r.read()).get("reading"):
                    return self
            time.sleep(0.05)
        raise SystemExit("huddle serve: its first read did not end")

    def __exit__(self, *exc: object) -> None:
        os.killpg(self.p.pid, signal.SIGINT)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        if self.p.stdout is not None:
            self.p.stdout.close()


def serve_until_answer(cmd: list[str], env: dict, url: str, timeout: float = 300, ready: str | None = None) -> Run:
    """Start a server; time until `url` answers 200 with a body; its CPU and RSS then.
    `ready`: a URL whose JSON says `"reading": false` once the first read is done (huddle
    from its cache answers before): the Run's `.ready` is that moment, CPU and RSS."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    first: Run | None = None
    try:
        while time.perf_counter() - t0 < timeout:
            if p.poll() is not None:
                raise SystemExit(f"{cmd[0]} exited ({p.returncode})")
            try:
                if first is None:
                    with urllib.request.urlopen(url, timeout=30) as r:
                        body = r.read()
                    if r.status == 200 and body:
                        cpu, rss = proc_cpu_rss(p.pid)
                        first = Run(time.perf_counter() - t0, cpu, body.decode(errors="replace")[:2000], rss)
                        first.ready = first
                if first is not None and ready is None:
                    return first
                if first is not None and ready is not None:
                    with urllib.request.urlopen(ready, timeout=30) as r:
                        info = json.loads(r.read())
                    if not info.get("reading"):
                        cpu, rss = proc_cpu_rss(p.pid)
                        first.ready = Run(time.perf_counter() - t0, cpu, "", rss)
                        return first
            except OSError:
                pass
            time.sleep(0.02)
        raise SystemExit(f"{cmd[0]}: no answer from {url}")
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


class Bench:
    def __init__(self, claude: Path, codex: Path, work: Path):
        self.claude, self.codex, self.work = claude, codex, work
        (work / "home").mkdir(parents=True, exist_ok=True)
        self.rows: list[tuple[str, str, list[Run], list[Run]]] = []
        self.solos: list[tuple[str, list[Run]]] = []  # huddle alone (no peer does the same)
        self.notes: list[str] = []
        sessions = sorted(claude.glob("projects/*/*.jsonl"), key=lambda p: p.stat().st_size)
        self.appended = sessions[len(sessions) // 2]  # a middling session gets the appends
        self.size0 = self.appended.stat().st_size
        self.n = 0

    def env(self, huddle_home: str = "hh", av_data: str = "av") -> dict:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "VIBE", "HUDDLE", "AGENTSVIEW"))
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
        none = str(self.work / "none")
        env.update(
            HOME=str(self.work / "home"),
            TZ="UTC",
            PYTHONPATH=os.environ.get("HUDDLE_SRC") or str(ROOT / "src"),  # a snapshot, to go on editing
            HUDDLE_HOME=str(self.work / huddle_home),
            CLAUDE_CONFIG_DIR=str(self.claude),
            CODEX_HOME=str(self.codex) if self.codex.exists() else none,
            VIBE_HOME=none,
            GEMINI_DIR=none,
            AGENTSVIEW_DATA_DIR=str(self.work / av_data),
            AGENTSVIEW_TELEMETRY_ENABLED="false",
            AGENTSVIEW_NO_DAEMON="1",  # one-shot commands run in their own process, as huddle's do
            AGENTSVIEW_HOST="127.0.0.1",
            CLAUDE_PROJECTS_DIR=str(self.claude / "projects"),
            CODEX_SESSIONS_DIR=str(self.codex / "sessions"),
        )
        return env

    def answered(self, status_cmd: list[str], name: str = "status.bin") -> None:
        """Runs `huddle status --json` (or `usage --json`, its answer `name`) until a run
        is said from its stored answer (huddle.io.answers: the run left it as it was):
        a run after a move reads it and stores a new one, and a session appended to
        under a second before its read is read once more."""
        answer = self.work / "hh" / "cache" / name

        def stamp() -> tuple[int, int, int] | None:
            try:
                st = answer.stat()
            except OSError:
                return None
            return st.st_ino, st.st_size, st.st_mtime_ns

        for _ in range(12):  # (a file that moved under a second before a read keeps it from being stored)
            before = stamp()
            timed(status_cmd, self.env())
            if before is not None and stamp() == before:
                return

    def append(self) -> None:
        """One more model response at the end of one session (a new message id)."""
        self.n += 1
        rec = {
            "type": "assistant",
            "sessionId": self.appended.stem,
            "uuid": f"00000000-0000-4000-8000-{self.n:012d}",
            "timestamp": "2026-11-30T12:00:00.000Z",
            "message": {
                "id": f"msg_bench_append_{self.n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "appended"}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": 3,
                    "output_tokens": 5,
                    "cache_read_input_tokens": 7,
                    "cache_creation_input_tokens": 0,
                },
            },
        }
        with open(self.appended, "a") as f:  # compact, as Claude Code writes its lines
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def restore(self) -> None:
        os.truncate(self.appended, self.size0)

    def pair(self, name: str, peer: str, ours, theirs, runs: int, before=None) -> None:
        a: list[Run] = []
        b: list[Run] = []
        for i in range(runs):
            order = [(ours, a), (theirs, b)] if i % 2 == 0 else [(theirs, b), (ours, a)]
            for fn, out in order:
                if before is not None:
                    before()
                out.append(fn())
        self.rows.append((name, peer, a, b))
        print(f"  {name}: done", flush=True)

    def solo(self, name: str, runs: list[Run]) -> None:
        self.solos.append((name, runs))

    def said(self, name: str, text: str) -> None:
        """A figure huddle alone gives, said as it is (side_paths: idle CPU, page, parse)."""
        self.notes.append(f"{name:<34} {text}")

    def table(self) -> None:
        med = statistics.median
        print(
            f"\n{'measure':<28} {'huddle wall':>11} {'cpu':>6} | {'peer':<11} {'wall':>7} {'cpu':>6} | {'ratio wall':>10} {'cpu':>6}"
        )
        for name, peer, a, b in self.rows:
            rw = med(x.wall / y.wall for x, y in zip(a, b, strict=True))
            rc = (
                med(x.cpu / y.cpu for x, y in zip(a, b, strict=True) if y.cpu > 0)
                if any(y.cpu for y in b)
                else float("nan")
            )
            line = (
                f"{name:<28} {med(x.wall for x in a):>10.3f}s {med(x.cpu for x in a):>5.2f}s | {peer:<11}"
                f" {med(y.wall for y in b):>6.3f}s {med(y.cpu for y in b):>5.2f}s | {rw:>10.2f} {rc:>6.2f}"
            )
            if a[0].rss_mb is not None:
                line += f"   RSS {med(x.rss_mb for x in a):.0f} MB vs {med(y.rss_mb for y in b):.0f} MB"
            print(line)
        print("(ratios: huddle / peer, median of the paired rounds; below 1 huddle is faster)")
        for name, runs in self.solos:
            rss = [x.rss_mb for x in runs if x.rss_mb is not None]
            print(
                f"{name:<34} {med(x.wall for x in runs):>7.3f}s {med(x.cpu for x in runs):>5.2f}s"
                + (f"   RSS {med(rss):.0f} MB" if rss else "")
                + f"   (huddle alone, {len(runs)} runs)"
            )
        for line in self.notes:
            print(line)


def totals_huddle(out: str) -> dict:
    t = json.loads(out)["totals"]
    return {k: t[k] for k in TOKENS}


def totals_ccusage(out: str) -> dict:
    t = json.loads(out)["totals"]
    return {
        "input": t["inputTokens"],
        "output": t["outputTokens"],
        "cache_read": t["cacheReadTokens"],
        "cache_write": t["cacheCreationTokens"],
    }


def totals_av(out: str) -> dict:
    return totals_ccusage(out)


# A fixed workload of the interpreter alone (JSON in and out, a dict, a sort): the same
# code on the same files measured 293 MB per CPU s one day and 177 the next, on another
# machine behind the same name. A ratio to a peer holds across days; a figure of huddle
# alone compares only beside this one.
MACHINE = (
    "import json, time\n"
    "doc = json.dumps([{'id': i, 'text': 'x' * (i % 97), 'n': [i, i * 2]} for i in range(20000)])\n"
    "t = time.process_time()\n"
    "for _ in range(5):\n"
    "    rows = json.loads(doc)\n"
    "    index = {r['id']: r for r in rows}\n"
    "    json.dumps(sorted(index.values(), key=lambda r: (r['n'][1] % 7, r['id'])))\n"
    "print(time.process_time() - t)"
)


def machine_ms() -> float:
    """The best of three fresh runs of MACHINE, in ms of CPU."""
    runs = [
        float(subprocess.run([PY, "-c", MACHINE], capture_output=True, text=True, check=True).stdout) for _ in range(3)
    ]
    return min(runs) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--claude-gb", type=float, default=1.1)
    ap.add_argument("--codex-threads", type=int, default=1000)
    ap.add_argument("--codex-mb", type=int, default=550)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="usage,status,new,statusline,serve,export,idle,page,parse,tables,board")
    ap.add_argument(
        "--corpus",
        default="real,synthetic",
        help="real: ../shared/external cloned with fresh ids (bench/real_corpus.py); synthetic: generated",
    )
    ap.add_argument("--copies", type=int, default=23, help="real corpus: clones of each real file")
    ap.add_argument("--idle", type=int, default=60, help="seconds an idle server is watched")
    ap.add_argument("--no-cold", action="store_true", help="usage: skip the cold pairs (warm and after an append only)")
    ap.add_argument("--peers", default="ccusage,agentsview", help="the peers to run (AgentsView's cold sync is slow)")
    a = ap.parse_args()
    only = set(a.only.split(","))
    peers = set(a.peers.split(","))
    global CCUSAGE, AGENTSVIEW
    CCUSAGE = CCUSAGE if "ccusage" in peers else None
    AGENTSVIEW = AGENTSVIEW if "agentsview" in peers else None
    for corpus in a.corpus.split(","):
        if corpus == "real":
            import real_corpus

            base = real_corpus.ensure(a.copies)
            claude, codex = base / "claude", base / "codex"
        else:
            claude, codex = build(a.sessions, a.claude_gb, a.codex_threads, a.codex_mb)
        print(f"\n=== {corpus} corpus: {claude.parent}")
        measure(a, only, claude, codex)


def measure(a: argparse.Namespace, only: set[str], claude: Path, codex: Path) -> None:
    import side_paths

    files = [p for root in (claude, codex) for p in root.rglob("*.jsonl")]
    print(
        f"corpus: {len(list(claude.glob('projects/*/*.jsonl')))} Claude sessions, {len(list(codex.rglob('rollout-*.jsonl')))} Codex rollouts, {sum(p.stat().st_size for p in files) / 1e9:.2f} GB"
    )
    print(f"ccusage: {CCUSAGE or 'not found'}; agentsview: {AGENTSVIEW or 'not found'}")
    print(f"machine: {machine_ms():.0f} ms for a fixed Python workload (figures of two days compare only as this does)")
    work = Path(tempfile.mkdtemp(prefix="huddle-side-"))
    b = Bench(claude, codex, work)
    huddle = HUDDLE
    try:
        if "usage" in only:
            usage_cmd = [*huddle, "usage", "--json"]
            cc_cmd = [CCUSAGE, "daily", "--json", "--offline"] if CCUSAGE else None
            av_cmd = [AGENTSVIEW, "usage", "daily", "--json", "--all", "--offline"] if AGENTSVIEW else None
            k = iter(range(10_000))

            def cold_huddle() -> Run:
                return timed(usage_cmd, b.env(huddle_home=f"cold-{next(k)}"))

            if cc_cmd and not a.no_cold:
                b.pair("usage cold (mix)", "ccusage", cold_huddle, lambda: timed(cc_cmd, b.env()), max(1, a.runs // 2))
            if av_cmd:
                j = iter(range(10_000))
                sync_cmd = [AGENTSVIEW, "sync"]

                def cold_av() -> Run:
                    # its usage reads its database: a cold run is a sync into an empty one, then the report
                    env = b.env(av_data=f"avcold-{next(j)}")
                    return then(timed(sync_cmd, env), timed(av_cmd, env))

                if not a.no_cold:
                    b.pair("usage cold (mix)", "agentsview", cold_huddle, cold_av, max(1, a.runs // 2))
                timed(sync_cmd, b.env())  # its database, for the warm runs
                timed(av_cmd, b.env())
            timed(usage_cmd, b.env())  # huddle's index, for the warm runs
            b.answered(usage_cmd, "usage.bin")  # and its answer, kept once a run read nothing
            if av_cmd:
                b.pair(
                    "usage warm",
                    "agentsview",
                    lambda: timed(usage_cmd, b.env()),
                    lambda: timed(av_cmd, b.env()),
                    a.runs,
                )
                b.pair(
                    "usage after an append",
                    "agentsview",
                    lambda: timed(usage_cmd, b.env()),
                    lambda: timed(av_cmd, b.env()),
                    a.runs,
                    before=b.append,
                )
            # token totals, all read over the same files now
            ours = totals_huddle(timed(usage_cmd, b.env()).out)
            print(f"\ntokens huddle     {ours}")
            for peer, cmd, conv in (("ccusage", cc_cmd, totals_ccusage), ("agentsview", av_cmd, totals_av)):
                if cmd:
                    theirs = conv(timed(cmd, b.env()).out)
                    same = {k: ours[k] == theirs[k] for k in TOKENS}
                    print(
                        f"tokens {peer:<10} {theirs}  equal: {all(same.values())} {'' if all(same.values()) else same}"
                    )
        if "status" in only and AGENTSVIEW:
            status_cmd = [*huddle, "status", "--json"]
            timed(status_cmd, b.env())  # the cache
            b.answered(status_cmd)  # nothing changed since: the answer kept
            av_env = b.env()
            av_env.pop("AGENTSVIEW_NO_DAEMON")  # its list is answered by its daemon
            timed([AGENTSVIEW, "daemon", "start"], av_env)
            try:
                list_cmd = [AGENTSVIEW, "session", "list", "--json", "--limit", "500"]
                timed(list_cmd, av_env)
                b.pair(
                    "status (cached)",
                    "agentsview",
                    lambda: timed(status_cmd, b.env()),
                    lambda: timed(list_cmd, av_env),
                    a.runs,
                )
                b.pair(
                    "status after an append",
                    "agentsview",
                    lambda: timed(status_cmd, b.env()),
                    lambda: timed(list_cmd, av_env),
                    a.runs,
                    before=b.append,
                )
                # the least a one-shot run that reads can cost, beside the peer's daemon:
                # a Python started and the modules such a run loads, nothing read
                b.pair(
                    "one-shot floor: python + imports",
                    "agentsview",
                    lambda: timed([PY, "-c", ONE_SHOT_FLOOR], b.env()),
                    lambda: timed(list_cmd, av_env),
                    a.runs,
                )
                with Served(huddle, b.env()):
                    b.pair(
                        "status after an append (huddle serve up)",
                        "agentsview",
                        lambda: timed(status_cmd, b.env()),
                        lambda: timed(list_cmd, av_env),
                        a.runs,
                        before=b.append,
                    )
            finally:
                subprocess.run([AGENTSVIEW, "daemon", "stop"], env=av_env, capture_output=True)
        if "new" in only and AGENTSVIEW:
            new_session = side_paths.NewSessions(claude)
            status_cmd = [*huddle, "status", "--json"]
            usage_cmd = [*huddle, "usage", "--json"]
            av_env = b.env()
            av_env.pop("AGENTSVIEW_NO_DAEMON")
            timed([AGENTSVIEW, "daemon", "start"], av_env)
            try:
                list_cmd = [AGENTSVIEW, "session", "list", "--json", "--limit", "500"]
                av_usage = [AGENTSVIEW, "usage", "daily", "--json", "--all", "--offline"]
                timed(status_cmd, b.env())
                b.answered(status_cmd)
                b.pair(
                    "status after a new session",
                    "agentsview",
                    lambda: timed(status_cmd, b.env()),
                    lambda: timed(list_cmd, av_env),
                    a.runs,
                    before=new_session,
                )
                with Served(huddle, b.env()):
                    b.pair(
                        "status after a new session (huddle serve up)",
                        "agentsview",
                        lambda: timed(status_cmd, b.env()),
                        lambda: timed(list_cmd, av_env),
                        a.runs,
                        before=new_session,
                    )
                timed(usage_cmd, b.env())
                b.answered(usage_cmd, "usage.bin")
                b.pair(
                    "usage after a new session",
                    "agentsview",
                    lambda: timed(usage_cmd, b.env()),
                    lambda: then(timed([AGENTSVIEW, "sync"], b.env()), timed(av_usage, b.env())),
                    a.runs,
                    before=new_session,
                )
            finally:
                subprocess.run([AGENTSVIEW, "daemon", "stop"], env=av_env, capture_output=True)
                new_session.restore()
        if "statusline" in only and CCUSAGE:
            stdin = json.dumps(
                {
                    "session_id": b.appended.stem,
                    "transcript_path": str(b.appended),
                    "cwd": "/home/dev/work",
                    "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet"},
                    "workspace": {"current_dir": "/home/dev/work", "project_dir": "/home/dev/work"},
                    "cost": {"total_cost_usd": 1.0},
                    "context_window": {
                        "context_window_size": 200000,
                        "used_percentage": 12,
                        "total_input_tokens": 24000,
                        "total_output_tokens": 1200,
                    },
                }
            )
            timed([*huddle, "status", "--json"], b.env())
            b.pair(
                "status line",
                "ccusage",
                lambda: timed([*huddle, "statusline"], b.env(), stdin),
                lambda: timed([CCUSAGE, "statusline", "--offline"], b.env(), stdin),
                a.runs,
            )
            time.sleep(2)  # let a background refresher finish
        if "serve" in only and AGENTSVIEW:
            timed([*huddle, "status", "--json"], b.env())  # the cache
            timed([AGENTSVIEW, "sync"], b.env())  # and its database (else its serve syncs first)
            runs: list[Run] = []

            def ours(home: str = "hh") -> Run:
                port = free_port()
                base = f"http://127.0.0.1:{port}/api/"
                run = serve_until_answer(
                    [*huddle, "serve", "--port", str(port), "--no-open", "--no-notify"],
                    b.env(huddle_home=home),
                    base + "sessions",
                    ready=base + "info",
                )
                runs.append(run)
                return run

            def theirs() -> Run:
                port = free_port()
                cmd = [AGENTSVIEW, "serve", "--port", str(port), "--no-browser", "--no-update-check"]
                return serve_until_answer(cmd, b.env(), f"http://127.0.0.1:{port}/api/v1/sessions")

            b.pair("serve: first board answer", "agentsview", ours, theirs, max(2, a.runs // 2))
            b.solo("serve (cache): first read done", [r.ready or r for r in runs])
            k = iter(range(10_000))
            cold = [ours(f"serve-cold-{next(k)}") for _ in range(max(1, a.runs // 2))]
            b.solo("serve (no cache): first answer", cold)
            b.solo("serve (no cache): first read done", [r.ready or r for r in cold])
        if "export" in only:
            side_paths.export_pair(b, huddle, a.runs)
        if "idle" in only:
            timed([*huddle, "status", "--json"], b.env())  # the cache, as after any earlier run
            side_paths.idle_solo(b, "hh", a.idle, "(cache there)")
            side_paths.idle_solo(b, "idle-cold", a.idle, "(first start)")
        if "page" in only:
            side_paths.page_solo(b, 10)
        if "parse" in only:
            side_paths.parse_solo(b)
        if "tables" in only:
            side_paths.tables_solo(b, huddle, a.runs)
        if "board" in only:
            side_paths.board_solo(b)
    finally:
        b.restore()
        b.table()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
