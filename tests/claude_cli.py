"""The real Claude Code CLI for the translation tests, from the npm registry: the copy
scripts/test installs beside the venv, or else one installed here (once per run, into
the same place), at the version tests/claude-code.version names."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / ".venv" / "claude-code"
VERSION = (Path(__file__).parent / "claude-code.version").read_text().strip()


def program() -> str:
    exe = PREFIX / "node_modules" / ".bin" / "claude"
    if exe.exists():
        return str(exe)
    npm = shutil.which("npm")
    assert npm, "npm is needed to install Claude Code for the translation tests (scripts/test does it)"
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (parallel runs install it once)
        if not exe.exists():
            subprocess.run(
                [
                    npm,
                    "install",
                    "--silent",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(PREFIX),
                    f"@anthropic-ai/claude-code@{VERSION}",
                ],
                check=True,
                timeout=600,
            )
    return str(exe)


def env_for(model_url: str, config: Path) -> dict[str, str]:
    """The environment a `claude` worker runs in: the fake model API, a config folder of
    the test's, no traffic anywhere else."""
    config.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "HUDDLE_CLAUDE": program(),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
