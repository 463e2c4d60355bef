"""Test set-up: every test gets its own huddle home and empty agent folders, so
nothing reads or writes the real ~/.claude, ~/.codex, ~/.vibe or huddle's data."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

# The run sees only its own processes (io/procs.py): this process and what it starts,
# never another suite's fake agents on a shared machine. Set here, before any test, so
# every process a test starts inherits it (each xdist worker: its own tree).
os.environ["HUDDLE_PROCS_BELOW"] = str(os.getpid())

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = FIXTURES / "samples"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUDDLE_HOME", str(tmp_path / "huddle-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("VIBE_HOME", str(home / ".vibe"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for var in ("XDG_STATE_HOME", "GEMINI_CLI_HOME", "HUDDLE_GEMINI_DIR", "HUDDLE_OPENCODE_DIR", "OPENCODE_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    for var in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "GSD_CODING_AGENT_DIR"):  # Pi
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def closes_what_it_opened():
    """Hosts a test started (and their pipes) and raw sockets it opened are closed after
    it: a leak would otherwise surface as a ResourceWarning in some later test."""
    yield
    import hosting

    hosting.cleanup()


@pytest.fixture
def samples() -> Path:
    return SAMPLES


def fingerprint(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file below `root` with its size, mtime and content hash: a test of the
    read-only promise compares this before and after."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            digest = ""
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, digest)
    return out
