"""The conformance table: every agent huddle reads, in one place. Each entry names its
source (as registered), its samples (each folder one home: what the agent's own folder
holds), where its live snapshots and their truth are, and a tiny counter of its tokens
taken straight from the records: written here from the format, never by calling the
adapter, so that a count the adapter gets wrong cannot agree with itself.

tests/test_conformance.py runs every check over every entry. A new agent joins with its
package, its name in sources/registry.py's BUILTIN, and an entry here (its samples
copied small into tests/fixtures/samples/<agent>/).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from conftest import SAMPLES
from huddle.model.times import parse_time

TOKENS = ("input", "output", "cache_read", "cache_write")
Counts = dict[str, int]


@dataclass(frozen=True)
class Snapshot:
    """A live snapshot: the agent's folder at `at`, and the state its truth gives one
    session (`files_tell`: whether the files alone tell it, or only the processes do)."""

    name: str
    folder: Path
    at: float
    session: str
    state: str
    files_tell: bool = True


@dataclass(frozen=True)
class Agent:
    source: str
    samples: list[Path]  # each the agent's folder for one home
    tokens: Callable[[Path], Counts]  # counted straight from the records of one sample
    grows: Callable[[Path], list[Path]] = lambda folder: []  # its files that are only appended to
    snapshots: list[Snapshot] = field(default_factory=list)
    truth: Callable[[Path], list[dict]] = lambda folder: []  # huddle-sample-truth/v1 sessions of one sample

    def settings_folders(self, folder: Path) -> dict[str, str]:
        return {self.source: str(folder)}


def _lines(path: Path) -> Iterable[dict]:
    for line in path.read_bytes().splitlines():
        if line.strip():
            d = json.loads(line)
            if isinstance(d, dict):
                yield d


def _total(rows: Iterable[Counts]) -> Counts:
    out = dict.fromkeys(TOKENS, 0)
    for r in rows:
        for k in TOKENS:
            out[k] += r.get(k, 0)
    return out


# -- Claude Code ---------------------------------------------------------------------------


def claude_tokens(config: Path) -> Counts:
    """Every assistant message.id once, anywhere in the folder (a fork's copy shares the
    id), with its final counts: the largest of each field its records carry."""
    best: dict[str, Counts] = {}
    for f in sorted(config.rglob("*.jsonl")):
        for d in _lines(f):
            m = d.get("message")
            if d.get("type") != "assistant" or not isinstance(m, dict) or not m.get("id") or not m.get("usage"):
                continue
            u = m["usage"]
            got = {
                "input": u.get("input_tokens") or 0,
                "output": u.get("output_tokens") or 0,
                "cache_read": u.get("cache_read_input_tokens") or 0,
                "cache_write": u.get("cache_creation_input_tokens") or 0,
            }
            was = best.setdefault(m["id"], got)
            for k in TOKENS:
                was[k] = max(was[k], got[k])
    return _total(best.values())


def claude_snapshots() -> list[Snapshot]:
    out = []
    for d in sorted((SAMPLES / "claude-live").glob("*/truth.json")):
        t = json.loads(d.read_text())
        for s in t["sessions"]:
            state = {"waiting_on_subagent": "waiting"}.get(s["state"], s["state"])
            out.append(Snapshot(d.parent.name, d.parent / "config", parse_time(t["taken_at"]), s["session_id"], state))
    return out


# -- Codex -------------------------------------------------------------------------------


def _codex_usage(u: dict) -> Counts:
    cached = u.get("cached_input_tokens") or 0
    written = u.get("cache_write_input_tokens") or 0
    return {
        "input": (u.get("input_tokens") or 0) - cached - written,
        "output": u.get("output_tokens") or 0,
        "cache_read": cached,
        "cache_write": written,
    }


def _rollouts(home: Path) -> list[list[dict]]:
    return [list(_lines(f)) for f in sorted((home / "sessions").rglob("rollout-*.jsonl"))]


def codex_records(home: Path) -> tuple[Counts, int]:
    """0.160+: one token_usage_record per model response, by response id (and how many)."""
    records: dict[str, Counts] = {}
    for lines in _rollouts(home):
        for d in lines:
            if d.get("type") == "token_usage_record":
                records.setdefault(d["payload"]["response_id"], _codex_usage(d["payload"]["usage"]))
    return _total(records.values()), len(records)


def codex_token_counts(home: Path) -> tuple[Counts, int]:
    """Older versions: each thread's token_count events from its own section (a forked
    child first copies its parent's lines), once per new total (and how many)."""
    counted = []
    for lines in _rollouts(home):
        metas = [i for i, d in enumerate(lines) if d.get("type") == "session_meta"]
        previous = None
        for d in lines[metas[-1] if metas else 0 :]:
            p = d.get("payload") or {}
            if d.get("type") != "event_msg" or p.get("type") != "token_count" or not p.get("info"):
                continue
            key = json.dumps(p["info"]["total_token_usage"], sort_keys=True)
            last = _codex_usage(p["info"]["last_token_usage"])
            if key != previous and (last["input"] or last["output"] or last["cache_read"]):
                previous = key
                counted.append(last)
    return _total(counted), len(counted)


def codex_tokens(home: Path) -> Counts:
    by_records = codex_records(home)
    return (by_records if by_records[1] else codex_token_counts(home))[0]


# What the files alone cannot tell (no process table): an approval asked by an execpolicy
# rule carries no hint in the call (03d); a TUI that quit leaves its thread loaded in the
# app-server, like an open TUI (08, 08d); a killed `codex exec` leaves its lock file (08y).
CODEX_FILES_CANNOT_TELL = {
    "03d-needs-you-approval-rule-tui",
    "08-ended-tui-quit",
    "08d-ended-detached-turn-finished",
    "08y-ended-exec-killed",
}


def codex_snapshots() -> list[Snapshot]:
    out = []
    for d in sorted((SAMPLES / "codex-live").glob("*/truth.json")):
        for t in json.loads(d.read_text()):
            state = {"waiting_on_subagent": "waiting"}.get(t["state"], t["state"])
            tell = d.parent.name not in CODEX_FILES_CANNOT_TELL
            out.append(
                Snapshot(d.parent.name, d.parent / "codex_home", parse_time(t["taken_at"]), t["thread_id"], state, tell)
            )
    return out


# -- Mistral Vibe ------------------------------------------------------------------------

_TOKEN_USAGE = re.compile(rb'"tokenUsage": ?(\{[^}]*\})')
# Unified stores whose own running total leaves out a model call the journal records
# (input, output): every completion is billed, so huddle counts it (test_usage_vibe).
VIBE_MISSED_BY_TOTALS = {
    "3.0.3-unified-subagent": (7_351, 31),
    "2.26.1-unified-subagent-running": (6_624, 41),
}


def vibe_tokens(home: Path) -> Counts:
    """The stores' own totals: a unified store's largest tokenUsage anywhere in it, a
    legacy session's meta.json stats (as `prompt` = input with the cached part, and
    output), plus the calls a store's total is known to leave out."""
    root = home / "logs" / "session"
    prompt = out = 0
    for store in (root / "unified").glob("*/") if (root / "unified").is_dir() else []:
        best = (0, 0)
        for f in store.rglob("*.json*"):
            for m in _TOKEN_USAGE.finditer(f.read_bytes()):
                d = json.loads(m.group(1))
                best = max(best, (d.get("inputTokens") or 0, d.get("outputTokens") or 0))
        prompt, out = prompt + best[0], out + best[1]
    for meta in root.rglob("meta.json"):
        if "unified" not in meta.parts:
            st = json.loads(meta.read_text()).get("stats") or {}
            prompt += st.get("session_prompt_tokens") or 0
            out += st.get("session_completion_tokens") or 0
    extra = VIBE_MISSED_BY_TOTALS.get(home.name, (0, 0))
    return {"prompt": prompt + extra[0], "output": out + extra[1]}


# -- Gemini CLI ----------------------------------------------------------------------------


def gemini_tokens(gemini: Path) -> Counts:
    """Each gemini message id once (the first record with its tokens), input net of the
    cached part with the tool tokens, output with the thoughts."""
    counted = []
    for f in sorted((gemini / "tmp").rglob("*.jsonl")):
        seen = set()
        for d in _lines(f):
            if d.get("type") == "gemini" and d.get("tokens") and d.get("id") not in seen:
                seen.add(d["id"])
                t = d["tokens"]
                counted.append(
                    {
                        "input": t["input"] - t["cached"] + t.get("tool", 0),
                        "cache_read": t["cached"],
                        "output": t["output"] + t["thoughts"],
                    }
                )
    return _total(counted)


def _sample_truth(folder: Path, up: int) -> list[dict]:
    f = folder.parents[up] / "truth.json"
    if not f.exists():
        return []
    data = json.loads(f.read_text())
    return data.get("sessions", []) if isinstance(data, dict) else []


def _live_snapshots(
    live: Path, data: Callable[[Path], Path], cannot_tell: set[str], session: str = ""
) -> list[Snapshot]:
    out = []
    for d in sorted(live.glob("*/truth.json")):
        t = json.loads(d.read_text())
        state, tell = LIVE_STATES[t["state"]], d.parent.name not in cannot_tell
        out.append(Snapshot(d.parent.name, data(d.parent), t["at"], t.get("session_id", session), state, tell))
    return out


# Gemini's file is the same while an approval waits and while the approved command runs,
# and after a final answer whether the TUI is open or has quit: only the processes tell.
GEMINI_FILES_CANNOT_TELL = {"01-needs-you-approval", "04-ended-after-quit"}
# OpenCode's database is byte-identical to the finished state once the TUI has exited.
OPENCODE_FILES_CANNOT_TELL = {"04-ended-after-exit"}
LIVE_STATES = {
    "needs-you-approval": "needs_you",
    "working-tool-running": "working",
    "your-turn-finished": "your_turn",
    "ended-after-quit": "ended",
    "ended-after-exit": "ended",
}


# -- OpenCode ------------------------------------------------------------------------------


def opencode_tokens(data: Path) -> Counts:
    """Every completed assistant message row once, output with the reasoning."""
    c = sqlite3.connect(f"file:{data}/opencode.db?mode=ro&readonly_shm=1", uri=True)
    try:
        counted = []
        for (raw,) in c.execute("SELECT data FROM message"):
            m = json.loads(raw)
            if m.get("role") != "assistant" or not m.get("time", {}).get("completed"):
                continue
            t = m["tokens"]
            counted.append(
                {
                    "input": t["input"],
                    "cache_read": t["cache"]["read"],
                    "cache_write": t["cache"].get("write") or 0,
                    "output": t["output"] + t["reasoning"],
                }
            )
        return _total(counted)
    finally:
        c.close()


def _opencode_data(snapshot: Path) -> Path:
    d = snapshot / "home" / ".local" / "share" / "opencode"
    if not d.exists():  # stored once: SAME_AS.txt names the identical snapshot
        d = snapshot.parent / "03-your-turn-finished" / "home" / ".local" / "share" / "opencode"
    return d


# -- the table ---------------------------------------------------------------------------

AGENTS: dict[str, Agent] = {
    a.source: a
    for a in (
        Agent(
            "claude",
            sorted((SAMPLES / "claude").glob("*/config"))
            + sorted((SAMPLES / "claude-history").glob("*/*/config"))
            + sorted((SAMPLES / "claude-live").glob("*/config")),
            claude_tokens,
            grows=lambda f: sorted((f / "projects").rglob("*.jsonl")),
            snapshots=claude_snapshots(),
        ),
        Agent(
            "codex",
            sorted((SAMPLES / "codex").glob("*/codex_home")) + sorted((SAMPLES / "codex-live").glob("*/codex_home")),
            codex_tokens,
            grows=lambda f: sorted((f / "sessions").rglob("rollout-*.jsonl")),
            snapshots=codex_snapshots(),
        ),
        Agent(
            "vibe",
            sorted(p.parent for p in (SAMPLES / "vibe").glob("*/logs")),
            vibe_tokens,
            # (a unified store's files are replaced whole: only the legacy ones only grow)
            grows=lambda f: sorted(p for p in f.rglob("*.jsonl") if "unified" not in p.parts),
        ),
        Agent(
            "gemini",
            sorted((SAMPLES / "gemini").glob("*/home/.gemini")),
            gemini_tokens,
            grows=lambda f: sorted((f / "tmp").rglob("*.jsonl")),
            snapshots=_live_snapshots(
                SAMPLES / "gemini" / "08-interactive-approval" / "live",
                lambda d: d / "home" / ".gemini",
                GEMINI_FILES_CANNOT_TELL,
            ),
            truth=lambda f: _sample_truth(f, 1),
        ),
        Agent(
            "opencode",
            sorted((SAMPLES / "opencode").glob("*/home/.local/share/opencode")),
            opencode_tokens,
            snapshots=_live_snapshots(
                SAMPLES / "opencode" / "08-interactive-approval" / "live",
                _opencode_data,
                OPENCODE_FILES_CANNOT_TELL,
                session="ses_dcef0f2aeffeV1elxP0UOfZR2z",  # (its truth names none: the one session)
            ),
            truth=lambda f: _sample_truth(f, 3),
        ),
    )
}


# Registered agents not in the table yet, each with what it lacks; their own test files
# check their samples meanwhile (qwen and pi also in tests/test_live_equals_cold.py).
PENDING = dict.fromkeys(
    ("copilot", "qwen", "pi", "kilo", "cline"),
    "merged on the old contract; its entry (samples, snapshots, a token counter) comes next",
)


def name_of(folder: Path) -> str:
    """A sample's name for a test id: its path under the samples."""
    head, *rest = folder.relative_to(SAMPLES).parts
    tail = ("config", "codex_home", "home", ".gemini", ".local", "share", "opencode")
    return "/".join([head, *(p for p in rest if p not in tail)])
