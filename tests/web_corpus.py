"""Agent folders built from the real samples for the web tests, and ways to make
them grow (append a line as Claude Code would)."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from conftest import SAMPLES
from huddle.core import Huddle
from huddle.sources import Settings

NESTED = "12-nested-and-custom-agents"


def build(root: Path, codex: bool = True, vibe: bool = True) -> Settings:
    """Every Claude sample merged into one CLAUDE_CONFIG_DIR (and, when asked, the
    Codex and Vibe samples into one home each), under `root`."""
    claude = root / "claude"
    for cfg in sorted((SAMPLES / "claude").glob("*/config")):
        shutil.copytree(cfg / "projects", claude / "projects", dirs_exist_ok=True)
    codex_home = root / "codex"
    if codex:
        for home in sorted((SAMPLES / "codex").glob("*/codex_home"))[:6]:
            shutil.copytree(home, codex_home, dirs_exist_ok=True)
    vibe_home = root / "vibe"
    if vibe:
        for logs in sorted((SAMPLES / "vibe").glob("*/logs"))[:6]:
            shutil.copytree(logs, vibe_home / "logs", dirs_exist_ok=True)
    return Settings(
        folders={"claude": str(claude), "codex": str(codex_home), "vibe": str(vibe_home)},
        huddle_home=str(root / "huddle-home"),
    )


def env_of(settings: Settings) -> dict:
    return settings.env()


def core(settings: Settings) -> Huddle:
    h = Huddle(settings)
    h.refresh()
    return h


def one_session(root: Path, scenario: str = NESTED) -> tuple[Settings, str, Path]:
    """One Claude sample alone in its own config dir: (settings, session id, main file)."""
    claude = root / "claude"
    shutil.copytree(SAMPLES / "claude" / scenario / "config" / "projects", claude / "projects")
    main = sorted(claude.glob("projects/*/*.jsonl"))[0]
    none = str(root / "none")
    return (
        Settings(folders={"claude": str(claude), "codex": none, "vibe": none}, huddle_home=str(root / "hh")),
        main.stem,
        main,
    )


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def say_line(main: Path, text: str) -> bytes:
    """A Claude Code assistant text record like the file's own, saying `text` now."""
    rec = None
    for line in main.read_text().splitlines():
        d = json.loads(line)
        if d.get("type") == "assistant" and d["message"]["content"][0].get("type") == "text":
            rec = d
    assert rec is not None, f"no assistant text record in {main}"
    rec = json.loads(json.dumps(rec))
    rec["uuid"] = str(uuid.uuid4())
    rec["timestamp"] = _iso(time.time())
    rec["message"]["id"] = "msg_01" + uuid.uuid4().hex[:22]
    rec["message"]["content"] = [{"type": "text", "text": text}]
    rec["message"]["stop_reason"] = "end_turn"
    return (json.dumps(rec) + "\n").encode()


def append_say(main: Path, text: str) -> None:
    with open(main, "ab") as f:
        f.write(say_line(main, text))


def lengthen(main: Path, n: int, t0: float | None = None) -> None:
    """Append `n` numbered agent messages (a long conversation to page through)."""
    t0 = time.time() - n if t0 is None else t0
    lines = []
    for i in range(n):
        line = json.loads(say_line(main, f"history message {i:03d}"))
        line["timestamp"] = _iso(t0 + i)
        lines.append(json.dumps(line) + "\n")
    with open(main, "a") as f:
        f.writelines(lines)
