"""`huddle usage` beside `ccusage daily --json --offline`: totals, equality, wall time.

    python bench/bench_usage.py [--ccusage PATH] [--runs 3] [--claude-copies 67] [--codex-copies 30]
                                [--generated-gb 0.5] [--no-generated]

ccusage is not a dependency: install it anywhere outside the repo, e.g.
`npm install --prefix /tmp/ccusage ccusage@20.0.24`; it is looked for in --ccusage,
$CCUSAGE, /tmp/ccusage/node_modules/.bin/ccusage and the PATH.

Two corpora, built once under bench/corpus/usage/ (git-ignored):

- `samples`: every real Claude and Codex sample session copied many times with new
  session, message, request and response ids and times spread over four weeks (about
  1,000 Claude and 1,000 Codex sessions). Real records, so both tools read the same.
- `generated`: the Claude generator (bench/claude_corpus.py), big tool outputs and a
  150 MB session.

Both tools run with HOME pointing at an empty folder (so ccusage finds no other
agents) and TZ=UTC (ccusage groups days in local time, huddle in UTC).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SAMPLES = ROOT / "tests" / "fixtures" / "samples"
OUT = HERE / "corpus" / "usage"
HUDDLE = [sys.executable, "-m", "huddle"]
TOKENS = ("input", "output", "cache_read", "cache_write")
UUID_RX = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SAMPLE_DAY = b"2026-11-30"
STAMP_RX = re.compile(rb"2026-11-30T(\d\d):")


# -- corpora -------------------------------------------------------------------------


def _copy_with_new_ids(src: Path, dst: Path, k: int, tag: str, id_rx: re.Pattern) -> None:
    """Copy every file under src to dst for copy number k: the same records with new
    uuids (file and folder names too), new response ids, and times moved to another
    day (and hour): ccusage takes Codex records with the same time and tokens as one."""
    ids: dict[bytes, bytes] = {}

    def new_uuid(m: re.Match) -> bytes:
        old = m.group(0)
        if old not in ids:
            ids[old] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{tag}/{k}/{old.decode()}")).encode()
        return ids[old]

    day = (date(2026, 11, 30) - timedelta(days=k % 28)).isoformat().encode()
    shift = k // 28  # copies on the same day get other hours: no two copies share a timestamp

    def new_time(m: re.Match) -> bytes:
        return day + b"T%02d:" % ((int(m.group(1)) + shift) % 24)

    for f in sorted(src.rglob("*")):
        if not f.is_file():
            continue
        rel = UUID_RX.sub(new_uuid, str(f.relative_to(src)).encode()).decode()
        data = f.read_bytes()
        if f.suffix in (".jsonl", ".json"):
            data = UUID_RX.sub(new_uuid, data)
            data = id_rx.sub(lambda m: m.group(0) + f"x{tag}x{k}".encode(), data)
            data = STAMP_RX.sub(new_time, data).replace(SAMPLE_DAY, day)
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)


def build_samples_corpus(claude_copies: int, codex_copies: int) -> tuple[Path, Path]:
    base = OUT / f"samples-{claude_copies}x-{codex_copies}x"
    claude, codex = base / "claude", base / "codex"
    if (base / "done").exists():
        return claude, codex
    shutil.rmtree(base, ignore_errors=True)
    t0 = time.perf_counter()
    msg_rx = re.compile(rb"\b(?:msg|req)_[0-9A-Za-z]+")
    resp_rx = re.compile(rb"\bresp_[0-9A-Za-z]+")
    for scn in sorted((SAMPLES / "claude").iterdir()):
        if (scn / "config" / "projects").is_dir():
            for k in range(claude_copies):
                _copy_with_new_ids(scn / "config" / "projects", claude / "projects", k, scn.name[:2], msg_rx)
    for scn in sorted((SAMPLES / "codex").iterdir()):
        if (scn / "codex_home" / "sessions").is_dir():
            for k in range(codex_copies):
                _copy_with_new_ids(scn / "codex_home" / "sessions", codex / "sessions", k, scn.name, resp_rx)
    (base / "done").write_text("ok")
    print(f"built {base} in {time.perf_counter() - t0:.1f} s")
    return claude, codex


def build_generated_corpus(gb: float, sessions: int) -> Path | None:
    root = OUT / f"generated-{sessions}-{gb}gb" / "claude"
    if (root.parent / "done").exists():
        return root
    try:
        sys.path.insert(0, str(HERE))
        import claude_corpus
    except ImportError:
        print("bench/claude_corpus.py not found: skipping the generated corpus")
        return None
    shutil.rmtree(root.parent, ignore_errors=True)
    t0 = time.perf_counter()
    n = claude_corpus.write_claude_corpus(str(root), sessions, int(gb * (1 << 30)), seed=1, big_bytes=150 << 20)
    (root.parent / "done").write_text("ok")
    print(f"built {root} ({n / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    return root


# -- running the two tools -------------------------------------------------------------


def find_ccusage(arg: str | None) -> str | None:
    for c in (arg, os.environ.get("CCUSAGE"), "/tmp/ccusage/node_modules/.bin/ccusage", shutil.which("ccusage")):
        if c and os.path.exists(c):
            return c
    return None


def _empty_claude_dir(home: str) -> None:
    """ccusage insists on a Claude folder; made as if long ago, so that huddle's index
    (which distrusts folders that moved in the last seconds) treats it as settled."""
    d = Path(home) / "no-claude" / "projects"
    d.mkdir(parents=True, exist_ok=True)
    then = time.time() - 3600
    for p in (d, d.parent, Path(home)):
        os.utime(p, (then, then))


def _env(home: str, claude: Path | None, codex: Path | None, huddle_home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "VIBE", "HUDDLE"))}
    env.update(
        HOME=home,
        TZ="UTC",
        HUDDLE_HOME=huddle_home,
        PYTHONPATH=str(ROOT / "src"),
        CLAUDE_CONFIG_DIR=str(claude or Path(home) / "no-claude"),
        CODEX_HOME=str(codex or Path(home) / "no-codex"),
        VIBE_HOME=str(Path(home) / "no-vibe"),
    )
    return env


def timed(cmd: list[str], env: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[:500]}")
    return dt, json.loads(out.stdout)


def ccusage_totals(d: dict) -> dict:
    t = d["totals"]
    return {
        "input": t["inputTokens"],
        "output": t["outputTokens"],
        "cache_read": t["cacheReadTokens"],
        "cache_write": t["cacheCreationTokens"],
        "cost": t["totalCost"],
        "unpriced": t.get("unpricedModels", []),
    }


def huddle_figures(claude: Path | None, codex: Path | None) -> dict:
    """In-process extras: cost under ccusage's long-context rule, and the Codex subset
    ccusage reads (it skips sub-agent threads and `exec fork` threads)."""
    sys.path.insert(0, str(ROOT / "src"))
    from huddle.core import Huddle
    from huddle.cost.pricing import load
    from huddle.sources import Settings
    from huddle.usage.report import counted_usage

    h = Huddle(
        Settings(
            folders={
                "claude": str(claude or "/nonexistent"),
                "codex": str(codex or "/nonexistent"),
                "vibe": "/nonexistent",
            },
            huddle_home="/nonexistent",
        )
    )
    h.refresh()
    table = load("/nonexistent")
    by_model: dict[str, float] = {}  # what ccusage would charge for the responses it reads
    subset = dict.fromkeys(TOKENS, 0)
    for s, e in counted_usage(h.sessions()):
        a = s.agents.get(e.agent)
        if s.source == "codex" and (s.continues or (a is not None and a.kind == "sub-agent")):
            continue
        for k in TOKENS:
            subset[k] += getattr(e.usage, k)
        p = table.price(CCUSAGE_ALIASES.get(e.name, e.name))
        if p is not None:
            by_model[e.name] = by_model.get(e.name, 0.0) + ccusage_rule_cost(p, e.usage)
    return {"split_by_model": by_model, "ccusage_subset": subset}


# ccusage prices Codex's guardian alias as this model; OpenAI publishes no price for it,
# so huddle lists it unpriced unless the user's pricing file names a model.
CCUSAGE_ALIASES = {"codex-auto-review": "gpt-5.6-luna"}


def ccusage_rule_cost(p, u) -> float:
    """ccusage's reading of long-context rates: each token kind apart, only the part
    above the threshold at the long rate. The providers bill the whole request."""
    if p.long is None:
        return p.request_cost(u)

    def part(n: int, base: float, long: float) -> float:
        return (min(n, p.above) * base + max(0, n - p.above) * long) / 1e6

    b, lg = p.base, p.long
    return (
        part(u.input, b.input, lg.input)
        + part(u.output, b.output, lg.output)
        + part(u.cache_read, b.cache_read, lg.cache_read)
        + part(u.cache_write, b.cache_write, lg.cache_write)
    )


def compare(name: str, claude: Path | None, codex: Path | None, cc: str | None, runs: int) -> None:
    print(f"\n== {name}: claude={claude} codex={codex}")
    files = [p for root in (claude, codex) if root for p in root.rglob("*.jsonl")]
    print(f"   {len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.0f} MB")
    with tempfile.TemporaryDirectory() as home:
        _empty_claude_dir(home)
        cold, warm, ccs = [], [], []
        data = cdata = None
        for i in range(runs):
            hh = os.path.join(home, f"huddle-{i}")
            dt, data = timed(HUDDLE + ["usage", "--json"], _env(home, claude, codex, hh))
            cold.append(dt)
            dt, _ = timed(HUDDLE + ["usage", "--json"], _env(home, claude, codex, hh))
            warm.append(dt)
            if cc:
                dt, cdata = timed([cc, "daily", "--json", "--offline"], _env(home, claude, codex, hh))
                ccs.append(dt)
    t = data["totals"]
    print(f"   huddle : {fmt(t)}  cost ${t['cost_usd']:.4f}  unpriced {t['unpriced']}  responses {t['responses']:,}")
    extra = huddle_figures(claude, codex)
    if cdata is not None:
        c = ccusage_totals(cdata)
        print(f"   ccusage: {fmt(c)}  cost ${c['cost']:.4f}  unpriced {c['unpriced']}")
        same = all(t[k] == c[k] for k in TOKENS)
        print(f"   tokens equal: {same}")
        if not same and codex is not None:
            sub = extra["ccusage_subset"]
            print(
                f"   huddle without Codex sub-agent and exec-fork threads: {fmt(sub)}"
                f"  -> equals ccusage: {all(sub[k] == c[k] for k in TOKENS)}"
            )
        print(f"   cost: huddle ${t['cost_usd']:.4f}; ccusage ${c['cost']:.4f}")
        # Where the two differ: responses ccusage does not read, models it cannot price,
        # codex-auto-review, and its long-context rule. With those taken as ccusage takes them:
        both = sum(v for m, v in extra["split_by_model"].items() if m not in c["unpriced"])
        print(
            f"   huddle's prices on what ccusage reads and prices, with ccusage's long-context rule: "
            f"${both:.4f} -> equals ccusage: {abs(both - c['cost']) < 1e-6 * max(1.0, c['cost'])}"
        )
    print(
        f"   wall, median of {runs}: huddle cold {med(cold):.2f} s, huddle warm (its cache) {med(warm):.2f} s", end=""
    )
    if ccs:
        print(
            f", ccusage {med(ccs):.2f} s  ->  huddle/ccusage cold {med(cold) / med(ccs):.2f}, warm {med(warm) / med(ccs):.2f}"
        )
    else:
        print("  (ccusage not found: see --ccusage)")


def fmt(d: dict) -> str:
    return " ".join(f"{k}={d[k]:,}" for k in TOKENS)


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccusage")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--claude-copies", type=int, default=67)
    ap.add_argument("--codex-copies", type=int, default=30)
    ap.add_argument("--generated-gb", type=float, default=0.5)
    ap.add_argument("--generated-sessions", type=int, default=1000)
    ap.add_argument("--no-generated", action="store_true")
    a = ap.parse_args()
    cc = find_ccusage(a.ccusage)
    if cc:
        ver = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.strip()
        print(f"ccusage {ver} at {cc}")
    else:
        print("ccusage not found: timing huddle alone (npm install --prefix /tmp/ccusage ccusage@20.0.24)")
    claude, codex = build_samples_corpus(a.claude_copies, a.codex_copies)
    compare("samples: Claude", claude, None, cc, a.runs)
    compare("samples: Codex", None, codex, cc, a.runs)
    compare("samples: Claude + Codex", claude, codex, cc, a.runs)
    if not a.no_generated:
        gen = build_generated_corpus(a.generated_gb, a.generated_sessions)
        if gen is not None:
            compare("generated Claude corpus", gen, None, cc, a.runs)


if __name__ == "__main__":
    main()
