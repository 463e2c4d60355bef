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
    shown: bool = True  # its session is on the board (false: the agent has written no file of it yet)


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


_SAME_AS = re.compile(r"\.\./([^/\s]+)/")


def _stored(snapshot: Path) -> Path:
    """The snapshot folder whose files were stored: one byte-identical to an earlier
    moment keeps only SAME_AS.txt, naming it."""
    same = snapshot / "SAME_AS.txt"
    m = _SAME_AS.search(same.read_text()) if same.exists() else None
    return snapshot.parent / m.group(1) if m else snapshot


def _live_snapshots(
    scenarios: Iterable[Path], data: Callable[[Path], Path], cannot_tell: set[str], unshown: Iterable[str] = ()
) -> list[Snapshot]:
    """Each scenario's `live/*/truth.json`, named `<scenario>/<moment>`; the session is
    the truth's, else the one the scenario's truth lists."""
    out = []
    for scn in scenarios:
        listed = [t["session_id"] for t in _sample_truth(scn / "x", 0)]
        for d in sorted((scn / "live").glob("*/truth.json")):
            t = json.loads(d.read_text())
            name = f"{scn.name}/{d.parent.name}"
            sid = t.get("session_id") or (listed[0] if len(listed) == 1 else "")
            state, tell, shown = LIVE_STATES[t["state"]], name not in cannot_tell, name not in unshown
            out.append(Snapshot(name, data(_stored(d.parent)), t["at"], sid, state, tell, shown))
    return out


LIVE_STATES = {
    "needs-you-approval": "needs_you",
    "needs-you-question": "needs_you",
    "waiting-on-subagent": "waiting",
    "working-tool-running": "working",
    "working-streaming": "working",
    "working-model-streaming": "working",
    "your-turn-finished": "your_turn",
    "your-turn-after-branch": "your_turn",
    "ended-after-quit": "ended",
    "ended-after-exit": "ended",
}
# Gemini's file is the same while an approval waits and while the approved command runs,
# and after a final answer whether the TUI is open or has quit: only the processes tell.
GEMINI_FILES_CANNOT_TELL = {
    "08-interactive-approval/01-needs-you-approval",
    "08-interactive-approval/04-ended-after-quit",
}
# OpenCode's database is byte-identical to the finished state once the TUI has exited.
OPENCODE_FILES_CANNOT_TELL = {"08-interactive-approval/04-ended-after-exit"}


# -- OpenCode ------------------------------------------------------------------------------


def _opencode_db_tokens(db: Path, skip_older_than_session: bool = False) -> Counts:
    c = sqlite3.connect(f"file:{db}?mode=ro&readonly_shm=1", uri=True)
    try:
        made = dict(c.execute("SELECT id, time_created FROM session"))
        counted = []
        for session, raw in c.execute("SELECT session_id, data FROM message"):
            m = json.loads(raw)
            if m.get("role") != "assistant" or not m.get("time", {}).get("completed"):
                continue
            if skip_older_than_session and m["time"]["created"] < made[session]:
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


def opencode_tokens(data: Path) -> Counts:
    """Every completed assistant message row once, output with the reasoning."""
    return _opencode_db_tokens(data / "opencode.db")


# -- GitHub Copilot CLI ------------------------------------------------------------------------


def copilot_tokens(home: Path) -> Counts:
    """Every `session.usage_record` once by its apiCallId (lead and sub-agents share the
    one events.jsonl), input net of the cached part; never a `session.shutdown`, whose
    metrics repeat the whole session at every exit."""
    records: dict[str, Counts] = {}
    for f in sorted((home / "session-state").glob("*/events.jsonl")):
        for d in _lines(f):
            u = (d.get("data") or {}).get("usage") if d.get("type") == "session.usage_record" else None
            if isinstance(u, dict):
                read, written = u.get("cacheReadTokens") or 0, u.get("cacheWriteTokens") or 0
                records.setdefault(
                    u.get("apiCallId") or d["id"],
                    {
                        "input": (u.get("inputTokens") or 0) - read - written,
                        "output": u.get("outputTokens") or 0,
                        "cache_read": read,
                        "cache_write": written,
                    },
                )
    return _total(records.values())


# -- Qwen Code ---------------------------------------------------------------------------------


def qwen_tokens(home: Path) -> Counts:
    """Each `assistant` record's usageMetadata, in the lead's chat file and its sub-agents'
    files (a record is one response: a sub-agent's first is split, the usage on one half);
    never the `ui_telemetry` copies nor `usage_record.jsonl` (cumulative, side calls in it).
    Candidates include the thoughts; input is net of the cached part."""
    counted = []
    for f in sorted((home / "projects").glob("*/*/**/*.jsonl")):
        for d in _lines(f):
            u = d.get("usageMetadata") if d.get("type") == "assistant" else None
            if isinstance(u, dict):
                cached = u.get("cachedContentTokenCount") or 0
                counted.append(
                    {
                        "input": (u.get("promptTokenCount") or 0) - cached,
                        "cache_read": cached,
                        "output": u.get("candidatesTokenCount") or 0,
                    }
                )
    return _total(counted)


# -- Pi ------------------------------------------------------------------------------------------


def _pi_usage(u: dict) -> Counts:
    return {
        "input": u.get("input") or 0,
        "output": u.get("output") or 0,
        "cache_read": u.get("cacheRead") or 0,
        "cache_write": u.get("cacheWrite") or 0,
    }


def pi_tokens(agent: Path) -> Counts:
    """Every entry with usage once: assistant messages (all branches: each was paid for),
    summaries and compactions, and the example extension's sub-agents' assistant messages
    in a tool result's details. A fork's file copies its parent's entries with their ids:
    those count in the parent."""
    files = sorted((agent / "sessions").rglob("*.jsonl"))
    ids = {f.name: {d.get("id") for d in _lines(f)} for f in files}
    counted = []
    for f in files:
        lines = list(_lines(f))
        parent = lines[0].get("parentSession") if lines else None
        copied = ids.get(Path(parent).name, set()) if isinstance(parent, str) else set()
        for d in lines[1:]:
            if d.get("id") in copied:
                continue
            m = d.get("message") if d.get("type") == "message" else d
            if not isinstance(m, dict):
                continue
            if d.get("type") != "message" or m.get("role") == "assistant":
                if isinstance(m.get("usage"), dict):
                    counted.append(_pi_usage(m["usage"]))
            elif m.get("role") == "toolResult" and isinstance(m.get("details"), dict):
                for r in m["details"].get("results") or []:
                    for sub in r.get("messages") or []:
                        if sub.get("role") == "assistant" and isinstance(sub.get("usage"), dict):
                            counted.append(_pi_usage(sub["usage"]))
    return _total(counted)


# -- Kilo CLI ----------------------------------------------------------------------------------


def kilo_tokens(data: Path) -> Counts:
    """OpenCode's schema in kilo.db: every completed assistant message once, output with
    the reasoning; a fork's copies (new ids, their original times: before the session
    was made) count in the session they were copied from."""
    return _opencode_db_tokens(data / "kilo.db", skip_older_than_session=True)


# -- Cline CLI ---------------------------------------------------------------------------------


def cline_tokens(data: Path) -> Counts:
    """Each assistant message's metrics, in the lead's `<id>.messages.json` and its
    sub-agents' `agent_*.messages.json`; `inputTokens` includes the cached part."""
    counted = []
    for f in sorted((data / "sessions").glob("*/*.messages.json")):
        doc = json.loads(f.read_bytes())
        for m in (doc.get("messages") or []) if isinstance(doc, dict) else []:
            u = m.get("metrics") if m.get("role") == "assistant" else None
            if isinstance(u, dict):
                read = u.get("cacheReadTokens") or 0
                counted.append(
                    {
                        "input": (u.get("inputTokens") or 0) - read,
                        "output": u.get("outputTokens") or 0,
                        "cache_read": read,
                        "cache_write": u.get("cacheWriteTokens") or 0,
                    }
                )
    return _total(counted)


# Copilot writes a mark for every moment (a permission asked, answered; the shutdown), and
# Cline keeps its status in its record: their files tell every state.
COPILOT_FILES_CANNOT_TELL: set[str] = set()
CLINE_FILES_CANNOT_TELL: set[str] = set()
# Qwen writes no record of an approval it asks (the file is byte-identical while it runs),
# and its final answer went through a write queue later than the copy was taken.
QWEN_FILES_CANNOT_TELL = {
    "08-interactive-approval/01-needs-you-approval",
    "08-interactive-approval/04-your-turn-finished",
}
# Pi writes nothing while an extension's dialog asks, nor when it exits: the processes tell.
PI_FILES_CANNOT_TELL = {
    f"{scn}/{moment}"
    for scn in ("08-interactive-approval", "08-interactive-approval__v0.73.1")
    for moment in ("02-needs-you-approval", "05-ended-after-exit")
} | {"12-tree-compact/02-ended-after-exit", "12-tree-compact__v0.73.1/02-ended-after-exit"}
# Pi 0.73.1 writes a session's file at its first response: while that streams, no session.
PI_NO_FILE_YET = {"08-interactive-approval__v0.73.1/01-working-model-streaming"}
# Kilo's database is byte-identical to the finished state once the TUI has exited.
KILO_FILES_CANNOT_TELL = {"08-interactive-approval/05-ended-after-exit"}


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
                [SAMPLES / "gemini" / "08-interactive-approval"],
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
                [SAMPLES / "opencode" / "08-interactive-approval"],
                lambda d: d / "home" / ".local" / "share" / "opencode",
                OPENCODE_FILES_CANNOT_TELL,
            ),
            truth=lambda f: _sample_truth(f, 3),
        ),
        Agent(
            "copilot",
            sorted((SAMPLES / "copilot").glob("*/home/.copilot"))
            + sorted((SAMPLES / "copilot").glob("*/live/*/home/.copilot")),
            copilot_tokens,
            grows=lambda f: sorted((f / "session-state").glob("*/events.jsonl")),
            snapshots=_live_snapshots(
                [SAMPLES / "copilot" / "07-subagent", SAMPLES / "copilot" / "08-interactive-approval"],
                lambda d: d / "home" / ".copilot",
                COPILOT_FILES_CANNOT_TELL,
            ),
            truth=lambda f: _sample_truth(f, 1),
        ),
        Agent(
            "qwen",
            sorted((SAMPLES / "qwen").glob("*/home/.qwen")) + sorted((SAMPLES / "qwen").glob("*/live/*/home/.qwen")),
            qwen_tokens,
            grows=lambda f: sorted((f / "projects").glob("*/*/**/*.jsonl")),
            snapshots=_live_snapshots(
                [SAMPLES / "qwen" / "07-subagent", SAMPLES / "qwen" / "08-interactive-approval"],
                lambda d: d / "home" / ".qwen",
                QWEN_FILES_CANNOT_TELL,
            ),
            truth=lambda f: _sample_truth(f, 1),
        ),
        Agent(
            "pi",
            sorted((SAMPLES / "pi").glob("*/home/.pi/agent"))
            + sorted(
                p
                for p in (SAMPLES / "pi").glob("*/live/*/home/.pi/agent")
                if f"{p.parents[4].name}/{p.parents[2].name}" not in PI_NO_FILE_YET
            ),
            pi_tokens,
            grows=lambda f: sorted((f / "sessions").rglob("*.jsonl")),
            snapshots=_live_snapshots(
                sorted(p.parent for p in (SAMPLES / "pi").glob("*/live")),
                lambda d: d / "home" / ".pi" / "agent",
                PI_FILES_CANNOT_TELL,
                PI_NO_FILE_YET,
            ),
            truth=lambda f: _sample_truth(f, 2),
        ),
        Agent(
            "kilo",
            sorted((SAMPLES / "kilo").glob("*/home/.local/share/kilo"))
            + sorted((SAMPLES / "kilo").glob("*/live/*/home/.local/share/kilo")),
            kilo_tokens,
            snapshots=_live_snapshots(
                [SAMPLES / "kilo" / "08-interactive-approval"],
                lambda d: d / "home" / ".local" / "share" / "kilo",
                KILO_FILES_CANNOT_TELL,
            ),
            truth=lambda f: _sample_truth(f, 3),
        ),
        Agent(
            "cline",
            sorted((SAMPLES / "cline").glob("*/home/.cline/data"))
            + sorted((SAMPLES / "cline").glob("*/live/*/home/.cline/data")),
            cline_tokens,
            snapshots=_live_snapshots(
                sorted(p.parent for p in (SAMPLES / "cline").glob("*/live")),
                lambda d: d / "home" / ".cline" / "data",
                CLINE_FILES_CANNOT_TELL,
            ),
            truth=lambda f: _sample_truth(f, 2),
        ),
    )
}


def name_of(folder: Path) -> str:
    """A sample's name for a test id: its path under the samples."""
    head, *rest = folder.relative_to(SAMPLES).parts
    tail = ("config", "codex_home", "home", ".gemini", ".local", "share", "opencode", "kilo", ".copilot", ".qwen")
    tail += (".pi", "agent", ".cline", "data")
    return "/".join([head, *(p for p in rest if p not in tail)])
