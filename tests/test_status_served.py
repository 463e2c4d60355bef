"""`huddle status --json` answered by a running `huddle serve` of the same home
(io/served.py, server/status_socket.py): after an append or a new session the answer
is the one a fresh read gives, byte for byte, and a command the server answered writes
nothing; a command from another environment, or with no server left to answer (one
killed, its socket file left), reads for itself and is as right."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import SAMPLES
from huddle.core import Huddle, Keeper
from huddle.io import served
from huddle.live.watcher import Watcher
from huddle.server.status_socket import StatusSocket
from huddle.sources import Settings
from live_agents import wait_until

CLAUDE = SAMPLES / "claude"
NEW = "11111111-2222-4333-8444-555555555555"


def env_of(tmp: Path, config: Path, home: str = "hh") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUDDLE_", "CLAUDE", "CODEX", "XDG_"))}
    (tmp / "home").mkdir(exist_ok=True)
    return {**env, "HOME": str(tmp / "home"), "HUDDLE_HOME": str(tmp / home), "CLAUDE_CONFIG_DIR": str(config)}


def status(env: dict[str, str]) -> bytes:
    out = subprocess.run(
        [sys.executable, "-m", "huddle", "status", "--json"], env=env, capture_output=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def fresh(env: dict[str, str], tmp: Path) -> bytes:
    """What a command with no cache and no server says."""
    cold = tmp / "cold"
    shutil.rmtree(cold, ignore_errors=True)
    return status({**env, "HUDDLE_HOME": str(cold)})


@pytest.fixture
def server(tmp_path):
    config = tmp_path / "claude"
    shutil.copytree(CLAUDE / "02-subagents" / "config", config)
    env = env_of(tmp_path, config)
    status(env)  # (a stored answer: what goes stale)
    proc = subprocess.Popen(
        [sys.executable, "-m", "huddle.cli", "serve", "--no-open", "--no-notify", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url, deadline = "", time.time() + 60  # (hang guards, far above a start)
        while not url and time.time() < deadline:
            m = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stdout.readline())
            url = m.group(1) if m else ""
        assert url, "the server did not say where it serves"
        wait_until(lambda: not httpx.get(url + "api/info", timeout=10).json()["reading"], deadline, "the first read")
        yield proc, env, config
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stdout.close()


def answered_by_server(env: dict[str, str]) -> bytes:
    """`status --json` with the stored answer stale: said by the server (nothing written)."""
    stored = Path(env["HUDDLE_HOME"]) / "cache" / "status.bin"  # (what a command's own read writes)
    before = stored.stat().st_mtime_ns if stored.exists() else None
    out = status(env)
    assert (stored.stat().st_mtime_ns if stored.exists() else None) == before, "the command read for itself"
    return out


def append_response(config: Path) -> Path:
    f = next(p for p in (config / "projects").glob("*/*.jsonl"))
    lines = f.read_text().splitlines()
    last = next(json.loads(x) for x in reversed(lines) if json.loads(x).get("type") == "assistant")
    last["uuid"], last["message"]["id"] = "00000000-0000-4000-8000-0000000000aa", "msg_served_new"
    last["message"]["usage"]["output_tokens"] = 777
    with f.open("a") as out:
        out.write(json.dumps(last) + "\n")
    return f


def test_a_running_server_answers_after_an_append_and_a_new_session(server, tmp_path):
    proc, env, config = server
    before = json.loads(status(env))
    f = append_response(config)
    said = answered_by_server(env)
    assert said == fresh(env, tmp_path)
    grown = {r["id"]: r["tokens"] for r in json.loads(said)["sessions"]}
    assert grown[f.stem] > {r["id"]: r["tokens"] for r in before["sessions"]}[f.stem]
    (f.parent / f"{NEW}.jsonl").write_text(f.read_text().replace(f.stem, NEW))
    said = answered_by_server(env)
    assert said == fresh(env, tmp_path)
    assert NEW in {r["id"] for r in json.loads(said)["sessions"]}
    assert proc.poll() is None


def test_another_environment_is_declined_and_reads_for_itself(server, tmp_path):
    _proc, env, _config = server
    other = tmp_path / "other"
    shutil.copytree(CLAUDE / "01-basic-tools" / "config", other)
    theirs = {**env, "CLAUDE_CONFIG_DIR": str(other)}
    said = status(theirs)
    assert said == fresh(theirs, tmp_path)
    assert json.loads(said)["sessions"] != json.loads(status(env))["sessions"]


def test_a_killed_servers_socket_costs_nothing(server, tmp_path):
    proc, env, config = server
    proc.kill()
    proc.wait(timeout=30)
    path = served.socket_path(env["HUDDLE_HOME"])
    assert os.path.exists(path)  # (left behind: no one answers there)
    append_response(config)
    assert status(env) == fresh(env, tmp_path)


def test_a_question_the_server_cannot_answer_as_asked_is_declined(tmp_path):
    h = Huddle(Settings(folders={}, huddle_home=str(tmp_path)))
    s = StatusSocket(h, Watcher(h, lambda msgs: None))  # (its first read not done)
    ask = {**served.question("status"), "env": dict(s.env), "code": s.code}
    assert s.declines(ask) == "the first read is not done"
    assert s.declines({**ask, "ask": "usage"}) == s.declines("status") == "not a question this server answers"
    assert (
        s.declines({**ask, "env": {**s.env, "CLAUDE_CONFIG_DIR": "/elsewhere"}}) == "another environment: other folders"
    )
    assert s.declines({**ask, "code": [[], []]}) == "other code"


def test_one_server_per_home(tmp_path):
    h = Huddle(Settings(folders={}, huddle_home=str(tmp_path)))
    first, second = StatusSocket(h, None), StatusSocket(h, None)
    assert first.start()
    try:
        assert not second.start() and "another huddle serve" in (second.last_error or "")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(first.path)
        probe.sendall(served.frame("not a question"))
        assert served.read_frame(probe) == {"ok": False, "why": "not a question this server answers"}
        probe.close()
    finally:
        first.stop()
    assert not os.path.exists(first.path)


def read_here(tmp: Path, monkeypatch) -> bytes:
    """What a command with no cache says, read in this process: a command run apart
    would move the import path's folders under a coverage run (its data file), and
    with them the code a stored answer names (io.answers.code)."""
    from huddle import oneshot

    cold = tmp / "cold-here"
    shutil.rmtree(cold, ignore_errors=True)
    with monkeypatch.context() as m:
        m.setenv("HUDDLE_HOME", str(cold))
        _data, text = oneshot.read_now(text=True)
    assert text is not None
    return bytes(text)


def said(h: Huddle, sid: str, text: str) -> bool:
    with h.lock:
        return any(e.text == text for e in h.session(f"claude:{sid}").events[-3:])


def test_the_files_a_stale_answer_names_are_read_alone_only_after_a_whole_read(tmp_path):
    """The server reads just the files the command says moved when its own last whole
    read began after the command's stored answer was saved (everything else is as both
    saw it); otherwise it reads the whole home. Either way the row moves."""
    import web_corpus

    settings, sid, main = web_corpus.one_session(tmp_path)
    h = Huddle(settings)
    w = Watcher(h, lambda msgs: None, poll_watched=600.0, full_every=600.0)
    w.start()
    try:
        assert w.whole_at_ns > 0  # (the first read)
        wait_until(lambda: w.notices.watching, time.time() + 60, "the folders watched")
        assert w.read_now()  # (a whole read: what moved while the watches were set up)
        whole = w.whole_at_ns
        web_corpus.append_say(main, "one more")
        assert w.read_now([str(main)], whole - 1)
        assert w.whole_at_ns == whole and said(h, sid, "one more")
        web_corpus.append_say(main, "and another")
        assert w.read_now([str(main)], time.time_ns())  # (saved after this core's whole read)
        assert w.whole_at_ns > whole
        assert said(h, sid, "and another")
    finally:
        w.stop()


def test_the_files_a_command_names_are_read_alone_even_when_the_servers_poll_is_due(tmp_path):
    """A command's stale answer was checked file by file (its stat of every file it
    hangs on is the poll): the server reads what it names, and only that, even if its
    own safety-net poll fell due; a command that found nothing moved costs no read."""
    import web_corpus

    settings, sid, main = web_corpus.one_session(tmp_path)
    h = Huddle(settings)
    # (no watches, no polls: only what is asked is read, whatever else a busy machine delivers)
    w = Watcher(h, lambda msgs: None, use_watchfiles=False, poll_unwatched=600.0, full_every=600.0)
    w.start()
    try:
        assert w.read_now()
        whole = w.whole_at_ns
        web_corpus.append_say(main, "one more")
        w._last_poll = time.monotonic() - 10_000  # (as if the poll fell due)
        assert w.read_now([str(main)], whole - 1)
        assert w.whole_at_ns == whole and said(h, sid, "one more")
        w._last_poll = time.monotonic() - 10_000
        assert w.read_now([], whole - 1)
        assert w.whole_at_ns == whole
    finally:
        w.stop()


def test_a_session_that_came_is_named_to_the_server_which_reads_it_alone(tmp_path, monkeypatch):
    """A new session file moves its project's folder: the command names the files that
    came there (io.answers.look's `came`), and a server that already read them answers
    without a whole read; what it says is what a fresh read says. A new folder, or a
    link in a moved folder, is what only a scan can say: no names, a whole read."""
    from huddle import oneshot
    from huddle.io import answers

    config = tmp_path / "claude"
    shutil.copytree(CLAUDE / "02-subagents" / "config", config)
    env = env_of(tmp_path, config)
    for k in [k for k in os.environ if k.startswith(("HUDDLE_", "CLAUDE", "CODEX", "XDG_"))]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    home = env["HUDDLE_HOME"]
    # the stored answer, written by this process (its code is what a question carries);
    # not kept while a folder it hangs on is younger than the settling time
    wait_until(lambda: oneshot.read_now(text=True) and answers.kept_conditions(home), time.time() + 60, "stored")
    f = next((config / "projects").glob("*/*.jsonl"))
    new = f.parent / f"{NEW}.jsonl"
    new.write_text(f.read_text().replace(f.stem, NEW))
    _hit, stale, _problem = answers.look(home, answers.STATUS, answers.PATCHABLE, came=True)
    assert stale is not None and stale.moved == [] and stale.came == {str(new.parent): [str(new)]}
    assert answers.look(home, answers.STATUS, answers.PATCHABLE)[1] is None  # (patching never places one)

    h = Huddle(Settings.from_env(), keep=Keeper())  # (as `huddle serve` makes it)
    # (no watches, no polls: only what is asked is read, whatever else a busy machine delivers)
    w = Watcher(h, lambda msgs: None, use_watchfiles=False, poll_unwatched=600.0, full_every=600.0)
    w.start()
    sock = StatusSocket(h, w)
    try:
        assert sock.start()
        assert w.read_now()  # (a whole read: the new session read)
        whole = w.whole_at_ns
        said, patched = oneshot.said_now()
        assert not patched and said is not None
        assert w.whole_at_ns == whole  # (the named file read alone)
        assert bytes(said) == read_here(tmp_path, monkeypatch)
        # the server writes its cache (as its rounds do): the stored answer is never said
        # again, but what it hung on still names what moved since (answers.demote)
        with h.lock:
            assert h.keeper is not None
            h.keeper.save(h)
        stored = Path(home) / "cache" / answers.STATUS
        assert not stored.exists() and Path(str(stored) + answers.DEMOTED).exists()
        with new.open("a") as out:
            out.write(f.read_text().splitlines()[-1].replace(f.stem, NEW) + "\n")
        said, patched = oneshot.said_now()
        assert said is not None and not patched and w.whole_at_ns == whole
        assert bytes(said) == read_here(tmp_path, monkeypatch)
        new.unlink()  # (a session gone: the server reads the home whole, and says it gone)
        said, _ = oneshot.said_now()
        assert said is not None and bytes(said) == read_here(tmp_path, monkeypatch)
        assert NEW not in bytes(said).decode()
        new.write_text(f.read_text().replace(f.stem, NEW))
    finally:
        sock.stop()
        w.stop()

    (f.parent / "link.jsonl").symlink_to(f)
    assert answers.look(home, answers.STATUS, answers.PATCHABLE, came=True)[1] is None
    (f.parent / "link.jsonl").unlink()
    elsewhere = config / "projects" / "-tmp-another-project"
    elsewhere.mkdir()
    (elsewhere / f"{NEW[:-1]}6.jsonl").write_text(new.read_text())
    assert answers.look(home, answers.STATUS, answers.PATCHABLE, came=True)[1] is None
