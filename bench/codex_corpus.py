"""Write a large Codex CLI corpus shaped like the real samples.

Records are built from real lines of tests/fixtures/samples/codex (Codex 0.169.0 and
0.144.3: same keys, same nesting, the ~22 kB session_meta, world_state snapshots,
per-response token records), with new ids, texts and sizes: threads of several
turns, sub-agent threads linked to their lead, and a long tail of big command
outputs (written twice, as Codex does: in the CommandExecution item and in the
function_call_output).

    python bench/codex_corpus.py OUT_DIR [--threads 400] [--mb 200]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claude_corpus import append_jsonl, big_text, words

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "samples" / "codex"


def _key(d: dict) -> str:
    p = d.get("payload") or {}
    k = d["type"]
    if isinstance(p, dict) and p.get("type"):
        k += ":" + p["type"]
        if p["type"] == "item_completed":
            k += ":" + p["item"]["type"]
        if p["type"] == "message":
            k += ":" + p["role"]
        if p["type"] == "function_call":
            k += ":" + p["name"]
    return k


def _templates(scenarios: tuple[str, ...]) -> dict[str, dict]:
    want: dict[str, dict] = {}
    for name in scenarios:
        for f in sorted((SAMPLES / name / "codex_home" / "sessions").rglob("rollout-*.jsonl")):
            for i, line in enumerate(f.read_text().splitlines()):
                d = json.loads(line)
                if d["type"] == "session_meta" and i > 0:
                    continue
                want.setdefault(_key(d), d)
    return want


NEW = _templates(("shell", "subagents_v2", "apply_patch", "compaction"))
OLD = _templates(("shell__v0.144.3", "subagents_v2__v0.144.3", "apply_patch__v0.144.3"))


def output_size(rnd: random.Random) -> int:
    return min(int(rnd.paretovariate(1.1) * 300), 4_000_000)  # most small, some megabytes


def thread_id(rnd: random.Random, t: float) -> str:
    ms = int(t * 1000)
    h = f"{ms:012x}7{rnd.getrandbits(12):03x}{rnd.choice('89ab')}{rnd.getrandbits(60):015x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class ThreadWriter:
    def __init__(self, rnd: random.Random, tid: str, root_id: str, t0: float, old: bool):
        self.rnd, self.tid, self.root_id, self.t = rnd, tid, root_id, t0
        self.T = OLD if old else NEW
        self.old = old
        self.ordinal = 0
        self.total = [0, 0, 0, 0, 0, 0]  # cumulative token_count fields
        self.n = 0

    def ts(self) -> str:
        self.t += self.rnd.uniform(0.01, 2.0)
        return datetime.fromtimestamp(self.t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def rec(self, key: str) -> dict:
        d = copy.deepcopy(self.T[key])
        d["timestamp"] = self.ts()
        if "ordinal" in d:
            d["ordinal"] = self.ordinal
            self.ordinal += 1
        return d

    def uid(self) -> str:
        self.n += 1
        return f"{self.tid[-12:]}_{self.n}"

    def meta(self, parent: str | None, path: str | None) -> dict:
        d = self.rec("session_meta")
        p = d["payload"]
        p["id"] = self.tid
        p["session_id"] = self.root_id
        p["cwd"] = f"/home/dev/work/proj{self.rnd.randint(0, 40)}"
        if parent:
            spawn = {
                "parent_thread_id": parent,
                "depth": 1,
                "agent_path": path,
                "agent_nickname": "Bench",
                "agent_role": None,
            }
            p.update(
                parent_thread_id=parent,
                source={"subagent": {"thread_spawn": spawn}},
                thread_source="subagent",
                agent_nickname="Bench",
                agent_path=path,
            )
        return d

    def prompt_tokens(self) -> tuple[int, int]:
        """A response's input and the part of it read from the cache: Codex counts cached
        input inside input_tokens, so cached never exceeds input."""
        inp = self.rnd.randint(9000, 60000)
        return inp, self.rnd.randint(0, min(inp, 50000))

    def tokens(self, out: list[dict], inp: int, cached: int, outp: int, reasoning: int) -> None:
        usage = {
            "input_tokens": inp,
            "cached_input_tokens": cached,
            "output_tokens": outp,
            "reasoning_output_tokens": reasoning,
            "total_tokens": inp + outp,
        }
        if not self.old:
            usage["cache_write_input_tokens"] = 0
            r = self.rec("token_usage_record")
            r["payload"].update(thread_id=self.tid, session_id=self.root_id, response_id=self.uid(), usage=usage)
            out.append(r)
        for i, v in enumerate((inp, cached, 0, outp, reasoning, inp + outp)):
            self.total[i] += v
        c = self.rec("event_msg:token_count")
        info = c["payload"]["info"]
        tot = dict(
            zip(
                (
                    "input_tokens",
                    "cached_input_tokens",
                    "cache_write_input_tokens",
                    "output_tokens",
                    "reasoning_output_tokens",
                    "total_tokens",
                ),
                self.total,
            )
        )
        if self.old:
            tot.pop("cache_write_input_tokens")
        info["total_token_usage"], info["last_token_usage"] = tot, usage
        out.append(c)

    def turn(self, children: list[tuple[str, str]] = ()) -> list[dict]:
        rnd = self.rnd
        out = [self.rec("event_msg:task_started")]
        if rnd.random() < 0.3:
            out += [
                self.rec("response_item:message:developer"),
                self.rec("response_item:message:user"),
                self.rec("world_state"),
            ]
        out.append(self.rec("turn_context"))
        prompt = "[[bench]] " + words(rnd, rnd.randint(5, 40))
        if self.old:
            m = self.rec("response_item:message:user")
            m["payload"]["content"] = [{"type": "input_text", "text": prompt}]
            u = self.rec("event_msg:user_message")
            u["payload"]["message"] = prompt
            out += [m, u]
        else:
            u = self.rec("event_msg:item_completed:UserMessage")
            u["payload"]["item"]["content"][0]["text"] = prompt
            out.append(u)
        for child, path in children:
            call = self.uid()
            f = self.rec("response_item:function_call:spawn_agent")
            f["payload"]["call_id"] = call
            f["payload"]["arguments"] = json.dumps({"task_name": path.rsplit("/", 1)[-1], "message": words(rnd, 20)})
            o = self.rec("response_item:function_call_output")
            o["payload"].update(call_id=call, output=json.dumps({"task_name": path}))
            key = "event_msg:sub_agent_activity" if self.old else "event_msg:item_completed:SubAgentActivity"
            a = self.rec(key)
            target = a["payload"] if self.old else a["payload"]["item"]
            target.update(agent_thread_id=child, agent_path=path, kind="started")
            target["event_id" if self.old else "id"] = call
            out += [f, a, o]
            self.tokens(out, *self.prompt_tokens(), rnd.randint(20, 400), 0)
        for _ in range(rnd.randint(1, 6)):
            if rnd.random() < 0.5:
                r = self.rec("response_item:reasoning")
                r["payload"]["summary"] = [{"type": "summary_text", "text": words(rnd, rnd.randint(10, 80))}]
                out.append(r)
            call = self.uid()
            cmd = "ls -la " + words(rnd, 3)
            f = self.rec("response_item:function_call:exec_command")
            f["payload"].update(call_id=call, arguments=json.dumps({"cmd": cmd}))
            out.append(f)
            self.tokens(out, *self.prompt_tokens(), rnd.randint(20, 800), rnd.randint(0, 64))
            body = big_text(rnd, output_size(rnd))
            code = 0 if rnd.random() < 0.8 else rnd.randint(1, 3)
            if not self.old:
                c = self.rec("event_msg:item_completed:CommandExecution")
                c["payload"]["item"].update(
                    id=call,
                    command=["/bin/bash", "-lc", cmd],
                    aggregated_output=body,
                    exit_code=code,
                    status="completed" if code == 0 else "failed",
                )
                out.append(c)
            o = self.rec("response_item:function_call_output")
            o["payload"].update(
                call_id=call,
                output=f"Chunk ID: 000000\nWall time: 0.0100 seconds\nProcess exited with code {code}\n"
                f"Original token count: {len(body) // 4}\nOutput:\n{body}",
            )
            out.append(o)
        msg = words(rnd, rnd.randint(10, 80))
        m = self.rec("response_item:message:assistant")
        m["payload"]["content"][0]["text"] = msg
        if self.old:
            a = self.rec("event_msg:agent_message")
            a["payload"]["message"] = msg
        else:
            a = self.rec("event_msg:item_completed:AgentMessage")
            a["payload"]["item"]["content"][0]["text"] = msg
        out += [a, m]
        self.tokens(out, *self.prompt_tokens(), rnd.randint(20, 400), 0)
        done = self.rec("event_msg:task_complete")
        done["payload"]["last_agent_message"] = msg
        out.append(done)
        return out


def rollout_path(root: Path, tid: str, t: float) -> Path:
    d = datetime.fromtimestamp(t, UTC)
    day = root / "sessions" / f"{d:%Y}" / f"{d:%m}" / f"{d:%d}"
    day.mkdir(parents=True, exist_ok=True)
    return day / f"rollout-{d:%Y-%m-%dT%H-%M-%S}-{tid}.jsonl"


def write_thread_family(root: Path, rnd: random.Random, target: int, t0: float, n_children: int) -> tuple[int, int]:
    """A lead thread of about `target` bytes (several turns) and its sub-agent threads."""
    old = rnd.random() < 0.25
    lead_id = thread_id(rnd, t0)
    kids = [(thread_id(rnd, t0 + 1 + i), f"/root/task_{i}") for i in range(n_children)]
    w = ThreadWriter(rnd, lead_id, lead_id, t0, old)
    path = rollout_path(root, lead_id, t0)
    written = append_jsonl(path, [w.meta(None, None)])
    first = True
    while written < target:
        written += append_jsonl(path, w.turn(kids if first else []))
        first = False
    for kid, kpath in kids:
        cw = ThreadWriter(rnd, kid, lead_id, t0 + 1, old)
        kp = rollout_path(root, kid, t0 + 1)
        written += append_jsonl(kp, [cw.meta(lead_id, kpath)] + cw.turn())
    return written, 1 + len(kids)


def write_codex_corpus(root: str, n_threads: int = 400, target_bytes: int = 200 << 20, seed: int = 0) -> int:
    """Write about `n_threads` rollouts totalling about `target_bytes` under
    root/sessions/YYYY/MM/DD (root is a CODEX_HOME). Returns bytes written."""
    rnd = random.Random(seed)
    rootp = Path(root)
    rootp.mkdir(parents=True, exist_ok=True)
    total, threads, i = 0, 0, 0
    each = max(40_000, target_bytes // max(1, n_threads))
    t0 = 1796000000.0
    while threads < n_threads and total < target_bytes * 1.5:
        kids = rnd.choice((0, 0, 0, 1, 2)) if n_threads - threads > 3 else 0
        size = int(each * (1 + kids) * rnd.uniform(0.3, 1.7))
        # an hour apart, going back from t0: a history, never a time still to come
        w, n = write_thread_family(rootp, rnd, size, t0 - i * 3600, kids)
        total, threads, i = total + w, threads + n, i + 1
    return total


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=400)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    n = write_codex_corpus(a.out, a.threads, a.mb << 20, a.seed)
    print(f"wrote {n / 1e6:.0f} MB in about {a.threads} threads under {os.path.abspath(a.out)}")
