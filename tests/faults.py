"""The fault matrix (issue 11): what a hostile or unlucky machine does to the agents'
files, against every reader, with a running server and a cold read.

A world is built from the real samples: Claude Code (sub-agents, a custom title, a
registry entry), Codex (sub-agents, a session index), Vibe (a unified store with its
journal, a legacy session with a sub-agent, a lock, config.toml) and a hosted run.
Each case takes one file (or folder) of one reader, does one thing to it, and checks:

- no hang: the server answers and the watcher keeps refreshing, a cold read ends
  (every wait is bounded; a case that overruns is killed and counted as a hang);
- others untouched: every session the fault does not concern reads as before;
- one line per problem: a fault that is a problem is said in exactly one line (a
  note, a row's error or a session's problem) naming the file; none floods;
- nothing lost: after a hostile line, a valid line appended is read (the canary);
- recovery: once the fault is undone, the server and a cold read give the board of
  before again, event for event.

Each case runs in a forked child (killed if it overruns), as an ordinary user when
the tests run as root (root reads a mode-000 file). Only the public library is used
(Huddle, ServerThread, board_json), so bench/bench_faults.py runs the same matrix
against older code too, for the before/after figures.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import stat
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from said import as_json

SAMPLES = Path(__file__).parent / "fixtures" / "samples"
NOBODY = 65534
FAST = {"poll_watched": 0.3, "poll_unwatched": 0.2}
CASE_LIMIT = 90.0  # seconds a whole case may take before it counts as a hang
WAIT = 15.0  # seconds any one wait may take
CLI_FAULTS = ("future", "huge")  # the real `huddle status --json` runs too (a year 9999 once made it exit 1)
BIG_LINE = 100 << 20  # the 100 MB line
SPARSE = 2 << 30  # the 2 GB sparse file


# -- the world ---------------------------------------------------------------------------


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True)


def build_world(root: Path) -> None:
    """Agent folders from the samples, under `root` (see the module's text)."""
    c = root / "claude"
    for name in ("02-subagents", "10-interactive-tmux"):
        _copy(SAMPLES / "claude" / name / "config" / "projects", c / "projects")
    live = SAMPLES / "claude-live" / "16-needs-you-subagent-permission" / "config"
    _copy(live / "projects", c / "projects")
    _copy(live / "sessions", c / "sessions")
    x = root / "codex"
    _copy(SAMPLES / "codex" / "subagents_v2" / "codex_home" / "sessions", x / "sessions")
    _copy(SAMPLES / "codex" / "shell" / "codex_home" / "sessions", x / "sessions")
    index = []  # thread names, as Codex appends them, for the world's own threads
    for p in sorted((x / "sessions").rglob("rollout-*.jsonl")):
        meta = json.loads(p.read_bytes().split(b"\n", 1)[0])["payload"]
        if not meta.get("parent_thread_id") and "subagent" not in json.dumps(meta.get("source", "")):
            index.append(
                {"id": meta["id"], "thread_name": f"named {meta['id'][-4:]}", "updated_at": meta.get("timestamp")}
            )
    (x / "session_index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in index))
    _codex_legacy(x / "sessions" / "2025" / "08" / "31")
    _copy(SAMPLES / "codex" / "qa" / "codex_home" / "sessions", x / "archived_sessions" / "in")
    for p in list((x / "archived_sessions" / "in").rglob("rollout-*.jsonl")):  # archived: flat
        p.rename(x / "archived_sessions" / p.name)
    shutil.rmtree(x / "archived_sessions" / "in")
    v = root / "vibe" / "logs" / "session"
    for name in ("3.0.3-unified-bash", "2.26.1-legacy-subagent", "2.26.1-legacy-approval-waiting"):
        _copy(SAMPLES / "vibe" / name / "logs" / "session", v)
    (root / "vibe" / "config.toml").write_text('[session_logging]\nsave_dir = "logs/session"\n')
    _hosted_run(root / "hh" / "runs" / "r1", SAMPLES / "claude-stream" / "01-basic-tools")
    _telemetry(root / "hh")
    _copy(SAMPLES / "gemini" / "07-subagent" / "home" / ".gemini", root / "gemini")
    _copy(SAMPLES / "copilot" / "07-subagent" / "home" / ".copilot", root / "copilot")
    _copy(SAMPLES / "copilot" / "08-interactive-approval" / "home" / ".copilot", root / "copilot")
    _copy(SAMPLES / "qwen" / "07-subagent" / "home" / ".qwen" / "projects", root / "qwen" / "projects")
    _copy(
        SAMPLES / "qwen" / "08-interactive-approval" / "live" / "01-needs-you-approval" / "home" / ".qwen",
        root / "qwen",
    )
    _copy(SAMPLES / "pi" / "07-subagent-extension" / "home" / ".pi" / "agent", root / "pi")
    _copy(SAMPLES / "cline" / "07-subagent" / "home" / ".cline" / "data" / "sessions", root / "cline" / "sessions")
    _copy(SAMPLES / "opencode" / "07-subagent" / "home" / ".local" / "share" / "opencode", root / "opencode")
    (root / "opencode-state").mkdir()
    _copy(SAMPLES / "kilo" / "07-subagent" / "home" / ".local" / "share" / "kilo", root / "kilo")  # OpenCode's reader
    (root / "kilo-state").mkdir()
    (root / "outside").mkdir()
    (root / "home").mkdir()


def _telemetry(home: Path) -> None:
    """A telemetry-only Claude Code session, as `huddle serve --otlp` keeps it."""
    from huddle.otel import otlp
    from huddle.otel.telemetry import Store
    from test_otlp_receiver import TURN, claude_logs

    Store(str(home)).take(list(otlp.logs(claude_logs(TURN))), "logs")


def _telemetry_canary(p: Path, text: str) -> bytes:
    return json.dumps({"t": 1796533400.0, "k": "prompt", "text": text, "key": f"canary:{text}"}).encode()


def _codex_legacy(day: Path) -> None:
    """A rollout from before session_meta (codex-rs rollout.rs, summer 2025): a bare head,
    bare items, state lines (tests/test_codex_history.py writes the same shape)."""
    tid = "40cb3c9c-9557-4cb0-b9cf-f6661872da35"

    def msg(role, kind, text):
        return {
            "type": "message",
            "id": None,
            "role": role,
            "content": [{"type": kind, "text": text}],
        }

    recs = [
        {"id": tid, "timestamp": "2025-08-31T11:51:11.655Z", "instructions": "", "git": {"branch": "main"}},
        {"record_type": "state"},
        msg("user", "input_text", "<environment_context>\n  <cwd>/home/dev/old</cwd>\n</environment_context>"),
        msg("user", "input_text", "what is the date today"),
        {"type": "function_call", "id": None, "name": "shell", "arguments": '{"command":["date"]}', "call_id": "c1"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output":"2025-08-31\\n","metadata":{"exit_code":0}}',
        },
        msg("assistant", "output_text", "2025-08-31"),
        {"record_type": "state"},
    ]
    day.mkdir(parents=True)
    (day / f"rollout-2025-08-31T11-51-11-{tid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def _hosted_run(d: Path, capture_dir: Path) -> None:
    """A finished hosted run, as `huddle host` writes it, from a Claude stream capture."""
    capture = sorted(capture_dir.glob("*.jsonl"))[0]
    recs = [json.loads(x) for x in capture.read_bytes().splitlines() if x.strip()]
    t = 1796126186.0
    lines = [
        {
            "seq": 1,
            "t": t,
            "kind": "host",
            "host_pid": 1,
            "host_start": 1,
            "socket": str(d / "host.sock"),
            "dir": str(d),
        },
        {"seq": 2, "t": t, "kind": "started", "pid": 2, "start": 1, "argv": ["claude", "-p"], "cwd": "/home/dev"},
    ]
    for i, r in enumerate(recs):
        lines.append({"seq": 3 + i, "t": t + 0.01 * i, "kind": "stdout", "json": r})
    n = len(lines) + 1
    ask = {
        "type": "permission",
        "tool": "Bash",
        "summary": "Bash: make",
        "offers": ["allow", "deny"],
        "call": "toolu_x",
    }
    lines.append({"seq": n, "t": t + 0.5, "kind": "ask", "request": n, **ask, "input": {"command": "make"}})
    lines.append({"seq": n + 1, "t": t + 0.6, "kind": "answer", "request": n, "choice": "allow", "by": "web"})
    n += 2
    lines.append(
        {
            "seq": n,
            "t": t + 1,
            "kind": "exited",
            "status": 0,
            "signal": None,
            "reason": "exit status 0",
            "stopped": False,
        }
    )
    d.mkdir(parents=True)
    (d / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def settings_of(root: Path):
    from huddle.sources import Settings

    return Settings(
        folders={
            "claude": str(root / "claude"),
            "codex": str(root / "codex"),
            "vibe": str(root / "vibe"),
            "gemini": str(root / "gemini"),
            "copilot": str(root / "copilot"),
            "qwen": str(root / "qwen"),
            "pi": str(root / "pi"),
            "cline": str(root / "cline"),
            "opencode": str(root / "opencode"),
            "opencode-state": str(root / "opencode-state"),
            "kilo": str(root / "kilo"),
            "kilo-state": str(root / "kilo-state"),
        },
        huddle_home=str(root / "hh"),
    )


# -- targets: one file or folder of one reader ---------------------------------------------


def _first(root: Path, pattern: str, pick: Callable[[Path], bool] = lambda p: True) -> Path:
    for p in sorted(root.glob(pattern)):
        if pick(p):
            return p
    raise LookupError(f"no {pattern} in the world")


def _lines(p: Path) -> list[dict]:
    """The records of a file that parse (a hostile one appended by a fault does not)."""
    out = []
    for x in p.read_bytes().splitlines():
        try:
            val = json.loads(x)
        except (ValueError, RecursionError):
            continue
        if isinstance(val, dict):
            out.append(val)
    return out


def _claude_canary(p: Path, text: str) -> bytes:
    recs = _lines(p)
    base = next(r for r in recs if r.get("type") == "user" and isinstance(r.get("message", {}).get("content"), str))
    last = next(r for r in reversed(recs) if r.get("uuid"))
    rec = dict(base, uuid=str(uuid.uuid4()), parentUuid=last["uuid"], timestamp=last.get("timestamp"))
    rec["message"] = {"role": "user", "content": text}
    rec.pop("promptId", None)
    return json.dumps(rec).encode()


def _codex_canary(p: Path, text: str) -> bytes:
    recs = _lines(p)
    base = next(
        r
        for r in recs
        if r.get("type") == "response_item"
        and r["payload"].get("type") == "message"
        and r["payload"].get("role") == "assistant"
    )
    rec = json.loads(json.dumps(base))
    rec["timestamp"] = recs[-1].get("timestamp", rec.get("timestamp"))
    if "ordinal" in rec:
        rec["ordinal"] = max(r.get("ordinal", 0) for r in recs) + 1
    rec.pop("metadata", None)
    rec["payload"]["id"] = "msg_canary_" + uuid.uuid4().hex[:8]
    rec["payload"]["content"] = [{"type": "output_text", "text": text, "annotations": []}]
    return json.dumps(rec).encode()


def _codex_legacy_canary(p: Path, text: str) -> bytes:
    return json.dumps(
        {"type": "message", "id": None, "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    ).encode()


def _index_canary(p: Path, text: str) -> bytes:
    first = _lines(p)[0]
    return json.dumps({"id": first["id"], "thread_name": text, "updated_at": first.get("updated_at")}).encode()


def _journal_canary(p: Path, text: str) -> bytes:
    store = p.parent.parent
    seq = int(p.stem)
    for q in (p, *sorted(store.glob("journal/*.jsonl"))):
        for r in _lines(q):
            n = r.get("sequence", 0)
            if isinstance(n, int) and n < 1 << 40:  # not a hostile one
                seq = max(seq, n + 1)
    sid = store.name
    entry = {
        "content": [{"text": text, "type": "text"}],
        "createdAt": 1796008176884,
        "generationStatus": "completed",
        "id": "user-canary-" + uuid.uuid4().hex[:8],
        "inputEntryId": None,
        "relatedEntryId": None,
        "role": "user",
        "sessionId": sid,
        "source": "turn_start",
        "turnId": "turn-canary",
        "type": "message",
        "updatedAt": 1796008176884,
    }
    rec = {
        "payload": {"delta": [{"entry": entry, "op": "append_entry"}]},
        "recovery_journal_record_version": 1,
        "sequence": seq,
        "type": "projection_delta",
    }
    return json.dumps(rec).encode()


def _legacy_canary(p: Path, text: str) -> bytes:
    return json.dumps({"role": "user", "content": text, "injected": False, "message_id": str(uuid.uuid4())}).encode()


def _hosted_canary(p: Path, text: str) -> bytes:
    recs = _lines(p)
    seq = max(r["seq"] for r in recs) + 1
    sid = next((r["json"].get("session_id") for r in recs if r.get("kind") == "stdout"), "s")
    msg = {
        "type": "assistant",
        "message": {"id": "msg_canary", "role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]},
        "session_id": sid,
    }
    # before the `exited` record would be best; after it the stream is still read
    return json.dumps({"seq": seq, "t": recs[-1]["t"], "kind": "stdout", "json": msg}).encode()


def _gemini_canary(p: Path, text: str) -> bytes:
    last = [r for r in _lines(p) if r.get("timestamp")][-1]
    return json.dumps(
        {"id": str(uuid.uuid4()), "timestamp": last["timestamp"], "type": "user", "content": [{"text": text}]}
    ).encode()


def _copilot_canary(p: Path, text: str) -> bytes:
    last = [r for r in _lines(p) if r.get("timestamp") and r.get("id")][-1]
    data = {"content": text, "messageId": str(uuid.uuid4()), "delivery": "idle", "turnId": "0"}
    rec = {"type": "user.message", "data": data, "id": str(uuid.uuid4()), "timestamp": last["timestamp"]}
    return json.dumps({**rec, "parentId": last["id"]}).encode()


def _qwen_canary(p: Path, text: str) -> bytes:
    last = [r for r in _lines(p) if r.get("timestamp")][-1]
    rec = {k: last[k] for k in ("sessionId", "cwd", "version", "agentId", "agentName", "isSidechain") if k in last}
    rec.update(uuid=str(uuid.uuid4()), parentUuid=last["uuid"], timestamp=last["timestamp"], type="user")
    return json.dumps({**rec, "message": {"role": "user", "parts": [{"text": text}]}}).encode()


def _pi_canary(p: Path, text: str) -> bytes:
    last = [r for r in _lines(p) if r.get("id") and r.get("timestamp")][-1]
    msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1796525983000}
    rec = {"type": "message", "id": uuid.uuid4().hex[:8], "parentId": last["id"], "timestamp": last["timestamp"]}
    return json.dumps({**rec, "message": msg}).encode()


def _opencode_canary(p: Path, text: str) -> bytes:
    """A text part, finished, as OpenCode writes one (a row of the `part` table)."""
    return json.dumps({"type": "text", "text": text, "time": {"start": 1796119393000, "end": 1796119393999}}).encode()


OPENCODE_FILES = ("", "-wal", "-shm")


def opencode_files(db: Path) -> dict[str, bytes | None]:
    """The database, its WAL and its shared-memory index as they are (None: not there)."""
    return {x: (Path(str(db) + x).read_bytes() if Path(str(db) + x).exists() else None) for x in OPENCODE_FILES}


def put_opencode_files(db: Path, files: dict[str, bytes | None]) -> None:
    """The three files back as they were (in place, as SQLite keeps them)."""
    for x, data in files.items():
        p = Path(str(db) + x)
        if data is None:
            p.unlink(missing_ok=True)
        else:
            p.write_bytes(data)


def _add_parts_here(db: str, rows: list[bytes]) -> None:
    import sqlite3

    c = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        ((sid,),) = c.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created LIMIT 1")
        ((mid,),) = c.execute(
            "SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC, id DESC LIMIT 1", (sid,)
        )
        c.execute("BEGIN")
        for row in rows:
            c.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, ?, 1796119393999, 1796119393999, CAST(? AS TEXT))",
                ("prt_zz" + uuid.uuid4().hex, mid, sid, row),
            )
        c.execute("UPDATE event_sequence SET seq = seq + ? WHERE aggregate_id = ?", (len(rows), sid))
        c.execute("UPDATE session SET time_updated = time_updated + 1 WHERE id = ?", (sid,))
        c.execute("COMMIT")
    finally:
        c.close()


class RowWriter:
    """Writes parts from a helper forked before any thread, as OpenCode writes from a
    process of its own: SQLite shares a file's shared-memory index among one process's
    connections, and a reader's (the server's, huddle's) is read-only."""

    def __init__(self) -> None:
        self.req_r, self.req_w = os.pipe()
        self.res_r, self.res_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover (the helper)
            for fd in map(int, os.listdir("/proc/self/fd")):  # (the cold reader's pipes: its EOF is not ours to hold)
                if fd > 2 and fd not in (self.req_r, self.res_w):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            with os.fdopen(self.req_r, "rb") as req:
                while True:
                    try:
                        db, rows = pickle.load(req)
                    except EOFError:
                        break
                    try:
                        _add_parts_here(db, rows)
                        os.write(self.res_w, b"k")
                    except Exception:
                        os.write(self.res_w, b"e")
            os._exit(0)
        os.close(self.req_r)
        os.close(self.res_w)

    def add(self, db: str, rows: list[bytes]) -> None:
        data = pickle.dumps((db, rows))
        view = memoryview(data)
        while view:
            view = view[os.write(self.req_w, view) :]
        if os.read(self.res_r, 1) != b"k":
            raise RuntimeError(f"the row writer could not write to {db}")

    def close(self) -> None:
        os.close(self.req_w)
        os.close(self.res_r)
        os.waitpid(self.pid, 0)


_row_writer: RowWriter | None = None  # a case's, made before its server's threads


def add_parts(db: Path, rows: list[bytes]) -> None:
    """Parts appended to the lead session's last message, each its row's data as it is
    (bytes that are not UTF-8 stay so), the session and its event sequence moved on, as
    OpenCode writes them."""
    if _row_writer is not None and _row_writer.pid != 0:
        _row_writer.add(str(db), rows)
    else:
        _add_parts_here(str(db), rows)


def reset(t: Target, original: object) -> None:
    """A target's file (its database, for rows) back to what `snapshot_of` took."""
    if t.kind == "rows":
        assert isinstance(original, dict)
        put_opencode_files(t.path, original)
    else:
        assert isinstance(original, bytes)
        t.path.write_bytes(original)


def snapshot_of(t: Target) -> object:
    return opencode_files(t.path) if t.kind == "rows" else t.path.read_bytes()


def append(t: Target, records: list[bytes]) -> None:
    """Records added to a target: lines to its file, parts to its database."""
    if t.kind == "rows":
        add_parts(t.path, records)
        return
    with open(t.path, "ab") as f:
        f.write(b"".join(r + b"\n" for r in records))


def _hostile_variants(canary: bytes) -> dict[str, bytes]:
    """The hostile records built from a valid one: deep nesting, huge numbers, far-future
    times (every time-like field of the record, numbers and ISO strings)."""
    rec = json.loads(canary)
    nest = "[" * 100_000 + "]" * 100_000
    text = json.dumps(rec)
    deep = text[:-1] + (', "deep": ' + nest + "}" if isinstance(rec, dict) else ", " + nest + "]")

    def walk(v, fn):
        if isinstance(v, dict):
            return {k: fn(k, walk(x, fn)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, fn) for x in v]
        return v

    def huge(k, v):
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return 2**64 + 1
        if isinstance(v, float):
            return 1e300
        return v

    def future(k, v):
        low = k.lower()
        if (
            isinstance(v, (int, float))
            and not isinstance(v, bool)
            and (low in ("t", "ts") or "at" in low or "time" in low)
        ):
            return 2**64 if v > 1e11 else 1e300  # milliseconds, or seconds
        if isinstance(v, str) and ("time" in low or low.endswith("at") or low == "timestamp"):
            return "9999-12-31T23:59:59.999Z"
        return v

    hugerec = walk(rec, huge)
    extra = [2**70, -(2**70), 1e308, 10**400]
    if isinstance(hugerec, dict):
        hugerec["huge"] = extra
    else:
        hugerec = [*hugerec, extra]
    return {
        "deep": deep.encode(),
        "huge": json.dumps(hugerec).encode(),
        "future": json.dumps(walk(rec, future)).encode(),
    }


@dataclass
class Target:
    name: str
    path: Path
    kind: str  # "lines", "side", "folder" or "rows" (a database's: OpenCode's parts)
    source: str
    canary: Callable[[Path, str], bytes] | None = None
    parse_is_problem: bool = True  # a side file that does not parse is said (else: skipped as half-written)
    sealed: bool = False  # read once (a Vibe generation's manifest, a chunk): said by the next cold read
    follows: bool = False  # a user's own file, which may be linked from anywhere (config.toml)
    capped: bool = True  # read whole under a size cap (SQLite's files are not: it reads the pages it needs)


def targets(root: Path) -> dict[str, Target]:
    c, x, v, hh = root / "claude", root / "codex", root / "vibe" / "logs" / "session", root / "hh"
    g = root / "gemini" / "tmp" / "proj"
    cp = root / "copilot" / "session-state"
    q = root / "qwen" / "projects" / "-home-dev-work-proj"
    oc = root / "opencode"
    claude_main = _first(c, "projects/*/*.jsonl", lambda p: (p.parent / p.stem / "subagents").is_dir())
    claude_sub = _first(c, f"projects/*/{claude_main.stem}/subagents/agent-*.jsonl")
    codex_lead = _first(
        x,
        "sessions/*/*/*/rollout-*.jsonl",
        lambda p: '"session_meta"' in (h := p.read_text()[:4000]) and '"parent_thread_id"' not in h,
    )
    codex_child = _first(x, "sessions/*/*/*/rollout-*.jsonl", lambda p: '"parent_thread_id":"' in p.read_text()[:4000])
    codex_legacy = _first(x, "sessions/2025/08/31/rollout-*.jsonl")
    codex_archived = _first(x, "archived_sessions/rollout-*.jsonl")
    store = _first(v, "unified/*", lambda p: not p.name.startswith("child-"))
    seg = json.loads(
        (
            store / "generations" / json.loads((store / "CURRENT").read_text())["generation"] / "manifest.json"
        ).read_text()
    )
    legacy = _first(v, "session_*", lambda p: (p / "agents").is_dir())
    cline = _first(root / "cline" / "sessions", "*", lambda p: p.is_dir())
    out = [
        Target("claude.main", claude_main, "lines", "claude", _claude_canary),
        Target("claude.sub", claude_sub, "lines", "claude", _claude_canary),
        Target("claude.meta", claude_sub.with_suffix(".meta.json"), "side", "claude", parse_is_problem=False),
        Target("claude.title", _first(c, "projects/*/*/custom-title.json"), "side", "claude", parse_is_problem=False),
        Target("claude.registry", _first(c, "sessions/*.json"), "side", "claude", parse_is_problem=False),
        Target("claude.project", claude_main.parent, "folder", "claude"),
        Target("codex.lead", codex_lead, "lines", "codex", _codex_canary),
        Target("codex.child", codex_child, "lines", "codex", _codex_canary),
        Target("codex.index", x / "session_index.jsonl", "lines", "codex", _index_canary),
        Target("codex.legacy", codex_legacy, "lines", "codex", _codex_legacy_canary),
        Target("codex.archived", codex_archived, "lines", "codex", _codex_canary),
        Target("codex.day", codex_lead.parent, "folder", "codex"),
        Target("vibe.current", store / "CURRENT", "side", "vibe", parse_is_problem=False),  # rewritten in place
        Target(
            "vibe.manifest",
            store / "generations" / json.loads((store / "CURRENT").read_text())["generation"] / "manifest.json",
            "side",
            "vibe",
            sealed=True,
        ),
        Target(
            "vibe.chunk",
            store / "chunks" / (seg["projection_state"]["chunks"][0] + ".json"),
            "side",
            "vibe",
            sealed=True,
        ),
        Target("vibe.journal", store / seg["recovery_journal_segment"]["path"], "lines", "vibe", _journal_canary),
        Target("vibe.store", store, "folder", "vibe"),
        Target("vibe.legacy", legacy / "messages.jsonl", "lines", "vibe", _legacy_canary),
        Target("vibe.legacy_meta", legacy / "meta.json", "side", "vibe", parse_is_problem=False),
        Target("vibe.legacy_dir", legacy, "folder", "vibe"),
        Target("vibe.lock", _first(v, "active/*.lock.json"), "side", "vibe", parse_is_problem=False),
        Target("vibe.config", root / "vibe" / "config.toml", "side", "vibe", follows=True),
        Target("hosted.events", hh / "runs" / "r1" / "events.jsonl", "lines", "hosted", _hosted_canary),
        Target("telemetry.session", _first(hh, "telemetry/claude/*.jsonl"), "lines", "telemetry", _telemetry_canary),
        Target("gemini.lead", _first(g, "chats/session-*.jsonl"), "lines", "gemini", _gemini_canary),
        Target("gemini.sub", _first(g, "chats/*/*.jsonl"), "lines", "gemini", _gemini_canary),
        Target("gemini.root", g / ".project_root", "side", "gemini", parse_is_problem=False, sealed=True),
        Target("gemini.chats", g / "chats", "folder", "gemini"),
        Target(
            "copilot.events",
            _first(cp, "*/events.jsonl", lambda p: b"subagent" in p.read_bytes()),
            "lines",
            "copilot",
            _copilot_canary,
        ),
        Target("copilot.workspace", _first(cp, "*/workspace.yaml"), "side", "copilot", parse_is_problem=False),
        Target(
            "copilot.open", root / "copilot" / "open-sessions-state.json", "side", "copilot", parse_is_problem=False
        ),
        Target("copilot.session", _first(cp, "*/events.jsonl").parent, "folder", "copilot"),
        Target("qwen.lead", _first(q, "chats/9f6013e3-*.jsonl"), "lines", "qwen", _qwen_canary),
        Target("qwen.sub", _first(q, "subagents/*/agent-*.jsonl"), "lines", "qwen", _qwen_canary),
        Target("qwen.meta", _first(q, "subagents/*/agent-*.meta.json"), "side", "qwen", parse_is_problem=False),
        Target("qwen.registry", _first(root / "qwen", "sessions/*.json"), "side", "qwen", parse_is_problem=False),
        Target("qwen.chats", q / "chats", "folder", "qwen"),
        Target("pi.session", _first(root / "pi", "sessions/*/*.jsonl"), "lines", "pi", _pi_canary),
        Target("pi.project", _first(root / "pi", "sessions/*"), "folder", "pi"),
        Target("pi.settings", root / "pi" / "settings.json", "side", "pi", parse_is_problem=False),
        Target("cline.record", cline / f"{cline.name}.json", "side", "cline"),
        Target("cline.messages", cline / f"{cline.name}.messages.json", "side", "cline"),
        Target("cline.sub", _first(cline, "agent_*.messages.json"), "side", "cline"),
        Target("cline.session", cline, "folder", "cline"),
        Target("hosted.run", hh / "runs" / "r1", "folder", "hosted"),
        Target("opencode.rows", oc / "opencode.db", "rows", "opencode", _opencode_canary),
        # (a database is no JSON: its content faults change nothing, so nothing is said)
        Target("opencode.db", oc / "opencode.db", "side", "opencode", parse_is_problem=False, capped=False),
        Target("opencode.wal", oc / "opencode.db-wal", "side", "opencode", parse_is_problem=False, capped=False),
        Target("opencode.data", oc, "folder", "opencode"),
        Target("kilo.rows", root / "kilo" / "kilo.db", "rows", "kilo", _opencode_canary),
    ]
    return {t.name: t for t in out}


# -- faults ------------------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    kinds: tuple[str, ...]  # the target kinds it applies to
    problem: bool  # said in one line
    content: bool = False  # appends a hostile line, then a canary that must be read
    slow: bool = False  # the 2 GB and 100 MB cases: bench/ and the slow mark


FAULTS = {
    f.name: f
    for f in [
        Fault("truncate", ("lines",), problem=False),
        Fault("rewrite_same", ("lines", "side"), problem=False),
        Fault("rewrite_shorter", ("lines",), problem=False),
        Fault("rotate", ("lines",), problem=False),
        Fault("delete", ("lines", "side"), problem=False),
        Fault("chmod", ("lines", "side", "folder"), problem=True),
        Fault("fifo", ("lines", "side"), problem=True),
        Fault("symlink_escape", ("lines", "side"), problem=True),
        Fault("symlink_loop", ("lines", "side"), problem=True),
        Fault("deep", ("lines", "side", "rows"), problem=True, content=True),  # in a side file: like a half-written one
        Fault("huge", ("lines", "side", "rows"), problem=False, content=True),
        Fault("future", ("lines", "side", "rows"), problem=False, content=True),
        Fault("long_line", ("lines",), problem=True, content=True, slow=True),
        Fault("sparse", ("lines", "side"), problem=True, slow=True),
    ]
}


def cases(slow: bool = False) -> list[tuple[str, str]]:
    """(fault, target) pairs: every fault on every target of a kind it applies to."""
    names = targets_names()
    out = []
    for f in FAULTS.values():
        if f.slow and not slow:
            continue
        for tname, kind in names:
            if kind in f.kinds:
                out.append((f.name, tname))
    return out


def targets_names() -> list[tuple[str, str]]:
    """Target names and kinds, without building a world."""
    return [
        (n, k)
        for n, k in [
            ("claude.main", "lines"),
            ("claude.sub", "lines"),
            ("claude.meta", "side"),
            ("claude.title", "side"),
            ("claude.registry", "side"),
            ("claude.project", "folder"),
            ("codex.lead", "lines"),
            ("codex.child", "lines"),
            ("codex.index", "lines"),
            ("codex.legacy", "lines"),
            ("codex.archived", "lines"),
            ("codex.day", "folder"),
            ("vibe.current", "side"),
            ("vibe.manifest", "side"),
            ("vibe.chunk", "side"),
            ("vibe.journal", "lines"),
            ("vibe.store", "folder"),
            ("vibe.legacy", "lines"),
            ("vibe.legacy_meta", "side"),
            ("vibe.legacy_dir", "folder"),
            ("vibe.lock", "side"),
            ("vibe.config", "side"),
            ("hosted.events", "lines"),
            ("telemetry.session", "lines"),
            ("gemini.lead", "lines"),
            ("gemini.sub", "lines"),
            ("gemini.root", "side"),
            ("gemini.chats", "folder"),
            ("copilot.events", "lines"),
            ("copilot.workspace", "side"),
            ("copilot.open", "side"),
            ("copilot.session", "folder"),
            ("qwen.lead", "lines"),
            ("qwen.sub", "lines"),
            ("qwen.meta", "side"),
            ("qwen.registry", "side"),
            ("qwen.chats", "folder"),
            ("pi.session", "lines"),
            ("pi.project", "folder"),
            ("pi.settings", "side"),
            ("cline.record", "side"),
            ("cline.messages", "side"),
            ("cline.sub", "side"),
            ("cline.session", "folder"),
            ("hosted.run", "folder"),
            ("opencode.rows", "rows"),
            ("opencode.db", "side"),
            ("opencode.wal", "side"),
            ("opencode.data", "folder"),
            ("kilo.rows", "rows"),
        ]
    ]


def _side_hostile(t: Target, fault: str) -> bytes:
    """A side file made hostile: its own JSON (or TOML) with deep nesting, huge numbers
    or far-future times."""
    data = t.path.read_bytes()
    if t.path.name == "config.toml":
        if fault == "deep":
            return data + b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
        return data + b"n = 1" + b"0" * 400 + b"\nwhen = 9999-12-31T23:59:59Z\n"
    try:
        val = json.loads(data)
    except ValueError:
        return data
    if isinstance(val, list) and val and fault != "deep":  # a chunk: one of its entries made hostile
        first = json.loads(_hostile_variants(json.dumps(val[0]).encode())[fault])
        return json.dumps([first, *val[1:]]).encode()
    return _hostile_variants(json.dumps(val).encode())[fault]


class Applied:
    """A fault done to a target, and how to undo it (the original bytes, mode and times)."""

    def __init__(self, fault: Fault, t: Target, root: Path, marker: str):
        self.fault, self.t, self.root, self.marker = fault, t, root, marker
        p = t.path
        self.st = os.lstat(p)
        self.data = p.read_bytes() if t.kind != "folder" else b""
        self.files = opencode_files(p) if t.kind == "rows" else {}  # a database: its WAL and index too
        self.extra: list[Path] = []
        self.appended = False
        getattr(self, "_" + fault.name)(p)

    # each returns nothing; undo() puts everything back
    def _truncate(self, p: Path) -> None:
        with open(p, "r+b") as f:
            f.truncate(len(self.data) // 2)

    def _rewrite_same(self, p: Path) -> None:
        if self.t.kind == "side":
            val = self.data.replace(b"a", b"e") if b"a" in self.data else self.data[::-1]
            self._put(p, val[: len(self.data)].ljust(len(self.data)))
            return
        lines = self.data.splitlines(keepends=True)
        if len(lines) > 2:  # same bytes, same last line, the others in another order
            mid = lines[1:-1]
            lines = [lines[0], *reversed(mid), lines[-1]] if len(mid) > 1 else [lines[-1], *lines[:-1]]
        else:
            lines = lines[::-1]
        with open(p, "r+b") as f:
            f.write(b"".join(lines))

    def _rewrite_shorter(self, p: Path) -> None:
        lines = self.data.splitlines(keepends=True)
        with open(p, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(lines[: max(1, len(lines) // 2)]))

    def _rotate(self, p: Path) -> None:
        old = p.with_name(p.name + ".1")
        os.rename(p, old)
        self.extra.append(old)
        lines = self.data.splitlines(keepends=True)
        p.write_bytes(b"".join(lines[: max(1, len(lines) // 2)]))

    def _delete(self, p: Path) -> None:
        p.unlink()

    def _chmod(self, p: Path) -> None:
        os.chmod(p, 0)

    def _fifo(self, p: Path) -> None:
        p.unlink()
        os.mkfifo(p)

    def _symlink_escape(self, p: Path) -> None:
        out = self.root / "outside" / (p.name + ".secret")
        out.write_bytes(self.data.replace(b"e", b"E") if self.t.kind == "lines" else self.data)
        self.extra.append(out)
        p.unlink()
        p.symlink_to(out)

    def _symlink_loop(self, p: Path) -> None:
        other = p.with_name(p.name + ".loop")
        p.unlink()
        other.symlink_to(p.name)
        p.symlink_to(other.name)
        self.extra.append(other)

    def _deep(self, p: Path) -> None:
        self._hostile(p, "deep")

    def _huge(self, p: Path) -> None:
        self._hostile(p, "huge")

    def _future(self, p: Path) -> None:
        self._hostile(p, "future")

    def _hostile(self, p: Path, which: str) -> None:
        t = self.t
        if t.kind == "side":
            self._put(p, _side_hostile(t, which))
            return
        assert t.canary is not None
        bad = _hostile_variants(t.canary(p, "hostile"))[which]
        if t.kind == "rows":
            add_parts(p, [bad, t.canary(p, self.marker)])
            self.appended = True
            return
        canary = json.loads(t.canary(p, self.marker))  # its times from the file's own records
        for k in ("sequence", "seq"):
            if isinstance(canary.get(k), int):
                canary[k] += 1  # numbered after the hostile line
        self._append(p, bad + b"\n" + json.dumps(canary).encode() + b"\n")

    def _long_line(self, p: Path) -> None:
        assert self.t.canary is not None
        canary = self.t.canary(p, self.marker)
        with open(p, "ab") as f:
            if not self.data.endswith(b"\n"):
                f.write(b"\n")
            f.write(b'{"x":"')
            block = b"y" * (1 << 20)
            for _ in range(BIG_LINE >> 20):
                f.write(block)
            f.write(b'"}\n' + canary + b"\n")
        self.appended = True

    def _sparse(self, p: Path) -> None:
        if self.t.kind == "side":
            with open(p, "r+b") as f:
                f.truncate(SPARSE)  # a 2 GB side file (a Vibe CURRENT): never read whole
            return
        size = len(self.data)
        with open(p, "r+b") as f:
            f.truncate(size + SPARSE)  # 2 GB of holes: one line without a newline

    def _put(self, p: Path, data: bytes) -> None:
        """A file's bytes replaced in place (same inode). A SQLite file is never emptied on
        the way: SQLite deletes a WAL beside a database file it finds empty, a read-only
        reader too (pager.c, pagerOpenWalIfPresent), so a reader's scan in that instant
        would lose the world's data; no agent empties its database."""
        with open(p, "r+b") as f:
            if self.t.source in ("opencode", "kilo"):
                f.write(data)
                f.truncate(len(data))
            else:
                f.truncate(0)
                f.write(data)

    def _append(self, p: Path, data: bytes) -> None:
        with open(p, "ab") as f:
            if not self.data.endswith(b"\n"):
                f.write(b"\n")
            f.write(data)
        self.appended = True

    def undo(self) -> None:
        p = self.t.path
        for e in self.extra:
            if e.is_symlink() or e.exists():
                e.unlink()
        if self.t.kind == "folder":
            os.chmod(p, stat.S_IMODE(self.st.st_mode))
            return
        if self.t.kind == "rows":
            put_opencode_files(p, self.files)
            return
        if p.is_symlink() or (p.exists() and not p.is_file()):
            p.unlink()
        if p.exists():
            os.chmod(p, stat.S_IMODE(self.st.st_mode))
            self._put(p, self.data)  # in place, as agents do: same inode, old size
        else:
            p.write_bytes(self.data)
        os.utime(p, ns=(self.st.st_atime_ns, self.st.st_mtime_ns))  # even the old mtime: ctime still moves


# -- looking -----------------------------------------------------------------------------


def snapshot(h) -> dict:
    """What a view sees of a core: each session's counts, error, skipped lines, problems,
    its events in order; the notes."""
    from huddle.views.board import board_json

    with h.lock:
        board = as_json(board_json(h))
        out: dict = {"notes": list(board.get("notes") or []), "sessions": {}}
        for row in board["sessions"]:
            key = f"{row['source']}:{row['id']}"
            s = h.session(key)
            out["sessions"][key] = {
                "events": row.get("events") or {},
                "error": row.get("error"),
                "skipped": row.get("skipped_lines", 0),
                "problems": list(getattr(s, "problems", []) or []) if s is not None else [],
                "sig": _sig(s) if s is not None else [],
                "title": row.get("title") or "",
            }
    return out


def _sig(s) -> list:
    """Each agent's events in order. Across agents the order is the order of reading
    (a live read interleaves files as they grow, a cold one reads them one by one);
    apart, sorted: usage events (a Vibe legacy session's come from its meta.json,
    whenever that is read) and events with no time (an OpenCode title: it stands where
    its row was first seen, and a live read that met the database mid-restore saw the
    row before the last answer's end)."""
    by: dict[str, list] = {}
    apart = []
    for e in s.events:
        x = (e.kind, e.agent, (e.text or "")[:60], e.id or "", e.t is None)
        (apart if e.kind == "usage" or e.t is None else by.setdefault(e.agent, [])).append(x)
    return [x for agent in sorted(by) for x in by[agent]] + sorted(apart)


def cold(settings) -> dict:
    from huddle.core import Huddle

    h = Huddle(settings)
    h.refresh()
    return snapshot(h)


def in_child(fn: Callable[[], object], limit: float) -> object:
    """Run fn in a forked child; its pickled result, or {"hang": True} when it overruns."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.close(r)
        try:
            res = fn()
        except BaseException as exc:
            res = {"crash": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
        data = pickle.dumps(res)
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    end = time.monotonic() + limit
    chunks: list[bytes] = []
    os.set_blocking(r, False)
    try:
        while True:
            try:
                part = os.read(r, 1 << 20)
            except BlockingIOError:
                part = None
            if part:
                chunks.append(part)
                continue
            if part == b"":
                break
            if time.monotonic() > end:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"hang": True}
            time.sleep(0.01)
    finally:
        os.close(r)
    os.waitpid(pid, 0)
    return pickle.loads(b"".join(chunks)) if chunks else {"crash": "no result"}


class ColdReader:
    """Cold reads on demand from a helper forked before any thread starts (forking a
    process that runs a server is not safe): each read is a fresh grandchild, bounded."""

    def __init__(self, settings):
        self.req_r, self.req_w = os.pipe()
        self.res_r, self.res_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover (the helper)
            os.close(self.req_w)
            os.close(self.res_r)
            while os.read(self.req_r, 1):
                res = in_child(lambda: cold(settings), WAIT * 2)
                data = pickle.dumps(res)
                os.write(self.res_w, len(data).to_bytes(8, "big"))
                view = memoryview(data)
                while view:
                    view = view[os.write(self.res_w, view) :]
            os._exit(0)
        os.close(self.req_r)
        os.close(self.res_w)

    def read(self) -> dict:
        os.write(self.req_w, b"r")
        n = int.from_bytes(self._exactly(8), "big")
        res = pickle.loads(self._exactly(n))
        return res if isinstance(res, dict) else {"crash": repr(res)}

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            part = os.read(self.res_r, n - len(buf))
            if not part:
                raise EOFError("the cold reader went away")
            buf += part
        return buf

    def close(self) -> None:
        os.close(self.req_w)
        os.close(self.res_r)
        os.waitpid(self.pid, 0)


def _lines_naming(snap: dict, name: str, base: dict) -> list[str]:
    """Every line of a snapshot that names `name` and was not there before the fault."""
    old = set(base.get("notes", []))
    for s in base["sessions"].values():
        old.update(s["problems"])
        if s["error"]:
            old.add(s["error"])
    found = [n for n in snap.get("notes", []) if name in n]
    for s in snap["sessions"].values():
        if s["error"] and name in s["error"]:
            found.append(s["error"])
        found.extend(p for p in s["problems"] if name in p)
    return [x for x in found if x not in old]


def _affected(source: str, t: Target, base: dict) -> set[str]:
    """The sessions a fault on this target may change: the one(s) reading the file (all of
    its source for a source-wide file)."""
    if t.name in ("vibe.config", "codex.index"):
        return {k for k in base["sessions"] if k.startswith(source + ":")}
    return set()  # filled by the caller from the files each handle reads


@dataclass
class Outcome:
    fault: str
    target: str
    checks: dict[str, bool] = field(default_factory=dict)
    detail: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def survived(self) -> bool:
        return bool(self.checks) and all(self.checks.values())


def _wait(cond: Callable[[], object], limit: float = WAIT) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            if cond():
                return True
        except Exception:
            pass
        time.sleep(0.05)
    return False


def _same_board(a: dict, b: dict, keys: set[str] | None = None) -> bool:
    ka = set(a["sessions"]) if keys is None else keys
    for k in ka:
        x, y = a["sessions"].get(k), b["sessions"].get(k)
        if x is None or y is None:
            return False
        if (x["events"], x["error"], x["skipped"], x["sig"]) != (y["events"], y["error"], y["skipped"], y["sig"]):
            return False
    return keys is not None or set(a["sessions"]) == set(b["sessions"])


_warm = False


def warm_up(world: Path) -> None:
    """Everything a case imports, imported now: a case drops to an ordinary user, who may
    not read the interpreter's own files (under root's home)."""
    global _warm
    if _warm:
        return
    import click.testing  # noqa: F401
    import httpx

    import huddle.cli  # noqa: F401
    from huddle.core import Huddle
    from huddle.server import ServerThread
    from huddle.views import api  # noqa: F401

    h = Huddle(settings_of(world))
    h.refresh()
    with ServerThread(h, watch_options=FAST) as srv, httpx.Client(base_url=srv.url, timeout=WAIT) as c:
        c.get("/api/sessions")
        c.get("/api/info")
        key = next(iter(h.handles))
        c.get(f"/api/sessions/{key.split(':', 1)[1]}")
        srv.state.watcher.tick()
    snapshot(h)
    _warm = True


def run_case(world: Path, fault_name: str, target_name: str) -> Outcome:
    """One case in a fresh copy of the world, in its own child (see the module's text)."""
    return run_group(world, target_name, [fault_name])[0]


def _unblock_fifos(case: Path) -> None:
    for d, _dirs, files in os.walk(case):
        for n in files:
            p = os.path.join(d, n)
            try:
                if stat.S_ISFIFO(os.lstat(p).st_mode):
                    os.unlink(p)
            except OSError:
                pass


def _group(case: Path, target_name: str, fault_names: list[str], cli: bool = True) -> list[Outcome]:
    """Faults done one after the other to one target of one world, with one server and
    one cold reader. Each is undone before the next; once one leaves the world unlike
    before, the rest are not run (they count as failed)."""
    if os.geteuid() == 0:
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    os.environ.update({"HOME": str(case / "home"), "HUDDLE_HOME": str(case / "hh")})
    import httpx

    from huddle.core import Huddle
    from huddle.server import ServerThread

    t = targets(case)[target_name]
    settings = settings_of(case)
    reader = ColdReader(settings)  # before any thread
    global _row_writer
    _row_writer = RowWriter() if t.kind == "rows" else None
    base = reader.read()
    if "sessions" not in base:
        raise RuntimeError(f"the world does not read: {base}")
    h = Huddle(settings)
    h.refresh()
    affected = _affected(t.source, t, base)
    with h.lock:
        real = os.path.realpath(t.path)
        for key, handle in h.handles.items():
            files = {os.path.realpath(f) for f in handle.files()}
            mine = real in files or any(f.startswith(real + os.sep) for f in files)
            if mine or (t.kind == "side" and t.source == handle.session.source and _concerns(t, handle, case)):
                affected.add(key)
    srv = ServerThread(h, watch_options=FAST).start()
    client = httpx.Client(base_url=srv.url, timeout=WAIT)
    outs: list[Outcome] = []
    try:
        up = _wait(lambda: _same_board(snapshot(h), base))
        for i, fault_name in enumerate(fault_names):
            out = Outcome(fault_name, target_name)
            outs.append(out)
            if not up:
                out.checks["world as before"] = False
                out.detail.append("not run: the server did not show the world as it was")
                continue
            t0 = time.monotonic()
            ctx = (case, h, srv, client, reader, base, affected, cli)
            try:
                _one(out, FAULTS[fault_name], t, *ctx, last=i == len(fault_names) - 1)
            except Exception as exc:  # the harness itself: this case fails, the group stops
                out.checks["ran"] = False
                out.detail.append(f"{type(exc).__name__}: {exc}: {traceback.format_exc()[-600:]}")
            out.seconds = time.monotonic() - t0
            up = out.checks.get("recovers (live)", False)
    finally:
        client.close()
        srv.stop()
        reader.close()
        if _row_writer is not None:
            _row_writer.close()
    return outs


def _one(out, fault, t, case, h, srv, client, reader, base, affected, cli, last) -> None:
    import httpx

    marker = f"huddle-canary-{uuid.uuid4().hex[:10]}"
    applied = Applied(fault, t, case, marker)

    def settled(n: int = 2) -> bool:
        w = srv.state.watcher
        start = getattr(w, "ticks", 0)
        return _wait(lambda: getattr(w, "ticks", 0) >= start + n)

    # -- during the fault --------------------------------------------------------------
    ticking = settled()
    answers = _wait(
        lambda: client.get("/api/sessions").status_code == 200 and client.get("/api/info").status_code == 200
    )
    out.checks["no hang"] = ticking and answers
    if not ticking:
        out.detail.append(f"the watcher stopped refreshing ({getattr(srv.state.watcher, 'last_error', None)})")
    name = str(t.path)

    def problem_said(snap: dict) -> bool:
        return len(_lines_naming(snap, name, base)) >= 1

    if fault.problem or fault.content:  # the row carries it at once: wait for it, bounded
        # (the whole bound: a fifth of it was once too little for a live server on a busy CI)
        _wait(lambda: problem_said(snapshot(h)) and (not fault.content or _canary_in(snapshot(h), marker, h)), WAIT)
    live = snapshot(h) if ticking else None
    cold_now: dict | None = reader.read()
    if cold_now is None or cold_now.get("hang") or cold_now.get("crash"):
        out.checks["no hang"] = False
        out.detail.append(f"cold read: {str(cold_now)[:300]}")
        cold_now = None
    if cli and fault.name in CLI_FAULTS and os.geteuid() != 0:
        status = _cli_status(case)
        out.checks["status command"] = status is None
        if status is not None:
            out.detail.append(f"huddle status: {status}")
    for where, snap in (("live", live), ("cold", cold_now)):
        if snap is None:
            continue
        others = set(base["sessions"]) - affected
        ok = _same_board(base, snap, others)
        out.checks[f"others untouched ({where})"] = ok
        if not ok:
            bad = [k for k in others if base["sessions"].get(k) != snap["sessions"].get(k)]
            out.detail.append(f"{where}: changed beyond the fault: {bad[:4]}")
        said = _lines_naming(snap, name, base)
        # a side file that does not parse is skipped like a half-written one (it is rewritten
        # in place all the time); one that cannot be opened, or a store document, is said
        must = fault.problem and not (fault.content and t.kind == "side" and not t.parse_is_problem)
        must = must and not (t.sealed and where == "live")  # what was read stands; the next load says it
        must = must and not (t.follows and fault.name == "symlink_escape")
        must = must and not (fault.name == "sparse" and not t.capped)  # a database grown with holes loses nothing
        if t.kind == "folder":  # one note for the folder; each session in it may say it cannot read its files
            said = [x for x in said if x in snap.get("notes", [])]
        ok = (len(said) == 1) if must else (len(said) <= 1)
        out.checks[f"one line ({where})"] = ok and all("\n" not in x and "Traceback" not in x for x in said)
        if not ok:
            out.detail.append(f"{where}: {len(said)} lines name {name}: {said[:3]}")
        if fault.content and t.kind in ("lines", "rows"):
            seen = _canary_in(snap, marker, h if where == "live" else None)
            out.checks[f"canary read ({where})"] = seen
            if not seen:
                out.detail.append(f"{where}: the line after the hostile one was not read")
    try:
        r = client.get(f"/api/sessions/{sorted(affected)[0].split(':', 1)[1]}") if affected else None
        out.checks["detail answers"] = r is None or r.status_code in (200, 404)
        if r is not None and r.status_code not in (200, 404):
            out.detail.append(f"session detail: {r.status_code} {r.text[:200]}")
    except httpx.HTTPError as exc:
        out.checks["detail answers"] = False
        out.detail.append(f"session detail: {exc}")

    # -- after it is undone ----------------------------------------------------------------
    applied.undo()
    out.checks["recovers (live)"] = _wait(
        lambda: _same_board(snapshot(h), base) and not [n for n in snapshot(h)["notes"] if name in n], WAIT
    )
    if not out.checks["recovers (live)"]:
        now = snapshot(h)
        out.detail.append(
            f"live after undo: {_difference(base, now)}; notes {[n for n in now['notes'] if name in n][:2]}"
        )
    if last or not out.checks["recovers (live)"]:  # a cold read after the last fault of a group
        after = reader.read()
        out.checks["recovers (cold)"] = isinstance(after, dict) and "sessions" in after and _same_board(after, base)
        if not out.checks["recovers (cold)"]:
            out.detail.append("a cold read after the undo differs from before")


def _difference(a: dict, b: dict) -> str:
    """Where two snapshots part, in a line."""
    for k in sorted(set(a["sessions"]) | set(b["sessions"])):
        x, y = a["sessions"].get(k), b["sessions"].get(k)
        if x == y:
            continue
        if x is None or y is None:
            return f"{k} {'appeared' if x is None else 'vanished'}"
        for f in ("events", "error", "skipped", "title"):
            if x.get(f) != y.get(f):
                return f"{k} {f}: {x.get(f)!r} then {y.get(f)!r}"
        for i, (p, q) in enumerate(zip(x["sig"], y["sig"])):
            if p != q:
                return f"{k} event {i}: {p} then {q}"
        return f"{k}: {len(x['sig'])} events then {len(y['sig'])}"
    return "notes differ"


def _canary_in(snap: dict, marker: str, h=None) -> bool:
    return any(
        marker in s.get("title", "") or any(marker in (e[2] or "") for e in s["sig"]) for s in snap["sessions"].values()
    )


def run_group(world: Path, target_name: str, fault_names: list[str]) -> list[Outcome]:
    """Several faults on one target in one child (the suite's way: quicker than one
    child per case; a fault that leaves the world changed fails the ones after it)."""
    top = Path(tempfile.mkdtemp(prefix="huddle-fault-"))
    os.chmod(top, 0o755)
    case = top / "w"
    shutil.copytree(world, case, symlinks=True)
    if os.geteuid() == 0:
        for d, dirs, files in os.walk(case):
            for n in [*dirs, *files]:
                os.lchown(os.path.join(d, n), NOBODY, NOBODY)
        os.chown(case, NOBODY, NOBODY)
    warm_up(world)
    res = in_child(lambda: _group(case, target_name, fault_names), CASE_LIMIT * len(fault_names))
    _unblock_fifos(case)
    shutil.rmtree(top, ignore_errors=True)
    if isinstance(res, list):
        return res
    out = []
    for f in fault_names:
        o = Outcome(f, target_name)
        o.checks["no hang" if isinstance(res, dict) and res.get("hang") else "ran"] = False
        o.detail.append(str(res)[:3000])
        out.append(o)
    return out


def _concerns(t: Target, handle, case: Path) -> bool:
    """Whether a side file belongs to this handle's session (its folder, its id)."""
    sid = handle.session.id
    p = str(t.path)
    if t.name == "vibe.config":
        return True
    if sid in p:
        return True
    if t.name == "claude.registry":
        try:
            return json.loads(t.path.read_text()).get("sessionId") == sid
        except (OSError, ValueError):
            return True
    if t.name == "vibe.lock":
        return t.path.name.split(".")[0] == sid
    files = [os.path.dirname(f) for f in handle.files()]
    return any(p.startswith(d + os.sep) or os.path.dirname(p).startswith(d) for d in files if d)


def _cli_status(case: Path) -> str | None:
    """`huddle status --json`, the real command, in this process (the case's ordinary user
    may not start root's interpreter; the child it runs in bounds it): None when it ends
    well."""
    from click.testing import CliRunner

    from huddle.cli import main

    env = {**settings_of(case).env(), "HOME": str(case / "home")}
    res = CliRunner().invoke(main, ["status", "--json"], env=env)
    if res.exit_code != 0:
        return f"exit {res.exit_code}: {(res.output or str(res.exception))[-300:]}"
    try:
        json.loads(res.stdout)
    except ValueError:
        return "no JSON board"
    return None


# -- fuzzing: mutated records, then a canary -----------------------------------------------

ODD_VALUES: list[object] = [
    None,
    True,
    0,
    -1,
    2**63,
    2**64 + 1,
    -(2**70),
    1e308,
    -1e308,
    0.5,
    "",
    "x" * 300,
    "9999-12-31T23:59:59Z",
    "\u0000\ud7ff\u202e",
    [],
    [1, "a", None],
    {},
    {"type": "text", "text": 1},
]


def _paths(v, at=()):
    yield at
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, (*at, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _paths(x, (*at, i))


def _set(v, path, value):
    if not path:
        return value
    v[path[0]] = _set(v[path[0]], path[1:], value)
    return v


def mutate(record: bytes, rnd) -> bytes:
    """One hostile version of a valid record (bytes, no newline): bits flipped, cut short,
    a field of another type, every field an odd value, nested too deep."""
    how = rnd.randrange(5)
    if how == 0:  # bit flips
        data = bytearray(record)
        for _ in range(rnd.randint(1, 8)):
            i = rnd.randrange(len(data))
            data[i] ^= 1 << rnd.randrange(8)
        return bytes(data).replace(b"\n", b" ").replace(b"\r", b" ")
    if how == 1:  # cut short
        return record[: rnd.randrange(len(record))]
    rec = json.loads(record)
    paths = list(_paths(rec))
    if how == 2:  # one field of another type
        path = rnd.choice(paths[1:] or paths)
        rec = _set(rec, path, json.loads(json.dumps(rnd.choice(ODD_VALUES))))
    elif how == 3:  # every leaf an odd value
        for path in paths:
            try:
                leaf = _get(rec, path)
            except (KeyError, IndexError, TypeError):
                continue
            if not isinstance(leaf, (dict, list)) and rnd.random() < 0.7:
                rec = _set(rec, path, json.loads(json.dumps(rnd.choice(ODD_VALUES))))
    else:  # nested too deep somewhere
        path = rnd.choice(paths)
        deep: object = []
        for _ in range(rnd.choice([50, 2000, 100_000])):
            deep = [deep]
        try:
            rec = _set(rec, path, deep)
            return _dumps_deep(rec)
        except (RecursionError, TypeError, KeyError, IndexError):
            return b"[" * 100_000
    return json.dumps(rec).encode()


def _get(v, path):
    for k in path:
        v = v[k]
    return v


def _dumps_deep(rec) -> bytes:
    try:
        return json.dumps(rec).encode()
    except RecursionError:
        return b'{"type":' + b"[" * 100_000 + b"]" * 100_000 + b"}"


FUZZ_TARGETS = (
    "claude.main",
    "codex.lead",
    "codex.legacy",
    "vibe.journal",
    "vibe.legacy",
    "hosted.events",
    "gemini.lead",
    "copilot.events",
    "qwen.lead",
    "pi.session",
    "telemetry.session",
    "opencode.rows",
    "kilo.rows",
)


def template_record(t: Target) -> bytes:
    """The valid record the fuzz mutates: the canary's kind, or for a database the richest
    row it holds (a finished task call, with its input, output and metadata)."""
    if t.kind == "rows":
        import sqlite3

        c = sqlite3.connect(f"file:{t.path}?mode=ro", uri=True)
        try:
            rows = c.execute("SELECT data FROM part WHERE data LIKE '%\"tool\"%' ORDER BY length(data) DESC LIMIT 1")
            ((data,),) = rows.fetchall()
        finally:
            c.close()
        return data.encode()
    return canary_record(t, "template")


def canary_record(t: Target, marker: str, after: bytes = b"") -> bytes:
    """A valid record for this target's file, numbered after what is there (and after
    `after`, the hostile records appended, when they carry numbers)."""
    assert t.canary is not None
    rec = json.loads(t.canary(t.path, marker))
    for k in ("sequence", "seq"):
        if isinstance(rec.get(k), int):
            rec[k] += after.count(b"\n") + 1
    return json.dumps(rec).encode()


def run_matrix(world: Path, pairs: list[tuple[str, str]], workers: int = 4, isolated: bool = False) -> list[Outcome]:
    """Every (fault, target) pair: grouped by target (one child, one server per target) or
    `isolated` (one child per case, slower: what the bench does for older code, where a
    fault that breaks the world must not fail the next ones). Groups run `workers` at a
    time (each is its own process: the waits are bounded polls, not work)."""
    from concurrent.futures import ThreadPoolExecutor

    warm_up(world)
    if isolated:
        jobs = [(lambda f=f, t=t: [run_case(world, f, t)]) for f, t in pairs]
    else:
        groups: dict[str, list[str]] = {}
        for f, t in pairs:
            groups.setdefault(t, []).append(f)
        jobs = [(lambda t=t, fs=fs: run_group(world, t, fs)) for t, fs in groups.items()]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [o for outs in pool.map(lambda job: job(), jobs) for o in outs]
