"""Every command line in the README runs as written.

Each line of the README's `sh` blocks is taken apart as a shell would (quotes, comments,
`&&`, a `\\` going on on the next line, `NAME=value` words before a command) and run as
a real process on a small home of sample sessions, with only its placeholders filled in:
a session `ID` (and the README's example short id), a `REF`, an `AGENT`, a host folder
`D`, the agent `COMMAND...`, the hub's "$HUDDLE_HUB" and its example address (a real
PostgreSQL on a free port), an OTLP endpoint (a real receiver) and `--port 8000` (a free
port: the machine is shared). A one-shot command must exit 0; one that runs until Ctrl-C
(the servers, watch, --follow, --watch, the host, a run whose agent waits for its next
message) must come up, then exit 0 on SIGINT. The lines that install huddle (venv, pip,
pipx) or start the hub's container are checked, not run: what they name exists.

The home's world is real where the line needs one: the agents a `huddle run` line hosts
are the real Codex and OpenCode CLIs (tests/agent_clis.py) against the scripted model
API on 127.0.0.1; `huddle answer ID` answers a hosted run of the real Claude Code CLI
with a request pending; Kokoro's files come from a local mirror of the registry's copy
(tests/voice_assets.py); the audio player is a stand-in that keeps what it was given.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

import agent_clis as ac
import hosting
import voice_assets
from conftest import SAMPLES
from fake_models import FakeModels
from hosting import ECHO, REPLAY
from huddle.host.client import running
from live_agents import wait_until

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SHORT_ID = "7efaab6a"  # the README's example of a short id
STOP = {"serve", "demo", "watch"}  # commands that run until Ctrl-C
INSTALLERS = ("python3", "pip", "pipx", "./scripts/test", ".venv/bin/pip")
HUB_EXAMPLE = "postgresql://huddle@db.example.com/huddle"  # the README's address of a hub
PLAYER = """import shutil, sys
data = open(sys.argv[-1], "rb").read()
assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", "not a WAV file"
shutil.copy(sys.argv[-1], sys.argv[0] + ".played.wav")
"""
# Every request the README's `huddle answer` lines meet, in their order: Claude Code's
# permission prompts (allow, deny, allow with an edited input), a question (reply), one more.
ANSWERS = [
    ("tool", "Bash", {"command": "echo allowed > out.txt", "description": "write out.txt"}),
    ("tool", "Bash", {"command": "rm -rf build", "description": "clean the build"}),
    ("tool", "Bash", {"command": "pytest", "description": "run the tests"}),
    (
        "tool",
        "AskUserQuestion",
        {
            "questions": [
                {
                    "question": "Which colour?",
                    "header": "Colour",
                    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
                    "multiSelect": False,
                }
            ]
        },
    ),
    ("tool", "Bash", {"command": "echo last > last.txt", "description": "write last.txt"}),
    ("text", "All done."),
]


def command_lines() -> list[str]:
    """The lines of the README's sh blocks (a line per command; one ending in `\\` goes on
    on the next, as in a shell)."""
    out, inside, held = [], False, ""
    for line in README.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh"
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            line = held + line.strip()
            held = line[:-1] if line.endswith("\\") else ""
            if not held:
                out.append(line)
    return out


def words(line: str) -> list[list[str]]:
    """A line as a shell reads it: its commands (split at &&), each a list of words."""
    cmds: list[list[str]] = [[]]
    for w in shlex.split(line, comments=True):
        if w == "&&":
            cmds.append([])
        else:
            cmds[-1].append("huddle" if w == ".venv/bin/huddle" and not cmds[-1] else w)  # the venv's: this one
    return [c for c in cmds if c]


def split_env(cmd: list[str]) -> tuple[dict[str, str], list[str]]:
    """`NAME=value` words before a command (its environment), and the command."""
    env: dict[str, str] = {}
    while cmd and re.fullmatch(r"[A-Za-z_]\w*=.*", cmd[0]):
        k, _, v = cmd[0].partition("=")
        env[k] = v
        cmd = cmd[1:]
    return env, cmd


def runs_until_stopped(argv: list[str]) -> bool:
    args = argv[1:]
    return (
        not args
        or args[0].startswith("-")  # a bare `huddle` with serve's options
        or args[0] in STOP
        or (args[0] in ("status", "push") and "--watch" in args)
        or (args[0] == "otel" and "--follow" in args)
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (a suite run in the background ignores it)


class Home:
    """The sample home every line runs on, and what its placeholders become."""

    def __init__(self, root: Path):
        self.root = root
        claude = root / "claude"
        shutil.copytree(SAMPLES / "claude" / "12-nested-and-custom-agents" / "config" / "projects", claude / "projects")
        shutil.copytree(SAMPLES / "codex" / "subagents_v2" / "codex_home", root / "codex")
        shutil.copytree(SAMPLES / "vibe" / "3.0.3-unified-subagent" / "logs", root / "vibe" / "logs")
        self.cwd = root / "work"
        self.cwd.mkdir()
        (self.cwd / "mine.txt").write_text("hunter2-[a-z]+\n")
        bin_dir = root / "bin"
        bin_dir.mkdir()
        # `huddle run -- claude -p ...`: a stand-in replaying a real stream; as the real one,
        # with --input-format stream-json it takes the prompt from stdin and then waits
        # there for the next message until stdin closes
        fake = bin_dir / "claude"
        stream = SAMPLES / "claude-stream" / "01-basic-tools" / "basic.jsonl"
        replay = f"{shlex.quote(sys.executable)} {REPLAY} {stream} --pause 0.001"
        fake.write_text(
            f'#!/bin/sh\ncase " $* " in *" --input-format stream-json "*) exec {replay} --wait-stdin --hold stdin;; esac\n'
            f"exec {replay}\n"
        )
        fake.chmod(0o755)
        self.player = bin_dir / "pw-play"  # `huddle say ID` plays through the first player it finds
        self.player.write_text(f"#!{sys.executable}\n{PLAYER}")
        self.player.chmod(0o755)
        # the real Codex and OpenCode CLIs, each with a config of its own pointed at the
        # scripted model API (nothing of the sample home's agent folders is touched)
        self.models = FakeModels({"readme-answers": ANSWERS}).__enter__()
        self.closing: list = [self.models]
        agents = root / "agents"
        codex_env = ac.codex_env(agents, self.models.url, self.cwd)
        opencode_env = ac.opencode_env(agents / "opencode", self.models.url)
        for name, pkg, agent_env, keys in (
            ("codex", ac.CODEX, codex_env, ("HOME", "CODEX_HOME", "FAKE_OPENAI_API_KEY")),
            (
                "opencode",
                ac.OPENCODE,
                opencode_env,
                (
                    "HOME",
                    "XDG_CONFIG_HOME",
                    "XDG_DATA_HOME",
                    "XDG_STATE_HOME",
                    "XDG_CACHE_HOME",
                    "OPENCODE_DISABLE_AUTOUPDATE",
                ),
            ),
        ):
            sets = " ".join(f"{k}={shlex.quote(agent_env[k])}" for k in keys)
            (bin_dir / name).write_text(f'#!/bin/sh\nexec env {sets} {shlex.quote(ac.installed(pkg))} "$@"\n')
            (bin_dir / name).chmod(0o755)
        # Kokoro's files: the registry's copy of the model (the published file, same
        # SHA-256) on a local mirror; the published voices file is in no registry
        self.kokoro = root / "kokoro-registry"
        voice_assets.registry_files(self.kokoro)
        mirror = root / "kokoro-mirror"
        mirror.mkdir()
        os.link(self.kokoro / "kokoro-v1.0.int8.onnx", mirror / "kokoro-v1.0.int8.onnx")
        self.mirror = voice_assets.FileServer(mirror).__enter__()
        self.closing.append(self.mirror)
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "HUDDLE_NOTIFY")}
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # no desktop here: said in one line
        env.update(
            HOME=str(root / "home"),
            HUDDLE_HOME=str(root / "huddle-home"),
            CLAUDE_CONFIG_DIR=str(claude),
            CODEX_HOME=str(root / "codex"),
            VIBE_HOME=str(root / "vibe"),
            PATH=f"{bin_dir}:{os.path.dirname(sys.executable)}:{env.get('PATH', '/usr/bin:/bin')}",
            HUDDLE_KOKORO_MIRROR=self.mirror.url,
        )
        (root / "home").mkdir()
        self.env = env
        self.host_dir = root / "host-run"
        from huddle.core import Huddle
        from huddle.sources import Settings
        from huddle.views import api

        h = Huddle(Settings.from_env(env))
        h.refresh()
        s = next(s for s in h.sessions() if s.source == "claude" and len(s.agents) > 1)
        self.sid = s.id
        self.agent = next(a for a in s.agents if a != s.lead_id)
        evs = api.events(h, s.id, limit=5000)["events"]
        self.ref = next(e["ref"] for e in evs if e["kind"] == "tool_call" and e.get("ref"))
        self.fill: dict[str, list[str]] = {
            "ID": [self.sid],
            "ID...": [self.sid],
            SHORT_ID: [self.sid[:8]],
            "REF": [self.ref],
            "AGENT": [self.agent],
            "D": [str(self.host_dir)],
            "COMMAND...": ECHO,
        }

    def close(self) -> None:
        for x in reversed(self.closing):
            x.__exit__(None, None, None)

    def runs(self) -> set[Path]:
        d = Path(self.env["HUDDLE_HOME"]) / "runs"
        return set(d.iterdir()) if d.is_dir() else set()

    def argv(self, cmd: list[str], extra: dict[str, str]) -> list[str]:
        out: list[str] = []
        for i, w in enumerate(cmd):
            if w in self.fill and not (w == "D" and cmd[1:2] not in (["host"], ["attach"], ["send"], ["stop"])):
                out += self.fill[w]
            elif w == "8000" and i and cmd[i - 1] == "--port":
                out.append(str(free_port()))
            else:
                for k, v in extra.items():
                    w = w.replace(k, v)
                out.append(w)
        return out


class Running:
    """A command that runs until Ctrl-C: its output gathered as it comes."""

    def __init__(self, argv: list[str], home: Home):
        self.p = subprocess.Popen(
            argv,
            cwd=home.cwd,
            env=home.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=_as_in_a_terminal,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(self.p.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.p.stderr, self.err), daemon=True),
        ]
        for t in self.readers:
            t.start()

    @staticmethod
    def _read(pipe, into: list[str]) -> None:
        into.extend(pipe)  # line by line, as they come

    def said(self, text: str) -> bool:
        return any(text in line for line in self.out + self.err)

    def up(self, ready, what: str) -> None:
        wait_until(lambda: ready(self) or self.p.poll() is not None, time.time() + 90, what)
        assert self.p.poll() is None, f"{what}: it ended ({self.p.returncode}): {''.join(self.out + self.err)[-2000:]}"

    def ctrl_c(self) -> int:
        self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(timeout=30)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
            self.close()
        return rc

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        for t in self.readers:
            t.join(timeout=10)
        for pipe in (self.p.stdout, self.p.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    h = Home(tmp_path_factory.mktemp("readme"))
    yield h
    h.close()


class Answering:
    """A hosted run of the real Claude Code CLI whose requests the README's `huddle
    answer` lines answer, one pending at a time (ANSWERS)."""

    name = "answers"

    def __init__(self, home: Home):
        self.d = Path(home.env["HUDDLE_HOME"]) / "runs" / self.name
        agent_env = ac.claude_env(home.root / "answering", home.models.url)
        proj = home.root / "answering" / "proj"
        proj.mkdir(parents=True)
        args = [*hosting.HUDDLE, "host", "--dir", str(self.d), "--grace", "1"]
        args += ["--prompt", "[[scn:readme-answers]] tidy up", "--", *ac.claude_argv()]
        self.p = subprocess.Popen(
            args, env={**agent_env, "HUDDLE_HOME": home.env["HUDDLE_HOME"]}, cwd=proj, stdout=subprocess.DEVNULL
        )
        self.answered: set[int] = set()

    def pending(self) -> int:
        """The request now waiting (the next one, once the last was answered)."""

        def find():
            settled = {e["request"] for e in hosting.entries(self.d) if e["kind"] in ("answer", "gone")}
            asks = [e for e in hosting.entries(self.d) if e["kind"] == "ask" and e["request"] not in settled]
            return asks[0]["request"] if asks and asks[0]["request"] not in self.answered else None

        assert self.p.poll() is None, f"the host ended ({self.p.returncode})"
        request = wait_until(find, time.time() + 120, "a request of the hosted run to answer")
        self.answered.add(request)
        return request

    def close(self) -> None:
        subprocess.run([*hosting.HUDDLE, "stop", str(self.d)], capture_output=True, timeout=60)
        try:
            self.p.wait(timeout=60)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()


@pytest.fixture(scope="module")
def hosted_run(home):
    a = Answering(home)
    yield a
    a.close()


@pytest.fixture(scope="module")
def hub():
    from pg_server import Postgres, bindir

    if bindir() is None:
        pytest.skip("PostgreSQL server binaries missing: scripts/test installs them")
    server = Postgres().start()
    yield server.dsn(server.create_db("readme"))
    server.stop()


@pytest.fixture(scope="module")
def otlp():
    from otlp_receiver import Receiver

    with Receiver() as r:
        yield r


LINES = command_lines()
HOSTED = ("host", "attach", "send", "stop")  # the host's block runs as one story


def cases() -> list:
    out = []
    for line in LINES:
        for cmd in words(line):
            if cmd[0] == "huddle" and len(cmd) > 1 and cmd[1] in HOSTED:
                continue
            out.append(pytest.param(cmd, id=" ".join(cmd)[:80]))
    return out


def test_the_readme_has_command_lines():
    assert len(LINES) > 40
    assert any(w[0][:2] == ["huddle", "search"] and "-flaky" in w[0] for w in map(words, LINES))


def ready_for(argv: list[str]):
    args = argv[1:]
    if args and args[0] in ("watch",):
        return lambda r: r.said("watching")
    if args and args[0] == "push":
        return lambda r: r.said("pushed")
    if args and args[0] == "otel":
        return lambda r: r.said("following sessions")
    if args and args[0] == "status":
        return lambda r: bool(r.out)
    return answering  # the servers


def answering(r: Running) -> bool:
    """A server that answers on the address it printed (a Ctrl-C before it runs is not one)."""
    import httpx

    url = next((line.split(" at ", 1)[1].strip() for line in r.out if "huddle: serving" in line), None)
    if url is None:
        return False
    try:
        return httpx.get(url.split("?")[0] + "api/info", timeout=5).status_code in (200, 401, 403)
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize("cmd", cases())
def test_a_readme_command_runs_as_written(cmd, home, request):
    words_env, cmd = split_env(cmd)
    if cmd[0] == "docker":
        check_compose(cmd, words_env)
        return
    if cmd[0] not in ("huddle", "claude"):
        check_installer(cmd)
        return
    extra: dict[str, str] = {}
    if any("$HUDDLE_HUB" in w or HUB_EXAMPLE in w for w in cmd):
        extra["$HUDDLE_HUB"] = extra[HUB_EXAMPLE] = request.getfixturevalue("hub")
    sub = cmd[1] if len(cmd) > 1 else ""
    if sub == "otel" or any("4318" in v for v in words_env.values()):
        receiver = request.getfixturevalue("otlp")
        extra["http://127.0.0.1:4318"] = receiver.url
        home.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url  # what --follow uses without --endpoint
    if sub == "answer":
        run = request.getfixturevalue("hosted_run")
        home.fill["ID"] = [run.name]  # the hosted run, answered
        extra["41"] = str(run.pending())  # the README's example request number
    try:
        run_line(cmd, home, extra, words_env)
    finally:
        home.fill["ID"] = [home.sid]


def run_line(cmd: list[str], home: Home, extra: dict[str, str], words_env: dict[str, str]) -> None:
    argv = home.argv(cmd, extra)
    env = {**home.env, **{k: _filled(v, extra) for k, v in words_env.items()}}
    sub = cmd[1] if len(cmd) > 1 else ""
    if sub == "say" and "--engine" in cmd and "kokoro" in cmd:  # Kokoro's files as `voices on` leaves them
        voice_assets.install_registry_kokoro(Path(env["HUDDLE_HOME"]), home.kokoro)
    if argv[0] == "huddle" and runs_until_stopped(argv):
        r = Running(argv, home)
        r.up(ready_for(argv), " ".join(cmd))
        rc = r.ctrl_c()
        err = "".join(r.err)
        assert rc == 0, err[-2000:]
        assert "Traceback" not in err, err[-4000:]
        return
    if sub == "run" and "--prompt" in cmd:
        waits_for_its_human(argv, home)
        return
    stdin = statusline_input(home) if sub == "statusline" else None
    if argv[1:3] == ["voices", "on"] and "--yes" not in argv:
        stdin = "n\n"  # asked before any download: no (the line after says --yes)
    done = subprocess.run(argv, cwd=home.cwd, env=env, input=stdin, capture_output=True, text=True, timeout=180)
    if argv[1:4] == ["voices", "on", "--yes"]:
        return kokoro_fetched_and_checked(done, home)
    assert done.returncode == 0, f"{' '.join(argv)}\n{done.stdout[-1000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr, done.stderr
    if sub == "say":
        wav = home.cwd / argv[argv.index("--to") + 1] if "--to" in argv else Path(str(home.player) + ".played.wav")
        blob = wav.read_bytes()
        assert blob[:4] == b"RIFF" and len(blob) > 44 + 8000, "a spoken line, not silence"
        wav.unlink()


def _filled(value: str, extra: dict[str, str]) -> str:
    for k, v in extra.items():
        value = value.replace(k, v)
    return value


def waits_for_its_human(argv: list[str], home: Home) -> None:
    """`huddle run --prompt ...`: the agent takes the prompt, ends its turn and waits for
    its next message (the run offers a reply); the run goes on until Ctrl-C (exit 0)."""
    before = home.runs()
    r = Running(argv, home)
    try:

        def turn_over():
            return any(
                e["kind"] == "ask" and e.get("type") == "turn" for d in home.runs() - before for e in hosting.entries(d)
            )

        r.up(lambda r: turn_over(), f"{argv[-2:]}: its first turn over")
        rc = r.ctrl_c()
    finally:
        r.close()
    err = "".join(r.err)
    assert rc == 0, err[-2000:]
    assert "Traceback" not in err, err[-4000:]
    (run,) = home.runs() - before
    said = [e for e in hosting.entries(run) if e["kind"] == "stdout"]
    assert said, "the agent said nothing"


def kokoro_fetched_and_checked(done: subprocess.CompletedProcess, home: Home) -> None:
    """`huddle voices on --yes` as far as this machine's world goes: the published model,
    fetched from the mirror without a question, checked (SHA-256) and kept; the published
    voices file is in no registry, so the mirror has none: refused in one line, nothing
    half-written left, voices not turned on with files that are not there."""
    from huddle.voice import models

    hh = home.env["HUDDLE_HOME"]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == "Error: download failed: voices-v1.0.bin: File not found", done.stderr
    assert "Download them now?" not in done.stdout and "92.4 MB" in done.stdout
    assert sorted(os.listdir(models.folder(hh))) == ["kept.json", "kokoro-v1.0.int8.onnx"]
    assert [f.role for f in models.missing(hh)] == ["voices"]


def statusline_input(home: Home) -> str:
    return json.dumps({"session_id": home.sid, "cwd": str(home.root), "model": {"id": "claude-sonnet-4-5"}})


def test_the_host_block_runs_as_written(home):
    """`huddle host --dir D -- COMMAND...`, then attach, send and stop, in the README's order."""
    lines = [cmd for line in LINES for cmd in words(line) if cmd[0] == "huddle" and cmd[1:2] and cmd[1] in HOSTED]
    assert [c[1] for c in lines] == list(HOSTED)
    host = Running(home.argv(lines[0], {}), home)
    attach = None
    try:
        host.up(lambda r: running(str(home.host_dir)), "the host")
        attach = Running(home.argv(lines[1], {}), home)
        for cmd in lines[2:]:
            argv = home.argv(cmd, {})
            done = subprocess.run(argv, cwd=home.cwd, env=home.env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, (argv, done.stderr)
        assert host.p.wait(timeout=60) == 0, "".join(host.err)
        assert attach.p.wait(timeout=60) == 0, "".join(attach.err)
    finally:
        for r in (host, attach):
            if r is not None:
                r.close()


def check_compose(cmd: list[str], env: dict[str, str]) -> None:
    """The hub's container line, not run (no container runtime here): its compose file
    is there and asks for the password the line sets."""
    assert cmd[:2] == ["docker", "compose"] and "-f" in cmd, cmd
    compose = (ROOT / cmd[cmd.index("-f") + 1]).read_text()
    assert "image: postgres" in compose and all(f"${{{k}" in compose for k in env), env


def check_installer(cmd: list[str]) -> None:
    """An install line, not run (it installs): what it names is there."""
    assert cmd[0] in INSTALLERS, f"a README command line no test runs: {cmd}"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for w in cmd[1:]:
        m = re.search(r"\[([\w,]+)\]$", w)
        if m and not w.startswith("-"):
            assert set(m.group(1).split(",")) <= set(extras), w
    if cmd[0] == "./scripts/test":
        assert os.access(ROOT / "scripts" / "test", os.X_OK)


def test_a_word_to_leave_out_needs_no_double_dash(home):
    """`-word` leaves the word out, as the README's `-flaky` does; a mistyped long option
    is still said to be one."""

    def hits(*query: str) -> list[str]:
        done = subprocess.run(
            ["huddle", "search", *query, "--json"], cwd=home.cwd, env=home.env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return [r["snippet"]["text"] for r in json.loads(done.stdout)["results"]]

    every = hits("agent")
    kept = hits("agent", "-nested")
    assert kept and len(kept) < len(every) and not any("nested" in t.lower() for t in kept)
    typo = subprocess.run(["huddle", "search", "agent", "--limt", "3"], env=home.env, capture_output=True, text=True)
    assert typo.returncode == 2 and "No such option '--limt'" in typo.stderr and "--limit" in typo.stderr
