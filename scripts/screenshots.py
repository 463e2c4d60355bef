#!/usr/bin/env python3
"""Screenshots of the board, a session page and the overview at 1440, 800 and 390 px,
into docs/screenshots/ (Debian's Chromium through Playwright, as the browser tests drive it).

    .venv/bin/python scripts/screenshots.py [OUT_DIR]

The pages show the test samples (every Claude sample, six Codex and six Vibe homes)
beside the built-in demo held at its needs-you moment (the lead asks to push), so the
board has a session that needs you and the session page shows the call it waits on.
The overview shows six weeks of history: the Claude samples copied onto earlier days
(new ids, their times moved), beside the Codex and Vibe samples.
"""

from __future__ import annotations

import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

WIDTHS = {1440: 900, 800: 900, 390: 844}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAMP = re.compile(r'"timestamp":"([0-9T:.\-]+)Z"')


def spread(claude: Path, samples: Path, days: int = 42, seed: int = 7) -> None:
    """The Claude samples copied onto earlier days under `claude/projects`: each copy with
    new session and response ids (counted as sessions of their own), its times moved back."""
    rnd = random.Random(seed)
    now = time.time()
    for k in range(1, 40):
        cfg = rnd.choice(sorted(samples.glob("claude/*/config")))
        back = rnd.randint(0, days) * 86400 + rnd.choice((-9, -7, -5, -3, -2, -1, 0, 1, 2, 4)) * 3600
        ids: dict[str, str] = {}

        def new_id(m: re.Match, k: int = k, ids: dict = ids) -> str:
            return ids.setdefault(m.group(0), str(uuid.uuid5(uuid.NAMESPACE_URL, f"shots/{k}/{m.group(0)}")))

        files = sorted(p for p in (cfg / "projects").rglob("*") if p.is_file())
        last = max((t for f in files if f.suffix == ".jsonl" for t in STAMP.findall(f.read_text())), default=None)
        if last is None:
            continue
        shift = now - back - datetime.fromisoformat(last).replace(tzinfo=UTC).timestamp()

        def moved(m: re.Match, shift: float = shift) -> str:
            t = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp() + shift
            return f'"timestamp":"{datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")[:-6]}Z"'

        for f in files:
            out = claude / "projects" / UUID.sub(new_id, str(f.relative_to(cfg / "projects")))
            out.parent.mkdir(parents=True, exist_ok=True)
            text = UUID.sub(new_id, f.read_text())
            text = re.sub(r'"(msg|req)_([A-Za-z0-9]+)"', lambda m, k=k: f'"{m.group(1)}_{m.group(2)}k{k}"', text)
            out.write_text(STAMP.sub(moved, text))


def main() -> None:
    import web_corpus
    from playwright.sync_api import sync_playwright

    from huddle.core import Huddle
    from huddle.demo import Demo
    from huddle.server import ServerThread
    from huddle.sources import Settings

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="huddle-shots-"))
    try:
        settings = web_corpus.build(root)
        demo = Demo(Settings(folders={}, huddle_home=str(root / "demo-home")), speed=0)
        demo.play(until="permission")  # its files, up to the lead asking to push (this process waits)
        claude = Path(settings.folders["claude"])
        shutil.copytree(Path(demo.claude_dir) / "projects", claude / "projects", dirs_exist_ok=True)
        shutil.copytree(Path(demo.claude_dir) / "sessions", claude / "sessions", dirs_exist_ok=True)
        with ServerThread(Huddle(settings)) as srv, sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
            for width, height in WIDTHS.items():
                pg = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
                pg.goto(srv.url)
                pg.wait_for_selector("#rows tr.r-needs_you")
                time.sleep(0.5)
                pg.screenshot(path=str(out / f"board-{width}.png"))
                pg.goto(f"{srv.url}session/{demo.session_id}#call")
                pg.wait_for_selector(".tile.t-needs_you")
                time.sleep(0.5)
                pg.screenshot(path=str(out / f"session-{width}.png"))
                pg.close()
            history = web_corpus.build(root / "history")
            spread(Path(history.folders["claude"]), ROOT / "tests" / "fixtures" / "samples")
            with ServerThread(Huddle(history)) as hist:
                for width, height in WIDTHS.items():
                    pg = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
                    pg.goto(f"{hist.url}overview?days=90")
                    pg.wait_for_selector("body[data-ready]", timeout=120_000)
                    time.sleep(0.3)
                    pg.screenshot(path=str(out / f"overview-{width}.png"), full_page=True)
                    pg.close()
            browser.close()
        for f in sorted(out.glob("*.png")):
            print(f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}: {f.stat().st_size // 1024} KB")
    finally:
        demo.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
