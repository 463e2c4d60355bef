"""A real-shaped corpus: the real session files of ../shared/external, cloned with fresh ids.

    python bench/real_corpus.py [--copies 23] [--out DIR] [--agents claude,codex]

The synthetic corpora (claude_corpus.py, codex_corpus.py) are what huddle was tuned on; they
hid what real histories hold (Claude Code 1.0-2.0 `summary` records, sub-agents that never
reported back, year-old sessions, folders of hundreds of sessions, Codex rollouts of every
age). This builder takes every file that SOURCES.md and manifest.json call `real` or
`real-sanitised` (hand-made fixtures are left out) and writes `--copies` clones of each,
keeping every byte but the ids: session and record UUIDs, message, request, tool-call and
response ids and sub-agent ids are rewritten consistently within a clone (same length, same
character classes, so a clone's summaries, parents, resumes and sub-agent links hold, and no
two clones share a response id that the usage counters would merge). Everything else stays:
texts, timestamps, versions, token counts, folder layout (a clone goes into the same project
folder, so folders grow as a real user's do). Each file's mtime is its last record's time
(an hour ago at the latest): a history nothing touched lately.

The external files are read in place and never copied into the repository; the corpus goes
under bench/corpus/ (git-ignored). Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXTERNAL = HERE.parent.parent / "shared" / "external"
REAL = ("real", "real-sanitised")

# The ids a clone rewrites: UUIDs, Anthropic/OpenAI ids with their prefixes, Claude's
# short sub-agent ids as they appear in file names and records.
ID = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?:msg|req|toolu|srvtoolu|call|resp|rs|fc|msg_bdrk|ws)_[A-Za-z0-9]{8,}"
    rb"|agent-a?[0-9a-f]{7,16}\b|\[REDACTED_[A-Z_]{2,40}\]"
    rb'|(?<="agentId":")a?[0-9a-f]{7,16}(?=")'
)
STAMP = re.compile(rb'"timestamp"\s*:\s*"([0-9T:.\-+Z]{19,35})"')


def real_files(external: Path = EXTERNAL) -> list[tuple[str, Path, Path]]:
    """(agent, home, file) for every real or real-sanitised file the tables name: `home`
    is the agent folder it was copied into (`<label>/claude`, `<label>/codex`...)."""
    out: dict[Path, tuple[str, Path, Path]] = {}
    for e in json.loads((external / "manifest.json").read_text()):
        if e.get("kind") in REAL and e.get("dest"):
            _add(out, external, e["dest"], e["agent"])
    agent = kind = dest = -1
    for line in (external / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "copied to" in cells:  # a table's header: where its columns are
            dest, kind = cells.index("copied to"), cells.index("kind")
            agent = cells.index("agent") if "agent" in cells else -1
            continue
        if dest < 0 or len(cells) <= max(dest, kind) or not line.startswith("|"):
            continue
        path = cells[dest].strip("`")
        if cells[kind] in REAL and path and "(" not in path:
            _add(out, external, path, cells[agent] if agent >= 0 else path.split("/")[1])
    return sorted(out.values(), key=lambda x: str(x[2]))


def _add(out: dict, external: Path, dest: str, agent: str) -> None:
    p = external / dest
    parts = Path(dest).parts
    if p.is_file() and len(parts) > 2:
        out[p] = (agent, external / parts[0] / parts[1], p)


def _pieces(data: bytes) -> list[bytes]:
    """The file split at its ids: even places literal bytes, odd places ids."""
    out: list[bytes] = []
    last = 0
    for m in ID.finditer(data):
        out.append(data[last : m.start()])
        out.append(m.group(0))
        last = m.end()
    out.append(data[last:])
    return out


def fresh(token: bytes, clone: int, salt: bytes = b"huddle-real") -> bytes:
    """The same id in clone `clone`: same length and character classes, prefixes kept."""
    if clone == 0:
        return token
    head = b""
    for prefix in (b"agent-", b"msg_bdrk_"):
        if token.startswith(prefix):
            head, token = prefix, token[len(prefix) :]
            break
    else:
        if b"_" in token and not token[:1].isdigit():
            i = token.index(b"_") + 1
            head, token = token[:i], token[i:]
    digest = hashlib.blake2b(token + b"/%d/" % clone + salt, digest_size=64).digest()
    out = bytearray(token)
    for i, c in enumerate(token):
        r = digest[i % 64] ^ (i // 64)
        if 48 <= c <= 57:
            out[i] = 48 + r % 10
        elif 97 <= c <= 102 and all(ch in b"0123456789abcdef-" for ch in token):
            out[i] = b"0123456789abcdef"[r % 16]
        elif 97 <= c <= 122:
            out[i] = 97 + r % 26
        elif 65 <= c <= 90:
            out[i] = 65 + r % 26
    if len(token) == 36 and token[14:15] in b"1234567":  # a UUID keeps its version nibble
        out[14] = token[14]
    return head + bytes(out)


def last_time(data: bytes) -> float | None:
    for m in reversed(list(STAMP.finditer(data[-65536:]))):
        try:
            return datetime.fromisoformat(m.group(1).decode().replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return None


def build(out: Path, copies: int, agents: set[str], external: Path = EXTERNAL) -> dict:
    """Write the corpus; returns its summary (also kept as out/corpus.json)."""
    files = [f for f in real_files(external) if f[0] in agents]
    latest = time.time() - 3600
    count: dict[str, int] = {}
    size = 0
    for agent, home, path in files:
        data = path.read_bytes()
        pieces = _pieces(data)
        rel = str(path.relative_to(home)).encode()
        rel_pieces = _pieces(rel)
        when = min(last_time(data) or latest, latest)
        for k in range(copies):
            cache: dict[bytes, bytes] = {}

            def swap(ps: list[bytes], k: int = k, cache: dict[bytes, bytes] = cache) -> bytes:
                return b"".join(
                    p if i % 2 == 0 else (cache.get(p) or cache.setdefault(p, fresh(p, k))) for i, p in enumerate(ps)
                )

            dest = out / agent / swap(rel_pieces).decode()
            dest.parent.mkdir(parents=True, exist_ok=True)
            body = swap(pieces)
            dest.write_bytes(body)
            os.utime(dest, (when, when))
            size += len(body)
            count[agent] = count.get(agent, 0) + 1
    for d in sorted((p for p in out.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        os.utime(d, (latest, latest))
    summary = {"copies": copies, "files": count, "bytes": size, "from": len(files)}
    (out / "corpus.json").write_text(json.dumps(summary))
    return summary


def ensure(copies: int = 23, agents: str = "claude,codex", out: Path | None = None) -> Path:
    """The corpus folder, built once (`out/done` marks it complete)."""
    out = out or HERE / "corpus" / f"real2-{copies}-{agents.replace(',', '-')}"  # 2: redacted ids rewritten
    if not (out / "done").exists():
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        t0 = time.perf_counter()
        s = build(out, copies, set(agents.split(",")))
        (out / "done").write_text("ok")
        print(
            f"built {out}: {s['files']} files from {s['from']} real ones, {s['bytes'] / 1e6:.0f} MB"
            f" in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=23)
    ap.add_argument("--agents", default="claude,codex")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    print(ensure(a.copies, a.agents, a.out))


if __name__ == "__main__":
    main()
