"""`huddle otel` over the bench corpus: spans per second and peak memory.

    python bench/bench_otel.py [--gb 1.0] [--sessions 1000] [--runs 2] [--phoenix VENV]

The Claude generator's corpus (bench/claude_corpus.py) is written once under
bench/corpus/otel/ (git-ignored). Each run is a fresh `huddle otel` process (a new
HUDDLE_HOME: cold, nothing cached) sending to the tests' OTLP/HTTP receiver on
127.0.0.1, which decodes every request with the opentelemetry-proto messages on the
same two cores: the figures include a real receiver's work. Peak memory is the
huddle process's own (wait4's ru_maxrss). The received token sums are checked against
`huddle usage` (the trap: input_tokens includes cache).

--phoenix VENV: also a run into Arize Phoenix (a venv where `pip install arize-phoenix`
succeeded): the real samples are sent, and spans are read back through Phoenix's client
with their times, nesting and token totals compared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
OUT = HERE / "corpus" / "otel"


def corpus(gb: float, sessions: int) -> Path:
    from claude_corpus import write_claude_corpus

    root = OUT / f"claude-{gb:g}gb-{sessions}"
    if not (root / ".done").exists():
        n = write_claude_corpus(str(root), sessions, int(gb * (1 << 30)))
        (root / ".done").write_text(str(n))
        print(f"corpus: wrote {n / 1e6:,.0f} MB in {sessions} sessions under {root}")
    return root


def env_for(claude: Path, home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(claude),
            "HUDDLE_SOURCES": "claude",
            "HUDDLE_HOME": home,
            "HOME": home,
            "PYTHONPATH": str(ROOT / "src"),
        }
    )
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stderr) of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode() if p.stderr else ""
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err}")
    return wall, ru.ru_maxrss / 1024, err


def usage_totals(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-m", "huddle", "usage", "--json"], env=env, capture_output=True, check=True)
    return json.loads(out.stdout)["totals"]


def bench(root: Path, runs: int) -> None:
    from otlp_receiver import Receiver

    walls, rss = [], []
    for i in range(runs):
        with tempfile.TemporaryDirectory() as home, Receiver(keep=False) as rx:
            env = env_for(root, home)
            wall, peak, _ = timed([sys.executable, "-m", "huddle", "otel", "--endpoint", rx.url], env)
            walls.append(wall)
            rss.append(peak)
            spans = rx.count
            if i == 0:
                u = usage_totals(env)
                tok = rx.tokens
                cr = tok.get("gen_ai.usage.cache_read.input_tokens", 0)
                cw = tok.get("gen_ai.usage.cache_creation.input_tokens", 0)
                got = {
                    "input": tok.get("gen_ai.usage.input_tokens", 0) - cr - cw,
                    "output": tok.get("gen_ai.usage.output_tokens", 0),
                    "cache_read": cr,
                    "cache_write": cw,
                }
                same = got == {k: u[k] for k in got}
                print(f"tokens received equal `huddle usage` field by field: {same}")
            print(
                f"run {i + 1}: {spans:,} spans in {wall:.1f} s = {spans / wall:,.0f} spans/s, peak RSS {peak:,.0f} MB"
            )
    med = statistics.median(walls)
    print(f"median: {spans / med:,.0f} spans/s ({spans:,} spans, {med:.1f} s), peak RSS {max(rss):,.0f} MB (max)")


PHOENIX_READ = r"""
import json, sys, time
from phoenix.client import Client
c = Client(base_url=sys.argv[1])
for _ in range(120):
    df = c.spans.get_spans_dataframe(project_identifier="default", limit=100000)
    if df is not None and len(df) >= int(sys.argv[2]):
        break
    time.sleep(1)
rows = []
for _, r in df.iterrows():
    g = r.get("attributes.gen_ai")
    u = (g or {}).get("usage") if isinstance(g, dict) else None
    rows.append({
        "span_id": r["context.span_id"], "name": r["name"],
        "parent_id": r["parent_id"] if isinstance(r["parent_id"], str) and r["parent_id"] else None,  # NaN: a root
        "start": r["start_time"].value, "end": r["end_time"].value, "usage": u,
    })
print(json.dumps({"spans": len(df), "rows": rows}, default=str))
"""


def _flat(u: dict | None) -> dict[str, int]:
    """Phoenix returns gen_ai.usage.* nested: {"input_tokens": n, "cache_read": {"input_tokens": n}...}."""
    u = u or {}
    return {
        "input_tokens": int(u.get("input_tokens") or 0),
        "output_tokens": int(u.get("output_tokens") or 0),
        "cache_read": int((u.get("cache_read") or {}).get("input_tokens") or 0),
        "cache_creation": int((u.get("cache_creation") or {}).get("input_tokens") or 0),
    }


def phoenix(venv: Path) -> None:
    """Send a real sample (nested sub-agents) to Phoenix and read it back with its client."""
    import socket
    import urllib.request

    from huddle.core import Huddle
    from huddle.otel.spans import Owners, session_spans
    from huddle.sources import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sample = ROOT / "tests" / "fixtures" / "samples" / "claude" / "12-nested-and-custom-agents" / "config"
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as work:
        penv = dict(os.environ, PHOENIX_PORT=str(port), PHOENIX_WORKING_DIR=work, PHOENIX_HOST="127.0.0.1")
        server = subprocess.Popen(
            [str(venv / "bin" / "phoenix"), "serve"], env=penv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            t0 = time.perf_counter()
            while True:  # ready when its OTLP route answers (minutes on a loaded machine)
                try:
                    req = urllib.request.Request(
                        url + "/v1/traces", data=b"", headers={"content-type": "application/x-protobuf"}
                    )
                    urllib.request.urlopen(req, timeout=5)
                    break
                except OSError:
                    if time.perf_counter() - t0 > 900 or server.poll() is not None:
                        raise SystemExit("phoenix did not start") from None
                    time.sleep(1)
            print(f"phoenix: up after {time.perf_counter() - t0:.0f} s")
            env = env_for(sample, work)
            env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "120"  # a loaded Phoenix takes its time with the first batch
            wall, _, err = timed([sys.executable, "-m", "huddle", "otel", "--endpoint", url], env)
            print(f"phoenix: {err.strip()} ({wall:.1f} s)")
            h = Huddle(Settings.from_env(env))
            h.refresh()
            owners = Owners(h.sessions())
            want = {}
            for s in h.sessions():
                for p in session_spans(s, owners.counted_in).spans:
                    want[f"{p.span_id:016x}"] = p
            out = subprocess.run(
                [str(venv / "bin" / "python"), "-c", PHOENIX_READ, url, str(len(want))],
                capture_output=True,
                text=True,
                check=True,
            )
            got = {r["span_id"]: r for r in json.loads(out.stdout.strip().splitlines()[-1])["rows"]}
            nested = all(
                got[k]["parent_id"] == (f"{p.parent_id:016x}" if p.parent_id else None) for k, p in want.items()
            )
            # Phoenix keeps microseconds
            times = all(
                abs(got[k]["start"] - p.start) < 1000 and abs(got[k]["end"] - p.end) < 1000 for k, p in want.items()
            )
            sums = {k: sum(_flat(r["usage"])[k] for r in got.values()) for k in _flat(None)}
            mine = {
                "input_tokens": sum(p.attrs.get("gen_ai.usage.input_tokens", 0) for p in want.values()),
                "output_tokens": sum(p.attrs.get("gen_ai.usage.output_tokens", 0) for p in want.values()),
                "cache_read": sum(p.attrs.get("gen_ai.usage.cache_read.input_tokens", 0) for p in want.values()),
                "cache_creation": sum(
                    p.attrs.get("gen_ai.usage.cache_creation.input_tokens", 0) for p in want.values()
                ),
            }
            print(
                f"phoenix: read back {len(got)} of {len(want)} spans; nesting intact: {nested}; "
                f"times intact (to the microsecond): {times}; token totals equal: {sums == mine} {sums}"
            )
        finally:
            server.terminate()
            server.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--phoenix", type=Path, default=None, help="a venv with arize-phoenix installed")
    ap.add_argument("--no-corpus", action="store_true", help="only the Phoenix run")
    a = ap.parse_args()
    if not a.no_corpus:
        bench(corpus(a.gb, a.sessions), a.runs)
    if a.phoenix is not None:
        phoenix(a.phoenix)


if __name__ == "__main__":
    main()
