"""The status line counts Gemini CLI and OpenCode sessions that need you, as it does the
others: a real process on this machine stands for the running CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES
from test_statusline import INPUT, statusline

CASES = {
    "gemini": (
        SAMPLES / "gemini" / "08-interactive-approval" / "live" / "01-needs-you-approval" / "home",
        "gemini",
        ["--session-id", "189ab50c-da9c-43fd-8d4c-4e6ecdeb6a33"],
        "Sleep a while",
    ),
    "opencode": (
        SAMPLES / "opencode" / "08-interactive-approval" / "live" / "01-needs-you-approval" / "home",
        "opencode",
        ["--session", "ses_dcef0f2aeffeV1elxP0UOfZR2z"],
        "Sleep command",
    ),
    "pi": (
        SAMPLES / "pi" / "08-interactive-approval" / "live" / "02-needs-you-approval" / "home",
        "pi",
        ["--session", "01a2494b-15e5-74b9-aac3-052b99723878"],
        "Sleep a while",
    ),
}


@pytest.mark.parametrize("source", sorted(CASES))
def test_a_session_waiting_for_approval_is_counted(tmp_path, source):
    sample, exe_name, args, title = CASES[source]
    home = tmp_path / "user"
    shutil.copytree(sample, home)
    exe = tmp_path / "bin" / exe_name
    exe.parent.mkdir()
    exe.write_text("import time\nprint('ready', flush=True)\ntime.sleep(120)\n")
    p = subprocess.Popen([sys.executable, str(exe), *args], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        env = {
            "HOME": str(home),
            "HUDDLE_HOME": str(tmp_path / "hh"),
            "HUDDLE_SOURCES": source,
            "HUDDLE_STATUSLINE_BUDGET": "20",
        }
        r = statusline(env, json.dumps(INPUT), "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        text = json.dumps(out)
        assert source in text and title in text, out
        r = statusline(env, json.dumps(INPUT))
        assert "✋ 1 needs you" in r.stdout, r.stdout
    finally:
        p.kill()
        p.communicate()  # closes its pipe too
    assert Path(home).exists()
