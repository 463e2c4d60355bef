"""Small helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path

from huddle.core import Huddle
from huddle.sources import Settings

NOWHERE = "/nonexistent-huddle-test"


def claude_huddle(config_dir: Path | str, huddle_home: Path | str = NOWHERE) -> Huddle:
    """A Huddle reading only one Claude config dir."""
    s = Settings(folders={"claude": str(config_dir), "codex": NOWHERE, "vibe": NOWHERE}, huddle_home=str(huddle_home))
    h = Huddle(s, sources=["claude"])
    h.refresh()
    return h
