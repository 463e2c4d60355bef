"""The CLI loads a command's module only when that command runs: the table of names
must say what each module's COMMANDS hold."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from huddle import cli


def test_the_lazy_table_names_every_command_of_every_module():
    held = {}
    for mod in set(cli.LAZY.values()):
        m = importlib.import_module(f"huddle.cli.{mod}")
        for cmd in m.COMMANDS:
            held[cmd.name] = mod
    assert held == cli.LAZY


def test_status_does_not_import_the_other_commands():
    code = (
        "import sys; from huddle import cli; cli.main.get_command(None, 'status');"
        "print(sorted(m for m in sys.modules if m.startswith('huddle.cli.') or m == 'huddle.views.export'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _home(tmp_path) -> dict[str, str]:
    """A home of a Claude Code session with sub-agents and a Codex one; its environment."""
    import os
    import shutil

    from conftest import SAMPLES

    shutil.copytree(SAMPLES / "claude" / "02-subagents" / "config", tmp_path / "claude")
    shutil.copytree(SAMPLES / "codex" / "shell" / "codex_home", tmp_path / "codex")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "VIBE", "HUDDLE", "GEMINI"))}
    env.update(
        HOME=str(tmp_path),
        HUDDLE_HOME=str(tmp_path / "hh"),
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude"),
        CODEX_HOME=str(tmp_path / "codex"),
        VIBE_HOME=str(tmp_path / "none"),
        GEMINI_DIR=str(tmp_path / "none"),
        PYTHONIOENCODING="utf-8",
    )
    return env


@pytest.mark.parametrize("command", ["status", "usage"])
def test_json_answered_without_click_says_what_the_click_command_says(tmp_path, command):
    import json

    env = _home(tmp_path)
    code = (
        f"import sys; sys.argv = ['huddle', {command!r}, '--json']; from huddle import entry\n"
        "try:\n    entry.main()\nexcept SystemExit as e:\n    assert not e.code\n"
        "print('click' in sys.modules, file=sys.stderr)"
    )
    fast = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert fast.stderr.splitlines()[-1] == "False", fast.stderr
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    slow = subprocess.run(
        [sys.executable, "-m", "huddle.cli", command, "--json"], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(fast.stdout)["sessions" if command == "status" else "rows"]
    assert fast.stdout == again.stdout == slow.stdout  # first read, from the cache, through click
    assert fast.stderr.splitlines()[:-1] == slow.stderr.splitlines()  # the notes too


@pytest.mark.parametrize("command", ["status", "usage"])
def test_a_one_shot_read_loads_neither_typing_extensions_nor_inspect(tmp_path, command):
    """msgspec is loaded without typing_extensions (huddle.io.lean), and nothing on the
    path loads `dataclasses` (it loads inspect, ast and dis): ~20 ms of a one-shot
    read. typing_extensions is imported as usual after."""
    env = _home(tmp_path)
    heavy = ("typing_extensions", "inspect", "dataclasses", "ast")
    # (what the interpreter had before, a coverage run's own start among it, is not counted)
    code = (
        f"import sys; before = set(sys.modules); sys.argv = ['huddle', {command!r}, '--json']\n"
        "from huddle import entry\n"
        "try:\n    entry.main()\nexcept SystemExit as e:\n    assert not e.code\n"
        f"print([m for m in {heavy!r} if m in sys.modules and m not in before], 'msgspec' in sys.modules, file=sys.stderr)\n"
        "import typing_extensions, msgspec.inspect\n"
        "print(msgspec.inspect.type_info(typing_extensions.TypedDict('T', {'a': int})), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    loaded, typed = out.stderr.splitlines()[-2:]
    assert loaded == "[] True"  # (msgspec was loaded: the lean path was the one taken)
    assert "TypedDictType" in typed and "'a'" in typed  # a typing_extensions type, known to msgspec after
