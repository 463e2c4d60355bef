"""`--json` to a pipe or a file is the API's compact JSON (a board of megabytes read by a
program: a third smaller than indented), and to a terminal the same JSON indented for a
person (huddle.oneshot.printed). Read by a real process on a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import msgspec
import pytest

import incli
import web_corpus


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("printed")
    home = root / "home"
    home.mkdir()
    return {**os.environ, **web_corpus.env_of(web_corpus.build(root)), "HOME": str(home)}


@pytest.mark.parametrize(
    "args",
    [("status", "--json"), ("usage", "--json"), ("usage", "--by", "model", "--json"), ("overview", "--json")],
)
def test_a_pipe_is_given_compact_json(env, args):
    out = incli.huddle(*args, env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout.removesuffix("\n")
    assert "\n" not in text
    assert msgspec.json.encode(msgspec.json.decode(text)) == text.encode()  # (not a space between tokens)


def _on_a_terminal(env: dict[str, str], *args: str) -> str:
    """What `huddle ARGS` writes to a pseudo-terminal as its stdout (its newlines as the
    program wrote them)."""
    main, sub = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "huddle", *args], env=env, stdout=sub, stderr=subprocess.DEVNULL)
    os.close(sub)
    got = []
    try:
        while True:
            try:
                chunk = os.read(main, 1 << 16)
            except OSError:  # (EIO: the program's end of the terminal closed)
                break
            if not chunk:
                break
            got.append(chunk)
    finally:
        os.close(main)
        assert p.wait(timeout=300) == 0
    return b"".join(got).replace(b"\r\n", b"\n").decode()


@pytest.mark.parametrize("args", [("status", "--json"), ("usage", "--json")])
def test_a_terminal_is_shown_the_same_json_indented(env, args):
    shown = _on_a_terminal(env, *args)
    piped = incli.huddle(*args, env=env).stdout
    assert shown.startswith('{\n  "')
    assert shown == json.dumps(json.loads(shown), indent=2, ensure_ascii=False) + "\n"
    if args[0] == "status":  # (a row's state may move with the clock between the two)
        assert [r["id"] for r in json.loads(shown)["sessions"]] == [r["id"] for r in json.loads(piped)["sessions"]]
    else:
        assert json.loads(shown) == json.loads(piped)
