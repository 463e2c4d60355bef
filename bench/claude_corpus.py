"""Write a large Claude Code corpus shaped like the real samples.

Records are built from real lines of tests/fixtures/samples/claude (same keys, same
nesting, same metadata records), with new ids, texts and sizes: many small
sessions, one very large one, sub-agents, and a long tail of big tool outputs.

    python bench/claude_corpus.py OUT_DIR [--sessions 1000] [--gb 1.0] [--big-mb 300]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import uuid
from datetime import UTC
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "samples" / "claude"


def _templates() -> dict[str, dict]:
    """One real record of each shape huddle meets, taken from the samples."""
    want = {}
    for f in sorted(SAMPLES.glob("*/config/projects/*/*.jsonl")):
        for line in f.read_text().splitlines():
            d = json.loads(line)
            t = d.get("type")
            key = t
            if t == "assistant":
                key = "assistant:" + d["message"]["content"][0]["type"]
            elif t == "user":
                c = d["message"]["content"]
                key = "user:prompt" if isinstance(c, str) else "user:" + c[0].get("type", "")
                if (
                    d.get("isMeta")
                    or d.get("isCompactSummary")
                    or d.get("origin", {}).get("kind") == "task-notification"
                ):
                    continue
                if key == "user:prompt" and d.get("isSidechain"):
                    continue
            elif t == "attachment":
                key = "attachment:" + d["attachment"]["type"]
            want.setdefault(key, d)
    return want


T = _templates()
WORDS = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "it",
    "for",
    "on",
    "that",
    "this",
    "with",
    "file",
    "test",
    "build",
    "run",
    "check",
    "fix",
    "update",
    "read",
    "write",
    "agent",
    "tool",
]


def words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


def big_text(rnd: random.Random, size: int) -> str:
    line = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(79)) + "\n"
    return (line * (size // 80 + 1))[:size]


def tool_output_size(rnd: random.Random) -> int:
    # A long tail: most outputs are small, some are megabytes.
    return min(int(rnd.paretovariate(1.1) * 400), 6_000_000)


class SessionWriter:
    def __init__(self, rnd: random.Random, sid: str, cwd: str, t0: float):
        self.rnd, self.sid, self.cwd, self.t = rnd, sid, cwd, t0
        self.parent = None

    def ts(self) -> str:
        self.t += self.rnd.uniform(0.05, 3.0)
        from datetime import datetime

        return datetime.fromtimestamp(self.t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def rec(self, key: str, **over) -> dict:
        d = copy.deepcopy(T[key])
        if "sessionId" in d:
            d["sessionId"] = self.sid
        if "cwd" in d:
            d["cwd"] = self.cwd
        if "uuid" in d:
            d["uuid"] = str(uuid.UUID(int=self.rnd.getrandbits(128)))
            d["parentUuid"] = self.parent
            self.parent = d["uuid"]
        if "timestamp" in d:
            d["timestamp"] = self.ts()
        d.pop("agentId", None)
        d.pop("requestSessionId", None)
        d.update(over)
        return d

    def turn(self, agent_id: str | None = None, sub_calls: int = 0) -> list[dict]:
        rnd = self.rnd
        out = [self.rec("queue-operation")] if "queue-operation" in T and not agent_id else []
        p = self.rec("user:prompt")
        p["message"]["content"] = "[[bench]] " + words(rnd, rnd.randint(5, 40))
        out.append(p)
        for k in ("attachment:environment", "attachment:date", "attachment:skill_listing"):
            if k in T:
                out.append(self.rec(k))
        blob = self.rec("api-request-blob")
        out.append(blob)
        out.append(self.rec("api-request"))
        for _step in range(rnd.randint(1, 6)):
            mid = "msg_" + uuid.UUID(int=rnd.getrandbits(128)).hex[:24]
            usage = {
                "input_tokens": rnd.randint(1, 50),
                "cache_creation_input_tokens": rnd.randint(0, 20000),
                "cache_read_input_tokens": rnd.randint(0, 200000),
                "output_tokens": rnd.randint(1, 2000),
            }
            blocks = []
            if rnd.random() < 0.4:
                b = self.rec("assistant:thinking")
                b["message"]["content"][0]["thinking"] = words(rnd, rnd.randint(10, 200))
                blocks.append(b)
            b = self.rec("assistant:text")
            b["message"]["content"][0]["text"] = words(rnd, rnd.randint(5, 120))
            blocks.append(b)
            tool = self.rec("assistant:tool_use")
            tid = "toolu_" + uuid.UUID(int=rnd.getrandbits(128)).hex[:24]
            tool["message"]["content"][0].update(
                {
                    "id": tid,
                    "name": "Bash",
                    "input": {"command": "ls -la " + words(rnd, 3), "description": words(rnd, 4)},
                }
            )
            blocks.append(tool)
            # Claude Code writes cache_creation as the 5m/1h split of cache_creation_input_tokens
            split = {"ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"], "ephemeral_1h_input_tokens": 0}
            for b in blocks:
                b["message"]["id"] = mid
                b["message"]["usage"] = {**b["message"].get("usage", {}), **usage, "cache_creation": split}
                b["message"]["stop_reason"] = "tool_use"
                if agent_id:
                    b["agentId"] = agent_id
                    b["isSidechain"] = True
            out += blocks
            res = self.rec("user:tool_result")
            body = big_text(rnd, tool_output_size(rnd))
            res["message"]["content"] = [
                {"tool_use_id": tid, "type": "tool_result", "content": body, "is_error": False}
            ]
            res["toolUseResult"] = {
                "stdout": body,
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
            }
            out.append(res)
            out.append(self.rec("last-prompt"))
        fin = self.rec("assistant:text")
        fin["message"]["id"] = "msg_" + uuid.UUID(int=rnd.getrandbits(128)).hex[:24]
        fin["message"]["content"][0]["text"] = words(rnd, rnd.randint(10, 80))
        fin["message"]["stop_reason"] = "end_turn"
        out.append(fin)
        return out


def append_jsonl(path: Path, records: list[dict]) -> int:
    """Append records as JSON lines; return the bytes written."""
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
    with open(path, "ab") as f:
        f.write(data)
    return len(data)


def write_session(root: Path, rnd: random.Random, target: int, t0: float, subagents: int = 0) -> int:
    sid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
    proj_name = "proj" + str(rnd.randint(0, 40))
    cwd = f"/home/dev/work/{proj_name}"
    proj = root / "projects" / ("-home-dev-work-" + proj_name)
    proj.mkdir(parents=True, exist_ok=True)
    w = SessionWriter(rnd, sid, cwd, t0)
    main = proj / f"{sid}.jsonl"
    written = 0
    while written < target:
        written += append_jsonl(main, w.turn())
    for _i in range(subagents):
        agent_id = "a" + uuid.UUID(int=rnd.getrandbits(128)).hex[:16]
        sub = proj / sid / "subagents"
        sub.mkdir(parents=True, exist_ok=True)
        sw = SessionWriter(rnd, sid, cwd, t0)
        written += append_jsonl(sub / f"agent-{agent_id}.jsonl", sw.turn(agent_id=agent_id))
        meta = {
            "agentType": "general-purpose",
            "description": words(rnd, 3),
            "toolUseId": "toolu_x" + agent_id,
            "spawnDepth": 1,
        }
        (sub / f"agent-{agent_id}.meta.json").write_text(json.dumps(meta))
    return written


def write_claude_corpus(
    root: str, n_sessions: int = 1000, target_bytes: int = 1 << 30, seed: int = 0, big_bytes: int = 300 << 20
) -> int:
    """Write `n_sessions` sessions totalling about `target_bytes` under root (a
    CLAUDE_CONFIG_DIR), one of them about `big_bytes`. Returns bytes written."""
    rnd = random.Random(seed)
    rootp = Path(root)
    rootp.mkdir(parents=True, exist_ok=True)
    total = 0
    t0 = 1796000000.0
    big_bytes = min(big_bytes, target_bytes // 2)
    total += write_session(rootp, rnd, big_bytes, t0, subagents=3)
    each = max(20_000, (target_bytes - total) // max(1, n_sessions - 1))
    # a minute apart, closer when there are many: every session lies in the past (a
    # future time keeps a row "your turn" for good, and read on every cached status)
    step = min(60.0, 120_000.0 / max(1, n_sessions))
    for i in range(n_sessions - 1):
        size = int(each * rnd.uniform(0.3, 1.7))
        total += write_session(rootp, rnd, size, t0 + i * step, subagents=1 if rnd.random() < 0.2 else 0)
    return total


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--big-mb", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    n = write_claude_corpus(a.out, a.sessions, int(a.gb * (1 << 30)), a.seed, a.big_mb << 20)
    print(f"wrote {n / 1e6:.0f} MB in {a.sessions} sessions under {os.path.abspath(a.out)}")
