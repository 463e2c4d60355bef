"""`huddle usage --json` is what GET /api/usage returns, on every Claude Code version a
user's history holds (tests/fixtures/samples/claude-history): the command reads token
counts only (a usage-only read and its index), the server reads everything, and both
must name the same agents, titles and starts. A real uvicorn on a free port."""

from __future__ import annotations

import json
import os
import shutil

import httpx
import pytest

import incli
from conftest import SAMPLES
from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings

HISTORY = SAMPLES / "claude-history"
GROUPS = ("agent", "session", "day", "model", "project")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Every history home's projects side by side in one config dir (each version's
    project folder under its own name), and a server on it."""
    root = tmp_path_factory.mktemp("history")
    projects = root / "claude" / "projects"
    for cfg in sorted(HISTORY.glob("*/*/config")):
        for p in (cfg / "projects").iterdir():
            shutil.copytree(p, projects / f"{cfg.parent.parent.name}-{cfg.parent.name}{p.name}")
    none = str(root / "none")
    (root / "home").mkdir()
    env = {**os.environ, "HOME": str(root / "home"), "HUDDLE_HOME": str(root / "hh")}
    env.update(CLAUDE_CONFIG_DIR=str(root / "claude"), CODEX_HOME=none, VIBE_HOME=none)
    h = Huddle(Settings.from_env(env))  # as `huddle serve` makes it
    h.refresh()
    with ServerThread(h) as srv:
        yield env, srv


def _cli(env: dict[str, str], *args: str) -> dict:
    out = incli.huddle("usage", "--json", *args, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_command_is_the_route_on_every_version(served):
    env, srv = served
    # the first run reads the files (its index written), the next ones answer from the index
    for by in (*GROUPS, "agent"):
        route = httpx.get(srv.url + "api/usage", params={"by": by}, timeout=30).json()
        assert _cli(env, "--by", by) == route, by
    agents = {r["agent"] for r in route["rows"]}
    assert {"lead", "general-purpose", "warmup"} <= agents and "sub-agent" not in agents


def test_a_one_shot_read_holds_the_collector_off_and_puts_it_back():
    """huddle.oneshot.FewCollections: off inside (even when the read fails), as it was after."""
    import gc

    from huddle.oneshot import FewCollections

    assert gc.isenabled()
    with pytest.raises(ValueError), FewCollections():
        assert not gc.isenabled()
        raise ValueError("a read that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with FewCollections():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
