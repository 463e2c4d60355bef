#!/usr/bin/env python3
"""Screenshots of the board and a session page at 1440, 800 and 390 px, into
docs/screenshots/ (Debian's Chromium through Playwright, as the browser tests drive it).

    .venv/bin/python scripts/screenshots.py [OUT_DIR]

The pages show the test samples (every Claude sample, six Codex and six Vibe homes)
beside the built-in demo held at its needs-you moment (the lead asks to push), so the
board has a session that needs you and the session page shows the call it waits on.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

WIDTHS = {1440: 900, 800: 900, 390: 844}


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
            browser.close()
        for f in sorted(out.glob("*.png")):
            print(f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}: {f.stat().st_size // 1024} KB")
    finally:
        demo.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
