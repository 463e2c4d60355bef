"""The CLI loads a command's module only when that command runs: the table of names
must say what each module's COMMANDS hold."""

from __future__ import annotations

import importlib
import subprocess
import sys

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
