"""Write a large Gemini CLI corpus shaped like the real samples.

Every file is a real Gemini CLI 0.61.0 chat file from tests/fixtures/samples/gemini (the
long 50-response session, shell, files, resume, tool errors, a lead with its sub-agent),
copied under new session ids into several projects, with its texts and tool outputs
lengthened so the corpus has the size of a heavy user's history.

    python bench/gemini_corpus.py OUT_DIR [--mb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import uuid
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "samples" / "gemini"
TEMPLATES = ["09-long", "02-shell", "03-files", "04-resume", "05-tool-error", "07-subagent"]


def _load(name: str) -> list[tuple[str, list[str]]]:
    """A scenario's chat files (path under chats/, lines)."""
    chats = next((SAMPLES / name / "home" / ".gemini" / "tmp").glob("*/chats"))
    return [(str(p.relative_to(chats)), p.read_text().splitlines()) for p in sorted(chats.rglob("*.jsonl"))]


def _lengthen(line: str, rnd: random.Random) -> str:
    """A tool output or answer a few times longer (as real ones are): same record, more text."""
    if '"functionResponse"' not in line and '"type":"gemini"' not in line:
        return line
    d = json.loads(line)
    pad = " ".join(rnd.choice(["src/app.py", "ok", "def main():", "return 0", "# note", "1234"]) for _ in range(60))
    for tc in d.get("toolCalls") or ():
        for r in tc.get("result") or ():
            resp = (r.get("functionResponse") or {}).get("response") or {}
            if isinstance(resp.get("output"), str):
                resp["output"] += "\n" + pad * rnd.randint(1, 6)
    c = d.get("content")
    if isinstance(c, list):
        for p in c:
            resp = (p.get("functionResponse") or {}).get("response") or {}
            if isinstance(resp.get("output"), str):
                resp["output"] += "\n" + pad * rnd.randint(1, 6)
    return json.dumps(d, separators=(",", ":"))


def write_gemini_corpus(out: str, target_bytes: int = 100 << 20, seed: int = 1) -> str:
    rnd = random.Random(seed)
    templates = {name: _load(name) for name in TEMPLATES}
    root = Path(out) / ".gemini" / "tmp"
    total = n = 0
    while total < target_bytes:
        name = TEMPLATES[n % len(TEMPLATES)]
        proj = f"proj-{n % 12}"
        chats = root / proj / "chats"
        if not (root / proj / ".project_root").exists():
            chats.mkdir(parents=True, exist_ok=True)
            (root / proj / ".project_root").write_text(f"/home/dev/work/{proj}")
        ids: dict[str, str] = {}
        for _rel, lines in templates[name]:
            sid = json.loads(lines[0])["sessionId"]
            ids.setdefault(sid, str(uuid.UUID(int=rnd.getrandbits(128))))
        for rel, lines in templates[name]:
            text = "\n".join(_lengthen(x, rnd) for x in lines) + "\n"
            for old, new in ids.items():
                text = text.replace(old, new)
                rel = rel.replace(old, new).replace(old[:8], new[:8])
            path = chats / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            total += len(text)
        n += 1
    return f"{n} sessions, {total / 1e6:.0f} MB in {root}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=int, default=100)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(write_gemini_corpus(a.out, a.mb << 20))


if __name__ == "__main__":
    sys.exit(main())
