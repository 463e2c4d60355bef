"""Private by default (issue 34): everything huddle writes that holds conversation text
(a hosted run's log, trace and folder, the caches, the board and stored answers, the
usage index, the search index, the hub's push state, an export it writes to a file) is
created 0600 / 0700 whatever the umask. The commands run for real under umask 000 into
a $HUDDLE_HOME that does not exist yet; then every entry below it is walked."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES
from hosting import PY, REPLAY

STREAM = sorted((SAMPLES / "claude-stream" / "01-basic-tools").glob("*.jsonl"))[0]


@pytest.fixture
def open_umask():
    old = os.umask(0)
    yield
    os.umask(old)


def _walk(home: Path) -> list[str]:
    """Every entry below `home` (and `home` itself) whose mode is not 0700 for a folder,
    0600 for anything else."""
    bad = []
    for dirpath, _dirnames, filenames in os.walk(home):
        for p in [dirpath, *(os.path.join(dirpath, n) for n in filenames)]:
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                continue  # (a link's own mode means nothing)
            want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            if stat.S_IMODE(st.st_mode) != want:
                bad.append(f"{oct(stat.S_IMODE(st.st_mode))} {os.path.relpath(p, home)}")
    return sorted(set(bad))


def test_every_file_huddle_writes_is_the_users_alone(tmp_path, open_umask):
    home = tmp_path / "hh" / "nested"  # neither exists: huddle makes both
    claude = tmp_path / "claude"
    shutil.copytree(SAMPLES / "claude" / "02-subagents" / "config", claude)
    none = str(tmp_path / "none")
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "HUDDLE_HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(claude),
        "CODEX_HOME": none,
        "VIBE_HOME": none,
        "GEMINI_CLI_HOME": none,
        "HUDDLE_OPENCODE_DIR": none,
    }

    def huddle(*args: str) -> None:
        out = subprocess.run([sys.executable, "-m", "huddle", *args], capture_output=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr.decode(errors="replace")[-600:]

    huddle("run", "--name", "r1", "--", PY, REPLAY, str(STREAM), "--pause", "0")
    huddle("status", "--json")
    huddle("status")
    huddle("usage", "--json")
    huddle("usage")
    huddle("search", "survey")
    export = tmp_path / "out" / "s.html"
    export.parent.mkdir()
    huddle("export", "bc6a7de7", "-o", str(export))
    subprocess.run([sys.executable, "-m", "huddle.refresh"], env=env, timeout=120, check=True)

    from huddle.hub.push import PushState
    from huddle.otel.cursor import Cursor

    state = PushState(str(home), "hub", "machine")
    state.sessions["claude:x"] = ["digest", 0, 0, ""]
    state.save()
    Cursor(str(home), "http://127.0.0.1:4318/v1/traces").close()

    made = {p.relative_to(home).parts[0] for p in home.iterdir()}
    assert {"cache", "runs", "hub"} <= made, made
    assert (home / "runs" / "r1" / "events.jsonl").exists()
    bad = _walk(tmp_path / "hh")
    assert bad == [], "\n".join(bad)
    assert stat.S_IMODE(export.stat().st_mode) == 0o600
