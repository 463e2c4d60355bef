"""Every sample stream replayed with pauses and chunks split anywhere, hosted for
real by `huddle run`: the log keeps each line as it was, the trace leaves out the
partials, and the live line's totals are those of the stream itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from hosting import HUDDLE, PY, REPLAY, entries, wait_until
from huddle.core import Huddle
from huddle.host.liveline import LiveLine, is_partial
from huddle.host.log import raw_json
from huddle.sources import Settings

STREAMS = sorted((Path(__file__).parent / "fixtures" / "samples" / "claude-stream").glob("*/*.jsonl"))
IDS = [f"{p.parent.name}/{p.stem}" for p in STREAMS]


def runs(tmp_path) -> Path:
    return tmp_path / "huddle-home" / "runs"


def summary_of(out: bytes) -> list[str]:
    """The summary under the live line (which is rewritten in place with \\r)."""
    return out.decode().rsplit("\r", 1)[-1].split("\n")[:-1]


def run(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*HUDDLE, "run", *args], capture_output=True, timeout=300, **kw)


@pytest.mark.parametrize("path", STREAMS, ids=IDS)
def test_each_sample_hosted_for_real(path, tmp_path):
    r = run("--name", "replay", "--", PY, REPLAY, str(path), "--pause", "0.001", "--split")
    assert r.returncode == 0, r.stderr
    d = runs(tmp_path) / "replay"
    capture = path.read_bytes().splitlines()
    logged = [
        raw_json(line) or json.loads(line)["text"].encode()
        for line in (d / "events.jsonl").read_bytes().splitlines()
        if b'"kind":"stdout"' in line
    ]
    assert logged == capture  # each line as the agent printed it, however it was chunked
    assert (d / "trace.jsonl").read_bytes().splitlines() == [x for x in capture if not is_partial(x)]
    live = LiveLine()
    for line in capture:
        live.feed(line)
    summary = summary_of(r.stdout)
    assert summary[0].startswith("exit status 0 · ")
    assert f"{live.tool_calls} tool call" in summary[0]
    tokens = f"{live.up:,} up / {live.down:,} down tokens"
    if live.unsplit:
        tokens += f" (of which {live.unsplit:,} could not be split)"
    assert summary[0].endswith(tokens)
    assert summary[-1] == f"log: {d / 'events.jsonl'}"
    if live.result:
        assert "result: " + live.result.splitlines()[0] in summary
    # One reader, one ledger: the hosted session counts what the live line showed.
    h = Huddle(Settings.from_env(), sources=["hosted"])
    h.refresh()
    u = h.session("hosted:replay").usage
    assert (u.input + u.cache_read + u.cache_write, u.output) == (live.up, live.down)


def test_ctrl_c_stops_the_agent_the_clean_way(tmp_path):
    """The first Ctrl-C closes the agent's stdin; this one then ends by itself."""
    sample = STREAMS[IDS.index("11-sigint-print/sigint")]
    p = subprocess.Popen(
        [*HUDDLE, "run", "--name", "c", "--", PY, REPLAY, str(sample), "--stop-at", "12", "--hold", "stdin"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    d = runs(tmp_path) / "c"
    wait_until(lambda: sum(e["kind"] == "stdout" for e in entries(d)) == 12, "the first lines")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    log = entries(d)
    assert [e["step"] for e in log if e["kind"] == "stopping"] == ["closing stdin"]
    assert log[-1]["kind"] == "exited" and log[-1]["stopped"] is True
    assert summary_of(out)[0].startswith("exit status 0")


def test_an_agent_that_needs_sigterm_says_it_was_interrupted(tmp_path):
    """Stdin closing does not end it: SIGTERM does, and it prints claude's own
    aborted result, which the summary explains."""
    sample = STREAMS[IDS.index("11-sigint-print/sigint")]
    p = subprocess.Popen(
        [
            *HUDDLE,
            "run",
            "--name",
            "t",
            "--grace",
            "1.0",  # (its SIGTERM handler has that long to print and exit: 0.2 s was short for a loaded CI)
            "--",
            PY,
            REPLAY,
            str(sample),
            "--stop-at",
            "12",
            "--hold",
            "signal",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    d = runs(tmp_path) / "t"
    wait_until(lambda: sum(e["kind"] == "stdout" for e in entries(d)) == 12, "the first lines")
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    summary = summary_of(out)
    assert summary[0].startswith("exit status 143")  # its own exit, after printing the aborted result
    assert "why: interrupted (aborted_streaming)" in summary
    steps = [e["step"] for e in entries(d) if e["kind"] == "stopping"]
    assert steps == ["closing stdin", "SIGTERM"]


def test_run_says_what_is_wrong(tmp_path):
    r = run("--name", "../escape", "--", "true")
    assert r.returncode == 2 and r.stderr.startswith(b"huddle run: not a run name") and b"Traceback" not in r.stderr
    r = run("--name", "gone", "--", "no-such-command-here")
    assert r.returncode == 127
    assert summary_of(r.stdout)[0].startswith("cannot start no-such-command-here: No such file or directory")
    r = run("--", PY, "-c", "print('Invalid API key · Please run /login'); raise SystemExit(1)")
    assert r.returncode == 1
    assert "why: Invalid API key · Please run /login" in summary_of(r.stdout)
    names = sorted(p.name for p in runs(tmp_path).iterdir())  # no folder for the refused name
    assert len(names) == 2 and names[1] == "gone" and names[0][:8].isdigit()
    (runs(tmp_path) / "full").mkdir()
    os.symlink("/dev/full", runs(tmp_path) / "full" / "events.jsonl")
    r = run("--name", "full", "--", "true")
    assert r.returncode == 2 and b"No space left on device; the agent was not started" in r.stderr
