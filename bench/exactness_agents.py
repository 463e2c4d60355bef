"""Codex and Gemini CLI homes for bench/exactness.py: what their files hold, counted
straight from the records (never through huddle's readers), beside huddle's board and
ccusage's `codex session` / `gemini session`.

Codex (a CODEX_HOME: `sessions/` and `archived_sessions/`, any depth): one thread per
rollout, named by its first line (`session_meta.payload.id`, or the bare
`{"id","timestamp"}` head of rollouts from before session_meta, else the uuid its name
ends with); a session is a root thread with all its descendants (parent links of each
meta). A thread's spend is its last cumulative `total_token_usage` less what it started
with: the last total inside a forked child's copy of its parent's history (ordinals
below `subagent_history_start_ordinal`, or up to the child's own first turn), else its
first total less that total's last response (a thread that continues another's totals,
an `exec fork`, a file cut from the middle); a total that goes down starts a new count; per
field, the sum of its `token_usage_record`s where that is more (a live file). A rollout with no counts at
all (before token_count existed) is a session whose usage is unknown: huddle must say
so (`usage_unknown`), not zero. Sub-agents expected: child threads but guardian reviews.

Gemini (a `.gemini` folder): chat files under `tmp/<project>/chats/`: top-level
`session-*.json(l)` documents and logs, `<lead id>/*.json(l)` sub-agent runs; files
are grouped by the lead's session id (top-level files by their `sessionId`, a folder by
its name); a top-level file whose `kind` is "subagent" is a sub-agent. Tokens: each
gemini message id once per session (`input - cached`, `output + thoughts`, `cached`).
Standard library only.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
from pathlib import Path

KEYS = ("input", "output", "cache_read", "cache_write")
UUID_TAIL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
SKIP = {"node_modules", ".git", "stream"}


def _lines(path: Path):
    with open(path, "rb") as f:
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                yield d


def codex_homes(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        held = ("sessions" in dirnames or "archived_sessions" in dirnames) and "projects" not in dirnames
        if held and any(
            next(Path(dirpath, d).rglob("rollout-*.jsonl"), None) for d in ("sessions", "archived_sessions")
        ):
            out.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d not in SKIP]
    return sorted(out)


def gemini_dirs(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        if Path(dirpath).name == ".gemini" and "tmp" in dirnames:
            out.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d not in SKIP]
    return sorted(out)


# -- Codex ------------------------------------------------------------------------------


def _counts(t: dict) -> list[int]:
    def n(k: str) -> int:
        v = t.get(k)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    return [n("input_tokens"), n("cached_input_tokens"), n("cache_write_input_tokens"), n("output_tokens")]


class CodexThread:
    def __init__(self, path: Path):
        self.path = path
        self.id = ""
        self.parent = ""
        self.root_hint = ""
        self.guardian = False
        self.legacy = False  # before session_meta: no counts written at all
        self.talk = False
        self.counted = False  # any token_count with totals
        self.spend = [0, 0, 0, 0]  # input (incl. cached), cached, cache-written, output
        lines = list(_lines(path))
        first = lines[0] if lines else {}
        meta = first.get("payload") if first.get("type") == "session_meta" else None
        if isinstance(meta, dict):
            self.id = str(meta.get("id") or "")
            self.root_hint = str(meta.get("session_id") or "")
            self.parent = str(meta.get("parent_thread_id") or "")
            src = meta.get("source")
            sub = src.get("subagent") if isinstance(src, dict) else None
            if isinstance(sub, dict):
                spawn = sub.get("thread_spawn") or {}
                self.parent = self.parent or str(spawn.get("parent_thread_id") or "")
                self.guardian = sub.get("other") == "guardian"
            self.guardian = self.guardian or meta.get("thread_source") == "guardian_review"
            start = meta.get("subagent_history_start_ordinal")
        elif "id" in first and "type" not in first and "record_type" not in first:
            self.id, self.legacy, start = str(first.get("id") or ""), True, None
        else:
            start = None
            lines = [{}, *lines]  # (no head: its first line is a record like the others)
        if not self.id:
            m = UUID_TAIL.findall(path.stem)
            self.id = m[-1] if m else path.stem
        if self.parent == self.id:
            self.parent = ""
        self._count(lines[1:], start)

    def _count(self, lines: list[dict], start) -> None:
        copying = False
        copy_open = False
        base = None  # the totals this thread started from
        total = None
        records = [0, 0, 0, 0]  # its token_usage_records (0.160+), one per response
        for d in lines:
            t, p = d.get("type"), d.get("payload") if isinstance(d.get("payload"), dict) else {}
            pt = p.get("type")
            if t == "session_meta":
                if p.get("id") and p.get("id") != self.id:
                    copying = start is None  # (with ordinals, the ordinals say)
                continue
            in_copy = False
            if start is not None and isinstance(d.get("ordinal"), int):
                in_copy = d["ordinal"] < start
            elif copying:
                if t == "event_msg" and pt == "task_started":
                    att = p.get("turn_attribution") or {}
                    if att.get("parent_turn_id") or copy_open:
                        copying = False
                    else:
                        copy_open = True
                elif t == "event_msg" and pt in ("task_complete", "turn_aborted"):
                    copy_open = False
                in_copy = copying
            info = p.get("info") if t == "event_msg" and pt == "token_count" else None
            if in_copy:
                if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                    base = _counts(info["total_token_usage"])
                continue
            item = p if t == "response_item" else d if self.legacy else {}
            if item.get("type") in ("message", "function_call", "local_shell_call") or (
                t == "event_msg" and pt in ("user_message", "agent_message")
            ):
                self.talk = True
            if t == "token_usage_record" and isinstance(p.get("usage"), dict):
                records = [a + b for a, b in zip(records, _counts(p["usage"]))]
            if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
                continue
            self.counted = True
            now = _counts(info["total_token_usage"])
            if total is None:
                if base is None:  # what was there before its first response: a fork's, a cut file's
                    last = _counts(info.get("last_token_usage") or {})
                    base = [max(a - b, 0) for a, b in zip(now, last)]
                total = base
            if any(a < b for a, b in zip(now, total)):  # a count that went down: a new one from here
                total = [0, 0, 0, 0]
            self.spend = [s + a - b for s, a, b in zip(self.spend, now, total)]
            total = now
        # the records, where a total is still to come (a live file); the totals, where
        # they moved beyond the records (a compaction call has no record)
        self.spend = [max(a, b) for a, b in zip(self.spend, records)]
        self.counted = self.counted or any(records)

    def usage(self) -> list[int]:
        inp, cached, written, out = self.spend
        return [max(inp - cached - written, 0), out, cached, written]


class CodexTruth:
    def __init__(self, home: Path):
        files = sorted(p for d in ("sessions", "archived_sessions") for p in (home / d).rglob("rollout-*.jsonl"))
        self.threads: dict[str, CodexThread] = {}
        self.archived: set[str] = set()
        for f in files:
            th = CodexThread(f)
            self.threads.setdefault(th.id, th)
            if "archived_sessions" in f.relative_to(home).parts[:1]:
                self.archived.add(th.id)
        self.session_of = {tid: self._root(tid) for tid in self.threads}

    def _root(self, tid: str) -> str:
        seen = set()
        while tid not in seen:
            seen.add(tid)
            th = self.threads.get(tid)
            if th is None or not th.parent:
                return tid
            tid = th.parent if th.parent in self.threads or not th.root_hint else th.root_hint
        return tid

    def sessions(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for tid, th in self.threads.items():
            sid = self.session_of[tid]
            s = out.setdefault(
                sid, {"talk": False, "tokens": [0, 0, 0, 0], "subs": 0, "counted": False, "legacy": False}
            )
            s["talk"] |= th.talk
            s["counted"] |= th.counted
            s["legacy"] |= th.legacy and tid == sid
            s["tokens"] = [a + b for a, b in zip(s["tokens"], th.usage())]
            if tid != sid and not th.guardian:
                s["subs"] += 1
        for sid, s in out.items():
            s["archived"] = sid in self.archived
        return out


def ccusage_codex(exe: str, home: Path, env: dict) -> dict[str, list[int]]:
    """File stem -> [input net of cache, output, cache read, cache write]."""
    r = subprocess.run([exe, "codex", "session", "--json", "--offline"], env=env, capture_output=True, text=True)
    try:
        rows = json.loads(r.stdout).get("sessions", [])
    except ValueError:
        return {}
    out: dict[str, list[int]] = {}
    for row in rows:
        stem = str(row.get("sessionFile") or "")
        c = [int(row.get(k) or 0) for k in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")]
        out[stem] = [a + b for a, b in zip(out.get(stem, [0, 0, 0, 0]), c)]
    return out


# -- Gemini -----------------------------------------------------------------------------


class GeminiTruth:
    def __init__(self, gemini: Path):
        self.groups: dict[str, dict] = {}
        for chats in sorted((gemini / "tmp").glob("*/chats")):
            for f in sorted(chats.rglob("*.json*")):
                if f.suffix not in (".json", ".jsonl"):
                    continue
                nested = f.parent != chats
                recs, head = self._records(f)
                sid = str(head.get("sessionId") or "")
                if nested:
                    lead, sub = f.parent.relative_to(chats).parts[0], True
                elif not f.name.startswith("session-") or not sid:
                    continue
                else:
                    lead, sub = sid, head.get("kind") == "subagent"
                g = self.groups.setdefault(lead, {"talk": False, "ids": {}, "subs": 0, "counted": False})
                g["subs"] += sub
                for m in recs:
                    if m.get("type") in ("user", "gemini", "info", "warning", "error") and not sub:
                        g["talk"] = True
                    tk = m.get("tokens")
                    if m.get("type") == "gemini" and isinstance(tk, dict) and m.get("id"):
                        g["counted"] = True
                        cached = int(tk.get("cached") or 0)
                        g["ids"].setdefault(
                            m["id"],
                            [
                                max(int(tk.get("input") or 0) - cached, 0) + int(tk.get("tool") or 0),
                                int(tk.get("output") or 0) + int(tk.get("thoughts") or 0),
                                cached,
                                0,
                            ],
                        )

    @staticmethod
    def _records(f: Path) -> tuple[list[dict], dict]:
        if f.suffix == ".json":
            try:
                doc = json.loads(f.read_bytes())
            except ValueError:
                return [], {}
            if not isinstance(doc, dict):
                return [], {}
            msgs = doc.get("messages") if isinstance(doc.get("messages"), list) else []
            return [m for m in msgs if isinstance(m, dict)], doc
        recs = list(_lines(f))
        head = recs[0] if recs and "sessionId" in recs[0] else {}
        return [r for r in recs if "type" in r and "$set" not in r], head

    def sessions(self) -> dict[str, dict]:
        out = {}
        for lead, g in self.groups.items():
            tokens = [0, 0, 0, 0]
            for c in g["ids"].values():
                tokens = [a + b for a, b in zip(tokens, c)]
            out[lead] = {"talk": g["talk"], "tokens": tokens, "subs": g["subs"], "counted": g["counted"]}
        return out


def ccusage_gemini(exe: str, env: dict) -> dict[str, list[int]]:
    r = subprocess.run([exe, "gemini", "session", "--json", "--offline"], env=env, capture_output=True, text=True)
    try:
        rows = json.loads(r.stdout).get("sessions", [])
    except ValueError:
        return {}
    return {
        str(row.get("sessionId")): [
            int(row.get(k) or 0) for k in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")
        ]
        for row in rows
    }


# -- rows -------------------------------------------------------------------------------


def rows_for(kind: str, where: Path, board: dict[str, dict], truth: dict[str, dict], cc, cc_of: dict) -> list[dict]:
    out = []
    for sid in sorted(set(truth) | set(board)):
        t = truth.get(sid) or {"talk": False, "tokens": [0, 0, 0, 0], "subs": 0, "counted": False}
        row = board.get(sid)
        agents = [a for a in (row or {}).get("agents", []) if a.get("parent") and not a.get("quiet")]
        out.append(
            {
                "agent": kind,
                "config": str(where),
                "session": sid,
                "expected": bool(t["talk"] or any(t["tokens"])),
                "listed": row is not None,
                "sub_agents": len(agents),
                "sub_agents_expected": t["subs"],
                "counted": t["counted"],
                "truth": t["tokens"],
                "huddle": [(row or {}).get("usage", {}).get(k, 0) for k in KEYS],
                "ccusage": cc_of.get(sid, [0, 0, 0, 0]) if cc is not None else None,
                "usage_unknown": bool(t.get("legacy")),
                "said_unknown": bool((row or {}).get("usage_unknown")),
                "archived": bool(t.get("archived")),
                "said_archived": bool((row or {}).get("archived")),
                "usage_note": (row or {}).get("usage_note", ""),
            }
        )
    return out


def _env(base: dict, tmp: str, **kw: str) -> dict:
    env = {k: v for k, v in base.items() if not k.startswith(("HUDDLE_", "CLAUDE_", "CODEX_", "VIBE_", "GEMINI_"))}
    env.update(HOME=tmp, HUDDLE_HOME=os.path.join(tmp, "hh"), TZ="UTC", **kw)
    return env


def _board(py: str, env: dict, source: str) -> dict[str, dict]:
    r = subprocess.run([py, "-m", "huddle", "status", "--json"], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"huddle status failed: {r.stderr.strip()[-300:]}")
    return {s["id"]: s for s in json.loads(r.stdout)["sessions"] if s.get("source") == source}


def measure(root: Path, py: str, cc: str | None) -> list[dict]:
    """Every Codex home and Gemini folder under root, as rows (see rows_for)."""
    import tempfile

    out: list[dict] = []
    for home in codex_homes(root):
        truth = CodexTruth(home)
        with tempfile.TemporaryDirectory(prefix="exactness-") as tmp:
            env = _env(os.environ, tmp, CODEX_HOME=str(home), HUDDLE_SOURCES="codex")
            board = _board(py, env, "codex")
            per_file = ccusage_codex(cc, home, env) if cc else {}
        by_session: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
        for tid, th in truth.threads.items():
            got = per_file.get(th.path.stem)
            if got:
                s = by_session[truth.session_of[tid]]
                for i in range(4):
                    s[i] += got[i]
        out += rows_for("codex", home, board, truth.sessions(), cc, dict(by_session))
    for gem in gemini_dirs(root):
        truth = GeminiTruth(gem)
        with tempfile.TemporaryDirectory(prefix="exactness-") as tmp:
            env = _env(os.environ, tmp, HUDDLE_GEMINI_DIR=str(gem), HUDDLE_SOURCES="gemini")
            board = _board(py, env, "gemini")
            cc_rows = ccusage_gemini(cc, _env(os.environ, tmp, GEMINI_DATA_DIR=str(gem))) if cc else {}
        out += rows_for("gemini", gem, board, truth.sessions(), cc, cc_rows)
    return out


def table(rows: list[dict], group) -> list[str]:
    """The Codex and Gemini lines of the report: per group, what was found and counted."""
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        groups[group(r)].append(r)
    lines = []
    for name in sorted(groups):
        g = groups[name]
        exp = [r for r in g if r["expected"]]
        tok = [r for r in exp if r["counted"]]
        unknown = [r for r in exp if r["usage_unknown"]]
        cc = None if any(r["ccusage"] is None for r in tok) else sum(r["ccusage"] == r["truth"] for r in tok)
        lines.append(
            f"{name:24} {len(exp):>8} {sum(r['listed'] for r in exp):>6}"
            f" {sum(r['listed'] and not r['expected'] for r in g):>5}"
            f" {sum(r['sub_agents'] for r in exp):>4}/{sum(r['sub_agents_expected'] for r in exp):<5}"
            f" {sum(r['sub_agents'] == r['sub_agents_expected'] for r in exp):>5} {len(tok):>9}"
            f" {sum(r['huddle'] == r['truth'] for r in tok):>12} {'-' if cc is None else cc:>13}"
            f" {sum(r['listed'] and r['said_unknown'] for r in unknown)}/{len(unknown)} unknown said"
            f" {sum(r['said_archived'] for r in exp if r['archived'])}/{sum(r['archived'] for r in exp)} archived"
        )
    return lines
