"""The real agent CLIs the tests drive (answering, translation, telemetry, the README's
lines): one installer, one cache folder, one version pin per CLI.

Each package is installed once from npm into $HUDDLE_TEST_AGENTS (default
~/.cache/huddle-test-agents/<package>@<version>), outside the repository and shared by
every checkout and every test run (an exclusive lock: parallel runs install it once).
`scripts/test` runs this module first (`python tests/agent_clis.py`), so a clean clone's
run fetches each CLI once, not once per test module. They run against the scripted model
servers (`fake_models`, `fake_model`, `fake_anthropic`) on 127.0.0.1, with their config
and data folders in the test's own temp folder: nothing reads or writes the real ones.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import hosting

CLAUDE = ("@anthropic-ai/claude-code", "2.1.332", "claude")
OPENCODE = ("opencode-ai", "1.18.33", "opencode")
CODEX = ("@openai/codex", "0.171.0", "codex")
ALL = (CLAUDE, OPENCODE, CODEX)


def cache_root() -> Path:
    return Path(os.environ.get("HUDDLE_TEST_AGENTS") or _real_home() / ".cache" / "huddle-test-agents")


def installed(pkg: tuple[str, str, str]) -> str:
    """The CLI's executable, installed with npm if it is not yet (a failure says why)."""
    name, version, exe = pkg
    d = cache_root() / f"{name.replace('/', '+')}@{version}"
    path = d / "node_modules" / ".bin" / exe
    if path.exists():
        return str(path)
    npm = shutil.which("npm")
    if npm is None:
        raise AssertionError("npm is needed for the real agent tests (Debian: apt-get install npm)")
    d.mkdir(parents=True, exist_ok=True)
    with open(d.parent / f".{d.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run may be installing it: wait for that one
        if path.exists():
            return str(path)
        out = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(d), f"{name}@{version}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
    if out.returncode != 0 or not path.exists():
        raise AssertionError(f"npm install {name}@{version} failed: {out.stderr.strip()[-2000:]}")
    return str(path)


def _real_home() -> Path:
    # conftest points HOME at the test's temp folder; the npm cache of agents outlives it
    import pwd

    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def claude_env(tmp: Path, url: str) -> dict[str, str]:
    home = tmp / "agent-home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-test-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }


def claude_argv() -> list[str]:
    return [
        installed(CLAUDE),
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5",
    ]


def opencode_env(tmp: Path, url: str) -> dict[str, str]:
    home = tmp / "agent-home"
    cfg = home / ".config" / "opencode"
    cfg.mkdir(parents=True, exist_ok=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": f"{url}/v1", "apiKey": "test-key"},
        "models": {"fake-model": {"name": "Fake", "tool_call": True}},
    }
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"fake": provider},
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
        "permission": {"bash": "ask", "edit": "ask"},
    }
    (cfg / "opencode.json").write_text(json.dumps(config))
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }


def start_run(
    huddle_home: Path, name: str, argv: list[str], env: dict, cwd: Path, prompt: str = "", protocol: str = ""
):
    """`huddle host` for a run under $HUDDLE_HOME/runs/NAME (where the board finds it)."""
    d = huddle_home / "runs" / name
    args = [*hosting.HUDDLE, "host", "--dir", str(d), "--grace", "1"]
    args += ["--prompt", prompt] if prompt else []
    args += ["--protocol", protocol] if protocol else []
    cwd.mkdir(parents=True, exist_ok=True)
    p = subprocess.Popen([*args, "--", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    hosting._opened.append(p)
    hosting.wait_until(lambda: hosting.running(str(d)) or p.poll() is not None, "the host to listen")
    return d, p


def log_entries(d: Path) -> list[dict]:
    return hosting.entries(d)


def wait_entry(d: Path, limit: float = 90.0, **match) -> dict:
    """The first log entry with these fields (waiting for it)."""

    def find():
        for e in log_entries(d):
            if all(e.get(k) == v for k, v in match.items()):
                return e
        return None

    return hosting.wait_until(find, f"a log entry {match}", limit)


def huddle_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "huddle", *args], capture_output=True, text=True, env=env, timeout=120)


def now() -> float:
    return time.time()


def codex_env(tmp: Path, url: str, proj: Path) -> dict[str, str]:
    """A CODEX_HOME of the test's own: the fake provider, approvals on request."""
    home = tmp / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'''model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false
approval_policy = "on-request"
sandbox_mode = "workspace-write"
[projects."{proj}"]
trust_level = "trusted"
[analytics]
enabled = false
[features]
plugins = false
remote_plugin = false
[model_providers.fake]
name = "Fake Responses"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
'''
    )
    return {**os.environ, "HOME": str(tmp / "agent-home"), "CODEX_HOME": str(home), "FAKE_OPENAI_API_KEY": "test-key"}


def translation_env(model_url: str, config: Path) -> dict[str, str]:
    """The environment huddle's translation workers (`claude -p`, HUDDLE_CLAUDE) run in:
    the fake model API, a config folder of the test's, no traffic anywhere else."""
    config.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "HUDDLE_CLAUDE": installed(CLAUDE),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


if __name__ == "__main__":  # scripts/test: every CLI in place before the suite starts
    for pkg in ALL:
        print(f"{pkg[0]}@{pkg[1]}: {installed(pkg)}")
