"""Token-exactness and trees over real Claude Code homes (and Codex and Gemini CLI ones:
exactness_agents.py): huddle (and ccusage) beside a
count taken straight from the records.

    python bench/exactness.py [HOME_ROOT...] [--python PY] [--ccusage PATH] [--json] [--claude-only]

A HOME_ROOT is searched for CLAUDE_CONFIG_DIRs (folders holding projects/). Default:
the shared claude-history samples (one row per Claude Code version) and the external
session files (one row per kind, real or hand-made, as their manifest says), read in
place and never copied.

The straight count: every assistant record with a message.id and a usage (the
`<synthetic>` model apart), each id once at the largest of each field; an id held by
several sessions (a resumed or forked session's copied history) counts in the session
where it appeared first (its earliest record, then the session its records name, then
the session that started first). Sessions are files: `<uuid>.jsonl`, with its
`<uuid>/subagents/*.jsonl`, and 2.0.x `agent-<id>.jsonl` files joined to the first
session their records name whose file holds something (a resumed process names its
own empty file first), else one whose file is there, else an orphan of their own. Sub-agents
expected: `subagents/` files, `agent-*.jsonl` files ordered something else than
"Warmup" or named by a Task call's result (2.0.4x writes some pre-warm agents with no
order at all: not expected), and inline
sidechains (a parentless `isSidechain` user record, 1.0.x / early 2.0.x).

huddle answers through `huddle status --json` run by --python (default: this one), so
an older revision installed elsewhere (scripts/diff-release caches them) can be asked
the same. ccusage (not a dependency: `npm install --prefix /tmp/ccusage ccusage@20.0.24`)
answers `session --json --offline`, one period per file stem; a session's ccusage count
is the sum over its files. A session is exact when all four counts (input, output,
cache read, cache write) are equal. Standard library only.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import exactness_agents  # noqa: E402  (Codex homes and Gemini folders, counted the same way)
from bench_usage import find_ccusage  # noqa: E402  (where ccusage is looked for: one place)

FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
KEYS = ("input", "output", "cache_read", "cache_write")
CC_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")


def shared() -> Path:
    for p in (HERE.parent, *HERE.parent.parents):
        if (p / "shared" / "samples").is_dir():
            return p / "shared"
    sys.exit("exactness: no ../shared found; give HOME_ROOTs")


def configs(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        if "projects" in dirnames:
            out.append(Path(dirpath))
            dirnames[:] = []
        dirnames[:] = [d for d in dirnames if d not in ("stream", "node_modules", ".git")]
    return sorted(out)


def records(path: Path):
    with open(path, "rb") as f:
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                yield d


class Truth:
    """What the files of one CLAUDE_CONFIG_DIR hold, counted straight."""

    def __init__(self, config: Path):
        self.session_of: dict[Path, str] = {}  # file -> the session it belongs to
        self.start: dict[str, str] = {}
        self.has_talk: set[str] = set()
        self.sub_agents: collections.Counter[str] = collections.Counter()
        self.versions: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        per_id: dict[str, list] = {}  # message id -> [largest per field, {session: (first time, named)}]
        self.projects = config / "projects"
        files = sorted(self.projects.glob("**/*.jsonl"))
        for f in files:
            self.session_of[f] = self._session(f)
        linked: set[str] = set()
        unordered: list[tuple[str, str]] = []  # (session, agent id) of agent files with no order
        for f in files:
            sid = self.session_of[f]
            nested = len(f.relative_to(self.projects).parts) > 2
            agent_file = f.name.startswith("agent-")
            sub = nested or (agent_file and sid != f.stem)  # an orphan is a session of its own
            first_user = None
            for d in records(f):
                t = d.get("timestamp") if isinstance(d.get("timestamp"), str) else ""
                if t and (sid not in self.start or t < self.start[sid]):
                    self.start[sid] = t
                if isinstance(d.get("version"), str):
                    self.versions[sid][d["version"]] += 1
                m = d.get("message") if isinstance(d.get("message"), dict) else {}
                kind = d.get("type") or m.get("role")  # some hand-made records name no type
                if kind in ("user", "assistant") and not sub:
                    self.has_talk.add(sid)
                if kind == "user" and first_user is None:
                    first_user = _text(m.get("content"))
                res = d.get("toolUseResult")
                if isinstance(res, dict) and isinstance(res.get("agentId"), str):
                    linked.add(res["agentId"])  # a Task call's result names the agent it started
                if kind == "user" and d.get("isSidechain") and not d.get("parentUuid") and not agent_file:
                    self.sub_agents[sid] += 1  # an inline sidechain starts here
                u = m.get("usage")
                if kind != "assistant" or not m.get("id") or m.get("model") == "<synthetic>" or not isinstance(u, dict):
                    continue
                cur = per_id.setdefault(m["id"], [[0, 0, 0, 0], {}])
                for i, k in enumerate(FIELDS):
                    v = u.get(k)
                    if isinstance(v, int) and not isinstance(v, bool) and v > cur[0][i]:
                        cur[0][i] = v
                named = d.get("sessionId") == sid or d.get("sessionId") == f.stem
                was = cur[1].get(sid)
                if was is None or (t, not named) < was:
                    cur[1][sid] = (t, not named)
            if sub and agent_file and (nested or (first_user or "Warmup").strip() != "Warmup"):
                self.sub_agents[sid] += 1
            elif sub and agent_file:
                unordered.append((sid, f.stem[len("agent-") :]))
        for sid, agent in unordered:
            if agent in linked:  # no order written (a trimmed file), yet a call started it
                self.sub_agents[sid] += 1
        self.tokens: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
        for counts, where in per_id.values():
            sid = min(where, key=lambda s: (*where[s], self.start.get(s, ""), s))
            tot = self.tokens[sid]
            for i in range(4):
                tot[i] += counts[i]

    def _session(self, f: Path) -> str:
        rel = f.relative_to(self.projects).parts  # (project folder, [session folder, ...,] file)
        if len(rel) > 2:  # <session>/subagents/[workflows/<id>/]agent-<id>.jsonl
            return rel[1]
        if f.name.startswith("agent-"):
            # a --resume / --continue process names its own (empty) session first, then
            # the one it works on: the first named session whose file holds something
            named = []
            for n, d in enumerate(records(f)):
                sid = d.get("sessionId")
                if isinstance(sid, str) and sid not in named and (f.parent / f"{sid}.jsonl").exists():
                    named.append(sid)
                if n >= 8:
                    break
            held = [sid for sid in named if (f.parent / f"{sid}.jsonl").stat().st_size > 0]
            return (held or named or [f.stem])[0]
        return f.stem

    def version(self, sid: str) -> str:
        c = self.versions.get(sid)
        return c.most_common(1)[0][0] if c else "-"


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def clean_env(config: Path, tmp: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUDDLE_", "CLAUDE_", "CODEX_", "VIBE_"))}
    env.update(HOME=tmp, HUDDLE_HOME=os.path.join(tmp, "hh"), TZ="UTC", CLAUDE_CONFIG_DIR=str(config))
    env["HUDDLE_SOURCES"] = "claude"
    return env


def huddle_rows(py: str, config: Path, tmp: str) -> dict[str, dict]:
    r = subprocess.run(
        [py, "-m", "huddle", "status", "--json"], env=clean_env(config, tmp), capture_output=True, text=True
    )
    if r.returncode:
        raise SystemExit(f"huddle status failed on {config}: {r.stderr.strip()[-300:]}")
    return {s["id"]: s for s in json.loads(r.stdout)["sessions"] if s.get("source") == "claude"}


def ccusage_periods(exe: str, config: Path, tmp: str) -> dict[str, list[int]]:
    r = subprocess.run(
        [exe, "session", "--json", "--offline"], env=clean_env(config, tmp), capture_output=True, text=True
    )
    try:
        rows = json.loads(r.stdout).get("session", [])
    except ValueError:
        return {}
    out: dict[str, list[int]] = {}
    for row in rows:
        if row.get("agent", "claude") == "claude":
            cur = out.setdefault(row["period"], [0, 0, 0, 0])
            for i, k in enumerate(CC_KEYS):
                cur[i] += int(row.get(k) or 0)
    return out


def measure(config: Path, py: str, cc: str | None, kinds: dict[str, str]) -> list[dict]:
    truth = Truth(config)
    with tempfile.TemporaryDirectory(prefix="exactness-") as tmp:
        rows = huddle_rows(py, config, tmp)
        periods = ccusage_periods(cc, config, tmp) if cc else None
    cc_tokens: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    if periods is not None:
        by_stem: dict[str, set[str]] = collections.defaultdict(set)
        for f, sid in truth.session_of.items():
            by_stem[f.stem].add(sid)
        for stem, counts in periods.items():
            owners = by_stem.get(stem, {stem})
            if len(owners) == 1:  # a stem in two projects cannot be told apart in its answer
                tot = cc_tokens[next(iter(owners))]
                for i in range(4):
                    tot[i] += counts[i]
    out = []
    expected = set(truth.has_talk) | {s for s, t in truth.tokens.items() if any(t)}
    for sid in sorted(expected | set(rows)):
        row = rows.get(sid)
        want = truth.tokens.get(sid, [0, 0, 0, 0])
        got = [row["usage"].get(k, 0) for k in KEYS] if row else [0, 0, 0, 0]
        agents = [a for a in (row or {}).get("agents", []) if a.get("parent") and not a.get("quiet")]
        own = next((p for p, s in truth.session_of.items() if s == sid and p.stem == sid), None)
        out.append(
            {
                "config": str(config),
                "session": sid,
                "kind": kinds.get(str(own), "") if own else "",
                "version": truth.version(sid),
                "expected": sid in expected,
                "listed": row is not None,
                "sub_agents": len(agents),
                "sub_agents_expected": truth.sub_agents.get(sid, 0),
                "truth": want,
                "huddle": got,
                "ccusage": cc_tokens.get(sid, [0, 0, 0, 0]) if periods is not None else None,
                "usage_note": (row or {}).get("usage_note", ""),
            }
        )
    return out


def manifest_kinds(roots: list[Path]) -> dict[str, str]:
    out = {}
    for root in roots:
        for base in (root, *root.resolve().parents):  # a part of the external folder names its kinds too
            m = base / "manifest.json"
            if m.exists():
                for e in json.loads(m.read_text()):
                    if e.get("dest"):
                        out[str(base / e["dest"])] = e.get("kind", "")
                break
    return out


def group_of(r: dict, root_of: dict[str, str]) -> str:
    root = root_of[r["config"]]
    if root.endswith("claude-history"):
        return f"claude-history {Path(r['config']).parent.parent.name}"
    return f"external {r['kind'] or 'other'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", type=Path)
    ap.add_argument("--python", default=sys.executable, help="the python whose huddle answers")
    ap.add_argument("--ccusage", help="ccusage to compare with (else looked for; none: skipped)")
    ap.add_argument("--no-ccusage", action="store_true")
    ap.add_argument("--json", action="store_true", help="every session's row as JSON lines")
    ap.add_argument("--misses", type=int, default=8, help="sessions not exact to list")
    ap.add_argument("--claude-only", dest="agents", action="store_false", help="skip the Codex and Gemini homes")
    a = ap.parse_args()
    roots = a.roots or [shared() / "samples" / "claude-history", shared() / "external"]
    cc = None if a.no_ccusage else find_ccusage(a.ccusage)
    kinds = manifest_kinds(roots)
    rows: list[dict] = []
    root_of = {}
    others: list[dict] = []
    for root in roots:
        for config in configs(root):
            root_of[str(config)] = str(root)
            rows.extend(measure(config, a.python, cc, kinds))
        # (the default root of Claude's is claude-history: the Codex and Gemini samples beside it)
        where = root.parent if not a.roots and root.name == "claude-history" else root
        found = exactness_agents.measure(where, a.python, cc) if a.agents else []
        for r in found:
            r["root"] = where.name
        others += found
    if a.json:
        for r in rows + others:
            print(json.dumps(r))
        return
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        groups[group_of(r, root_of)].append(r)
    print(f"huddle: {a.python}   ccusage: {cc or 'not run'}")
    head = f"{'':24} {'sessions':>8} {'listed':>6} {'extra':>5} {'sub-agents':>10} {'trees':>5} {'w/ tokens':>9}"
    print(head + f" {'huddle exact':>12} {'ccusage exact':>13} {'partial':>7}")
    misses = []
    for name in sorted(groups):
        g = groups[name]
        exp = [r for r in g if r["expected"]]
        listed = sum(r["listed"] for r in exp)
        extra = sum(r["listed"] and not r["expected"] for r in g)
        subs = f"{sum(r['sub_agents'] for r in exp)}/{sum(r['sub_agents_expected'] for r in exp)}"
        trees = sum(r["sub_agents"] == r["sub_agents_expected"] for r in exp)
        tok = [r for r in exp if any(r["truth"])]
        hx = sum(r["huddle"] == r["truth"] for r in tok)
        cx = sum(r["ccusage"] == r["truth"] for r in tok) if cc else None
        partial = sum(bool(r["usage_note"]) for r in exp)
        misses += [r for r in tok if r["huddle"] != r["truth"]]
        print(
            f"{name:24} {len(exp):>8} {listed:>6} {extra:>5} {subs:>10} {trees:>5} {len(tok):>9} {hx:>12}"
            f" {'-' if cx is None else cx:>13} {partial:>7}"
        )
    tok = [r for r in rows if r["expected"] and any(r["truth"])]
    print(
        f"{'all':24} {sum(r['expected'] for r in rows):>8} {'':>6} {'':>5} {'':>10} {'':>5} {len(tok):>9}"
        f" {sum(r['huddle'] == r['truth'] for r in tok):>12}"
        f" {'-' if not cc else sum(r['ccusage'] == r['truth'] for r in tok):>13}"
    )
    print(
        "sub-agents: found/expected (warm-ups apart); trees: sessions with as many as expected; "
        "partial: sessions with a usage_note (a file that never got some final output counts)"
    )
    if others:
        print(head + "  (w/ tokens: files with token counts; unknown: rollouts that never held any)")
        print("\n".join(exactness_agents.table(others, lambda r: f"{r['agent']} {r['root']}")))
        misses += [r for r in others if r["expected"] and r["counted"] and r["huddle"] != r["truth"]]
        misses += [r for r in others if r["expected"] and not r["listed"]]
    for r in misses[: a.misses]:
        print(
            f"  not exact: {r['config']} {r['session']} truth {r['truth']} huddle {r['huddle']} ccusage {r['ccusage']}"
        )


if __name__ == "__main__":
    main()
