"""The README documents every command, every option and every variable huddle reads:
a command or a folder a user cannot find is as good as missing."""

from __future__ import annotations

import re
from pathlib import Path

import click

from huddle.cli import main
from huddle.sources.registry import source_classes

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def commands() -> dict[str, click.Command]:
    ctx = click.Context(main)
    out = {}
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        assert cmd is not None
        out[name] = cmd
    return out


def options(cmd: click.Command) -> list[str]:
    """Each option by its long name(s), as a user types them (--open/--no-open as one)."""
    out = []
    for p in cmd.params:
        if isinstance(p, click.Option) and not p.hidden:
            longs = [o for o in p.opts + p.secondary_opts if o.startswith("--")]
            out.append("/".join(longs) if p.secondary_opts else longs[0])
    return out


def lines_of(name: str) -> list[str]:
    return [line for line in README.splitlines() if re.search(rf"\bhuddle {re.escape(name)}\b", line)]


def test_every_command_is_in_the_readme():
    missing = [name for name in commands() if not lines_of(name)]
    assert missing == []


def test_every_option_is_in_the_readme_beside_its_command():
    missing = {}
    for name, cmd in commands().items():
        here = "\n".join(lines_of(name))
        gone = [o for o in options(cmd) if o != "--help" and o not in here]
        if gone:
            missing[name] = gone
    assert missing == {}


def test_every_folder_and_variable_huddle_reads_is_in_the_readme():
    names = {c.folder_env for c in source_classes().values() if c.folder_env}
    for path in (ROOT / "src" / "huddle").rglob("*.py"):
        names.update(re.findall(r"[\"'](HUDDLE_[A-Z_]+)[\"']", path.read_text()))
    assert names and sorted(n for n in names if not re.search(rf"\b{n}\b", README)) == []
