"""Which sources run: folders declared by each source, HUDDLE_SOURCES, third-party
adapters through the `huddle.sources` entry point group, and a visible note when one
fails to load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from huddle.io import folders
from huddle.sources import SOURCES, Settings

SAMPLES = Path(__file__).parent / "fixtures" / "samples"

PLUGIN = """
from huddle.sources import Handle, Source, register


class ToyHandle(Handle):
    def refresh(self):
        if self.session.title:
            return False
        self.session.custom_title = "toy session"
        self.session.title = "toy session"
        return True


@register
class ToySource(Source):
    name = "toy"
    folder_env = "TOY_HOME"
    default_folder = "$XDG_STATE_HOME/toy"

    def roots(self):
        return [self.folder]

    def scan(self, known):
        return {"toy:t1": known.get("toy:t1") or ToyHandle("toy", "t1")}
"""


def _install(site: Path, name: str, target: str, module: str | None = None, code: str = "") -> None:
    """A real distribution on sys.path: its dist-info names one entry point."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[huddle.sources]\n{name} = {target}\n")
    if module:
        (site / f"{module}.py").write_text(textwrap.dedent(code))


def _status(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "huddle.cli", "status", "--json"], env=env, capture_output=True, text=True, timeout=60
    )


def _env(tmp_path: Path, **more: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_HOME", "_DIR")) and k != "HUDDLE_SOURCES"}
    env.update(HOME=str(tmp_path / "home"), HUDDLE_HOME=str(tmp_path / "hh"), **more)
    return env


def test_each_source_declares_its_folder_and_variable():
    env = {"HOME": "/h", "CODEX_HOME": "/elsewhere/codex"}
    s = Settings.from_env(env)
    assert s.folder("claude") == "/h/.claude"
    assert s.folder("codex") == "/elsewhere/codex"
    assert s.folder("vibe") == "/h/.vibe"
    assert s.explicit == ("codex",)
    assert s.huddle_home == "/h/.local/share/huddle"
    for name, cls in SOURCES.items():
        assert cls.name == name
        assert isinstance(cls.folder_env, (str, type(None))) and isinstance(cls.default_folder, (str, type(None)))
    assert Settings.from_env(s.env() | {"HOME": "/other"}).folders == s.folders


def test_folder_defaults_follow_xdg_and_ignore_a_relative_value():
    assert folders.expand({"HOME": "/h"}, "$XDG_DATA_HOME/x") == "/h/.local/share/x"
    assert folders.expand({"HOME": "/h", "XDG_DATA_HOME": "/d"}, "$XDG_DATA_HOME/x") == "/d/x"
    assert folders.expand({"HOME": "/h", "XDG_STATE_HOME": "rel"}, "$XDG_STATE_HOME/x") == "/h/.local/state/x"
    assert folders.huddle_home({"HOME": "/h", "XDG_DATA_HOME": "/d"}) == "/d/huddle"
    assert folders.huddle_home({"HOME": "/h", "HUDDLE_HOME": "/hh"}) == "/hh"


def test_huddle_sources_narrows_the_set_and_names_a_typo(tmp_path):
    cfg = str(SAMPLES / "claude" / "01-basic-tools" / "config")
    both = json.loads(_status(_env(tmp_path, CLAUDE_CONFIG_DIR=cfg)).stdout)["sessions"]
    assert {s["source"] for s in both} == {"claude"}
    r = _status(_env(tmp_path, CLAUDE_CONFIG_DIR=cfg, HUDDLE_SOURCES="codex,nosuch"))
    assert r.returncode == 0
    assert json.loads(r.stdout)["sessions"] == []
    assert "no source named 'nosuch'" in r.stderr


def test_a_third_party_source_registers_through_an_entry_point(tmp_path):
    site = tmp_path / "site"
    _install(site, "huddle_toy", "huddle_toy", module="huddle_toy", code=PLUGIN)
    state = tmp_path / "state"
    (state / "toy").mkdir(parents=True)
    env = _env(tmp_path, PYTHONPATH=str(site), XDG_STATE_HOME=str(state))
    r = _status(env)
    assert r.returncode == 0, r.stderr
    (row,) = [s for s in json.loads(r.stdout)["sessions"] if s["source"] == "toy"]
    assert row["title"] == "toy session"


def test_a_source_that_fails_to_load_is_a_note_not_a_silent_drop(tmp_path):
    site = tmp_path / "site"
    _install(site, "huddle_broken", "huddle_broken", module="huddle_broken", code="raise RuntimeError('kaput')\n")
    _install(site, "huddle_missing", "no_such_module_here")
    cfg = str(SAMPLES / "claude" / "01-basic-tools" / "config")
    r = _status(_env(tmp_path, PYTHONPATH=str(site), CLAUDE_CONFIG_DIR=cfg))
    assert r.returncode == 0
    lines = [ln for ln in r.stderr.splitlines() if "cannot load" in ln]
    assert any("huddle_broken" in ln and "RuntimeError: kaput" in ln for ln in lines)
    assert any("huddle_missing" in ln and "ModuleNotFoundError" in ln for ln in lines)
    assert len(lines) == 2
    assert {s["source"] for s in json.loads(r.stdout)["sessions"]} == {"claude"}  # the others still read
