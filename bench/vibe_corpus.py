"""Write a large Mistral Vibe corpus shaped like the real samples.

Unified stores are built from the real journal of tests/fixtures/samples/vibe
(2.26.1 and 3.0.3 `*-unified-bash`: command_reserved, core_input, action_intent /
action_result for completions, tools and hooks, projection_delta, receipts) with new
ids, times, prompts, commands and outputs, and written the way Vibe writes them:
the journal segment grows line by line, and at turn ends a generation is published
(documents, ~64 KiB chunks of the history, runtime state with one digest per action,
a new segment, CURRENT) with only the two newest generations kept. A command's
output is repeated where Vibe repeats it (tool result, core input, hook call and
result, the effect entry, the next model input). Legacy sessions repeat the real
`messages.jsonl` / `meta.json` shapes. Sessions with sub-agents are copies of the
real sub-agent samples (lead and child stores, legacy agents/) under new ids.

    python bench/vibe_corpus.py OUT_DIR [--sessions 300] [--mb 100]

VIBE_HOME=OUT_DIR then reads it (sessions under OUT_DIR/logs/session).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "samples" / "vibe"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TURN = re.compile(r"turn-[0-9a-f]{32}")
MS = re.compile(r"\b1796\d{9}\b")
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
CHUNK = 64 << 10


def dumps(v) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def esc(s: str) -> str:
    return json.dumps(s)[1:-1]


def words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


def output_of(rnd: random.Random) -> str:
    size = min(int(rnd.paretovariate(1.2) * 300), 2_000_000)  # a long tail of big outputs
    line = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(79)) + "\n"
    return (line * (size // 80 + 1))[:size]


class Template:
    """One real `-p` bash turn of a version: 34 journal records and the documents."""

    def __init__(self, version: str):
        store = next(p for p in (SAMPLES / f"{version}-unified-bash" / "logs" / "session" / "unified").iterdir())
        self.sid = store.name
        self.lines = (store / "journal" / "0000000000000001.jsonl").read_text().splitlines()
        cur = json.loads((store / "CURRENT").read_text())
        gdir = store / "generations" / cur["generation"]
        self.minor = cur["store_format_minor"]
        self.manifest = json.loads((gdir / "manifest.json").read_text())
        self.projection = json.loads((gdir / "projection-state.json").read_text())
        self.runtime = json.loads((gdir / "runtime-state.json").read_text())
        self.checkpoint = (gdir / "checkpoint.json").read_text()
        self.chunks = {
            c: (store / "chunks" / f"{c}.json").read_text()
            for c in (self.manifest["checkpoint"]["chunks"] + self.manifest["runtime_state"]["chunks"])
        }
        self.meta = json.loads((store / "meta.json").read_text())
        self.prompt = json.loads(self.lines[0])["payload"]["params"]["message"][0]["text"]
        self.cwd = self.runtime["session_metadata"]["cwd"]
        calls = [json.loads(self.lines[i])["payload"]["request"] for i in (7, 20)]
        self.commands = [c["call"]["arguments"]["command"] for c in calls]
        self.call_ids = [c["call_id"] for c in calls]
        outs = [json.loads(self.lines[i])["payload"]["result"]["result"]["structured_content"] for i in (9, 22)]
        self.outputs = [outs[0]["stdout"], outs[1]["stderr"]]
        self.action = self.runtime["actions"][0]


class StoreWriter:
    """Writes one unified store as Vibe does: journal lines, then generations."""

    def __init__(self, root: Path, tpl: Template, rnd: random.Random, sid: str, t0_ms: int, cwd: str):
        self.tpl, self.rnd, self.sid, self.cwd = tpl, rnd, sid, cwd
        self.dir = root / sid
        (self.dir / "journal").mkdir(parents=True)
        (self.dir / "chunks").mkdir()
        (self.dir / "generations").mkdir()
        self.clock = t0_ms
        self.seq = 0
        self.entries: dict[str, dict] = {}
        self.envelope: dict = {}
        self.actions: list[dict] = []
        self.generations: list[tuple[str, str]] = []  # (generation, its segment path)
        self.segment = None
        for c, text in tpl.chunks.items():
            (self.dir / "chunks" / f"{c}.json").write_text(text)
        self.publish()
        meta = dict(tpl.meta, session_id=sid, environment={"working_directory": cwd}, origin_directory=cwd)
        (self.dir / "meta.json").write_text(json.dumps(meta))

    def _clone(self, idx: range, turn: str, subs: dict[str, str]) -> None:
        """Records `idx` of the template with fresh ids, shifted times and new texts."""
        text = "\n".join(self.tpl.lines[i] for i in idx)
        ids: dict[str, str] = {self.tpl.sid: self.sid}
        text = UUID.sub(lambda m: ids.setdefault(m.group(0), str(uuid.UUID(int=self.rnd.getrandbits(128)))), text)
        text = TURN.sub(turn, text)
        for old, new in subs.items():
            text = text.replace(old, new)
        times = [int(t) for t in MS.findall(text)]
        shift = self.clock - min(times) + 20 if times else 0
        text = MS.sub(lambda m: str(int(m.group(0)) + shift), text)
        self.clock = max(times) + shift + self.rnd.randint(50, 3000) if times else self.clock
        out = []
        for line in text.split("\n"):
            rec = json.loads(line)
            self.seq += 1
            rec["sequence"] = self.seq
            if rec["type"] == "projection_delta":
                self._apply(rec["payload"]["delta"])
            elif rec["type"] == "action_intent":
                self.actions.append(
                    dict(
                        self.tpl.action,
                        action_id=rec["payload"]["action_id"],
                        lease_id=rec["payload"]["action_id"],
                        kind=rec["payload"]["kind"],
                    )
                )
            out.append(dumps(rec))
        with open(self.segment, "a") as f:
            f.write("\n".join(out) + "\n")

    def _apply(self, ops: list[dict]) -> None:
        for op in ops:
            if op["op"] in ("append_entry", "replace_entry"):
                self.entries[op["entry"]["id"]] = op["entry"]
            elif op["op"] == "set_envelope":
                self.envelope = op["state"]

    def turn(self, steps: int, first: bool) -> None:
        tpl, rnd = self.tpl, self.rnd
        turn = "turn-%032x" % rnd.getrandbits(128)
        base = {esc(tpl.prompt): esc(words(rnd, rnd.randint(5, 60))), tpl.cwd: self.cwd}
        self._clone(range(3), turn, base)
        for k in range(steps):
            which = 0 if first and k == 0 else 1
            idx = range(3, 16) if which == 0 else range(16, 29)
            subs = dict(base)
            subs[esc(tpl.commands[which])] = esc(f"cd {self.cwd} && " + words(rnd, rnd.randint(2, 12)))
            subs[esc(tpl.outputs[which])] = esc(output_of(rnd))
            subs['"' + tpl.call_ids[which] + '"'] = '"%09x"' % rnd.getrandbits(36)
            self._clone(idx, turn, subs)
        self._clone(range(29, 34), turn, base)

    def publish(self) -> None:
        """A new generation: documents, history chunks, a new segment, CURRENT; two kept."""
        tpl, gen = self.tpl, "%016d" % self.seq
        gdir = self.dir / "generations" / gen
        gdir.mkdir()
        chunks, buf, size = [], [], 0
        for e in self.entries.values():
            s = dumps(e)
            if buf and size + len(s) > CHUNK:
                chunks.append(self._chunk(buf))
                buf, size = [], 0
            buf.append(s)
            size += len(s) + 1
        if buf:
            chunks.append(self._chunk(buf))
        snap = json.loads(json.dumps(self.envelope or tpl.projection["snapshot"]).replace(tpl.sid, self.sid))
        snap.setdefault("history", {})["entries"] = []
        ps = dict(tpl.projection, session_id=self.sid, snapshot=snap, snapshot_sequence=self.seq, watermark=self.seq)
        rt = json.loads(json.dumps(tpl.runtime).replace(tpl.sid, self.sid).replace(tpl.cwd, self.cwd))
        rt.update(actions=self.actions, snapshot_sequence=self.seq)
        docs = {"projection-state.json": dumps(ps), "runtime-state.json": dumps(rt), "checkpoint.json": tpl.checkpoint}
        for name, text in docs.items():
            (gdir / name).write_text(text)
        segment = f"journal/{self.seq + 1:016d}.jsonl"
        man = json.loads(json.dumps(tpl.manifest))
        man.update(
            generation=gen,
            snapshot_sequence=self.seq,
            session_id=self.sid,
            recovery_journal_segment={"first_sequence": self.seq + 1, "path": segment},
        )
        man["projection_state"]["chunks"] = chunks
        (gdir / "manifest.json").write_text(dumps(man))
        self.segment = self.dir / segment
        self.segment.touch()
        cur = {
            "generation": gen,
            "manifest_sha256": "0" * 64,
            "session_id": self.sid,
            "snapshot_sequence": self.seq,
            "store_format": "mistral.vibe.unified-session-store/v1",
            "store_format_minor": tpl.minor,
        }
        tmp = self.dir / "CURRENT.tmp"
        tmp.write_text(dumps(cur))
        os.replace(tmp, self.dir / "CURRENT")
        self.generations.append((gen, segment))
        for old, seg in self.generations[:-2]:
            shutil.rmtree(self.dir / "generations" / old)
            (self.dir / seg).unlink(missing_ok=True)
        self.generations = self.generations[-2:]

    def _chunk(self, items: list[str]) -> str:
        data = "[" + ",".join(items) + "]"
        name = hashlib.sha256(data.encode()).hexdigest()
        path = self.dir / "chunks" / f"{name}.json"
        if not path.exists():
            path.write_text(data)
        return name


def write_unified(root: Path, rnd: random.Random, tpl: Template, target: int, t0: float, n: int) -> int:
    sid = str(uuid.UUID(int=rnd.getrandbits(128)))
    w = StoreWriter(root / "unified", tpl, rnd, sid, int(t0 * 1000), f"/home/dev/work/proj-{n % 40}")
    first = True
    while dir_size(w.dir) < target:
        w.turn(rnd.randint(1, 6), first)
        first = False
        if rnd.random() < 0.7:  # -p runs publish at each turn end; long TUI runs now and then
            w.publish()
    return dir_size(w.dir)


def write_legacy(root: Path, rnd: random.Random, target: int, t0: float, n: int) -> int:
    src = next((SAMPLES / "2.26.1-legacy-bash" / "logs" / "session").glob("session_*"))
    lines = [json.loads(x) for x in (src / "messages.jsonl").read_text().splitlines()]
    meta = json.loads((src / "meta.json").read_text())
    sid = str(uuid.UUID(int=rnd.getrandbits(128)))
    stamp = datetime.fromtimestamp(t0, UTC)
    folder = root / f"session_{stamp:%Y%m%d_%H%M%S}_{sid[:8]}"
    folder.mkdir(parents=True)
    cwd = f"/home/dev/work/proj-{n % 40}"
    user, call, result, final = lines[0], lines[1], lines[2], lines[5]
    out, size, turns, prompt_tokens = [], 0, 0, 0
    while size < target:
        turns += 1
        recs = [dict(user, content=words(rnd, rnd.randint(5, 60)), message_id=str(uuid.uuid4()))]
        for _ in range(rnd.randint(1, 6)):
            cid = "%09x" % rnd.getrandbits(36)
            c = json.loads(json.dumps(call))
            c["tool_calls"][0]["id"], c["message_id"] = cid, str(uuid.uuid4())
            c["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": f"cd {cwd} && " + words(rnd, 6)})
            r = json.loads(json.dumps(result))
            stdout = output_of(rnd)
            r["tool_call_id"], r["tool_result"]["output"]["stdout"] = cid, stdout
            r["content"] = f"command: ...\nexit_code: 0\nstdout: {stdout}\nstderr: \nreturncode: 0"
            recs += [c, r]
            prompt_tokens += rnd.randint(4000, 9000)
        recs.append(dict(final, message_id=str(uuid.uuid4())))
        text = "".join(json.dumps(x) + "\n" for x in recs)
        out.append(text)
        size += len(text)
    (folder / "messages.jsonl").write_text("".join(out))
    end = t0 + turns * rnd.uniform(5, 60)
    meta.update(
        session_id=sid,
        start_time=stamp.isoformat(),
        end_time=datetime.fromtimestamp(end, UTC).isoformat(),
        environment={"working_directory": cwd},
        total_messages=sum(o.count("\n") for o in out),
    )
    meta["stats"] = dict(
        meta["stats"], session_prompt_tokens=prompt_tokens, session_completion_tokens=prompt_tokens // 50
    )
    (folder / "meta.json").write_text(json.dumps(meta))
    return size


def copy_with_new_ids(root: Path, case: str, rnd: random.Random) -> int:
    """A real sub-agent sample (lead + children) under new session ids."""
    src = SAMPLES / case / "logs" / "session"
    text_ids: dict[str, str] = {}
    names = [p.name for p in src.rglob("*")] + [json.loads(m.read_text())["session_id"] for m in src.rglob("meta.json")]
    for name in names:
        for m in re.finditer(
            r"(child-[0-9a-f]{24}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", name
        ):
            text_ids.setdefault(
                m.group(1),
                "child-%024x" % rnd.getrandbits(96)
                if m.group(1).startswith("child-")
                else str(uuid.UUID(int=rnd.getrandbits(128))),
            )
    for full in list(text_ids):
        if not full.startswith("child-"):
            text_ids.setdefault(full[:8], text_ids[full][:8])  # legacy folder names carry 8 characters
    size = 0
    for p in sorted(src.rglob("*")):
        if not p.is_file() or p.parent.name == "active":
            continue
        rel = str(p.relative_to(src))
        data = p.read_text()
        for old, new in sorted(text_ids.items(), key=lambda kv: -len(kv[0])):
            rel, data = rel.replace(old, new), data.replace(old, new)
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(data)
        size += len(data)
    return size


def dir_size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def write_vibe_corpus(root: str, n_sessions: int = 300, target_bytes: int = 100 << 20, seed: int = 0) -> dict:
    """Sessions under ROOT/logs/session (VIBE_HOME=ROOT): about 60% unified stores of
    both versions, 30% legacy folders, 10% sub-agent sessions; a long tail of sizes and
    one unified store of about 15% of the whole."""
    rnd = random.Random(seed)
    base = Path(root) / "logs" / "session"
    (base / "unified").mkdir(parents=True, exist_ok=True)
    (base / "active").mkdir(exist_ok=True)
    tpls = [Template("2.26.1"), Template("3.0.3")]
    weights = [rnd.paretovariate(1.3) for _ in range(n_sessions)]
    scale = target_bytes * 0.85 / sum(weights)
    weights[0] = target_bytes * 0.15 / scale  # one long-running session: a big store
    t0 = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    counts = {"unified": 0, "legacy": 0, "subagents": 0}
    for i, w in enumerate(weights):
        target = max(20_000, int(w * scale))
        t = t0 + i * 600
        r = rnd.random() if i else 1.0
        if r < 0.1:
            copy_with_new_ids(
                base, rnd.choice(["3.0.3-unified-subagent", "2.26.1-unified-subagent", "2.26.1-legacy-subagent"]), rnd
            )
            counts["subagents"] += 1
        elif r < 0.4:
            write_legacy(base, rnd, target, t, i)
            counts["legacy"] += 1
        else:
            write_unified(base, rnd, rnd.choice(tpls), target, t, i)
            counts["unified"] += 1
    return counts


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--mb", type=float, default=100)
    a = ap.parse_args()
    print(write_vibe_corpus(a.out, a.sessions, int(a.mb * (1 << 20))))
