"""`huddle usage` on the real Mistral Vibe samples: sub-agents' own rows and the scripted
model listed as unpriced (totals against the stores' own: tests/test_conformance.py)."""

from __future__ import annotations

from pathlib import Path

from huddle.core import Huddle
from huddle.sources import Settings
from huddle.usage.report import report

VIBE = Path(__file__).parent / "fixtures" / "samples" / "vibe"
SCENARIOS = sorted(p.name for p in VIBE.iterdir() if (p / "logs" / "session").is_dir())


def vibe_huddle(name: str) -> Huddle:
    h = Huddle(
        Settings(
            folders={"claude": "/nonexistent", "codex": "/nonexistent", "vibe": str(VIBE / name)},
            huddle_home="/nonexistent-huddle-test",
        ),
        sources=["vibe"],
    )
    h.refresh()
    return h


def test_sub_agents_have_their_own_rows():
    rows = report(vibe_huddle("2.26.1-legacy-subagent"), by="agent")["rows"]
    assert {r["key"] for r in rows} == {"vibe:lead", "vibe:explore"}
    assert all(r["responses"] > 0 for r in rows)


def test_the_scripted_model_is_listed_unpriced():
    data = report(vibe_huddle("3.0.3-unified-qa"), by="model")
    assert data["totals"]["cost_usd"] is None
    assert data["unpriced"] == [{"model": "fake-model", "tokens": data["totals"]["total_tokens"]}]
