"""The host: a gap-free numbered log of everything an agent says, attach from any
point, write, stop. Real processes, real sockets."""

from __future__ import annotations

import json
import os
import signal
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hosting import ECHO, PY, Raw, agent, entries, has_entry, huddle, kinds, log_lines, start_host, wait_until
from huddle.host.client import attach, call, running
from huddle.host.log import EventLog, seq_of
from huddle.io import procs


def seqs(d) -> list[int]:
    return [e["seq"] for e in entries(d)]


def test_the_logged_exchange(tmp_path):
    d = tmp_path / "run"
    host = start_host(d, *ECHO)
    wait_until(lambda: has_entry(d, kind="stdout", text="a plain line"), "the agent's first lines")
    msg = {"type": "user", "message": {"role": "user", "content": "hello"}}
    assert huddle("send", str(d), json.dumps(msg)).returncode == 0
    c = Raw(d)
    c.send({"op": "write", "json": {"n": 2}, "id": "w2"})
    reply = c.reply()
    assert reply["ok"] and reply["id"] == "w2" and reply["op"] == "write"
    wait_until(lambda: has_entry(d, kind="stdout", json={"echo": {"n": 2}}), "the second echo")
    c.send({"op": "stop"})
    stopped = c.reply()
    assert host.wait() == 0
    log = entries(d)
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    assert [e["kind"] for e in log][:2] == ["host", "started"]
    assert log[-1]["kind"] == "exited" and log[-1]["stopped"] is True
    assert stopped["exited"] == {k: log[-1][k] for k in ("status", "signal", "reason", "stopped")}
    assert stopped["seq"] == log[-1]["seq"]
    # stdout and stderr are two pipes: each keeps its order, but which line of the two
    # the host reads first is the scheduler's choice, so the init is the first stdout entry
    first_out = next(e for e in log if e["kind"] == "stdout")
    assert first_out["json"] == {"type": "system", "subtype": "init", "session_id": "s"}
    assert any(e["kind"] == "stderr" and e["text"] == "to stderr" for e in log)
    # each write is logged before the agent could answer it
    stdin = [e for e in log if e["kind"] == "stdin"]
    echoes = [e for e in log if e["kind"] == "stdout" and "echo" in e.get("json", {})]
    assert [e["json"] for e in stdin] == [msg, {"n": 2}]
    assert [e["json"]["echo"] for e in echoes] == [msg, {"n": 2}]
    assert all(s["seq"] < a["seq"] for s, a in zip(stdin, echoes))
    assert [e for e in log if e["kind"] == "stdout"][-1]["text"] == "bye"  # the agent's last line
    assert not (d / "host.sock").exists()


def test_the_stdout_json_is_kept_as_it_was(tmp_path):
    d = tmp_path / "run"
    line = '{"b": 1,  "a": [1.50, "\\u00e9"]}'
    start_host(d, *agent(f"print({line!r})")).wait()
    raw = next(x for x in log_lines(d) if b'"kind":"stdout"' in x)
    assert raw.endswith(b',"json":' + line.encode() + b"}\n")


def test_bad_calls_get_an_error_and_the_connection_stays(tmp_path):
    d = tmp_path / "run"
    host = start_host(d, *ECHO)
    c = Raw(d)
    for bad, says in [
        (b"not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"op": "dance"}', "unknown op 'dance'"),
        (b'{"no": "op"}', "unknown op None"),
        (b'{"op": "attach", "from": "x"}', "must be a seq"),
        (b'{"op": "write", "line": "not json"}', "not one JSON value"),
        (b'{"op": "write", "line": "{} {}"}', "not one JSON value"),
        (b'{"op": "write", "line": 7}', "must be a string"),
        (b'{"op": "write"}', "write needs"),
    ]:
        c.send(bad)
        reply = c.reply()
        assert reply["ok"] is False and says in reply["error"], (bad, reply)
    c.send({"op": "status", "id": 7})
    status = c.reply()
    assert status["ok"] and status["id"] == 7 and status["running"] is True
    c.send({"op": "write", "line": '{\n  "pretty": true\n}'})
    assert c.reply()["ok"]
    wait_until(lambda: has_entry(d, kind="stdout", json={"echo": {"pretty": True}}), "the echo")
    assert b'"kind":"stdin","json":{"pretty":true}}\n' in b"".join(log_lines(d))
    r = huddle("send", str(d), "{not json")
    assert r.returncode == 1 and b"not one JSON value" in r.stderr and b"Traceback" not in r.stderr
    assert huddle("stop", str(d)).stdout.startswith(b"stopped: exit status 0")
    assert host.wait() == 0
    assert huddle("send", str(d), "{}").stderr.startswith(b"huddle send: no host is running")


def test_a_client_that_closes_its_side_still_gets_its_answer(tmp_path):
    """`echo '{"op":"attach"}' | socat - UNIX-CONNECT:D/host.sock` and the like."""
    d = tmp_path / "run"
    host = start_host(d, *ECHO)
    wait_until(lambda: has_entry(d, text="a plain line"), "the agent")
    reader, stopper = Raw(d), Raw(d)
    reader.send({"op": "attach", "from": 2})
    reader.s.shutdown(socket.SHUT_WR)
    stopper.send({"op": "stop"})
    stopper.s.shutdown(socket.SHUT_WR)
    assert stopper.reply()["exited"]["reason"] == "exit status 0"
    got = []
    while (line := reader.line()) is not None:
        got.append(line)
    assert host.wait() == 0
    assert json.loads(got[-1]) == {"op": "attach", "ok": True, "end": "exited", "last": seqs(d)[-1]}
    assert [x + b"\n" for x in got[:-1]] == log_lines(d)[1:]


FLOOD = agent(
    "import sys\n"
    "n = int(sys.argv[1])\n"
    "for i in range(n): print(f'line {i} ' + 'x' * 40, flush=i % 50 == 0)\n"
    "print('first part done', flush=True)\n"
    "sys.stdin.readline()\n"
    "for i in range(n, n + 3000): print(f'line {i} ' + 'y' * 40, flush=True)\n"
)


def test_a_late_attach_is_gap_free(tmp_path):
    d = tmp_path / "run"
    host = start_host(d, *FLOOD, "6000")
    wait_until(lambda: has_entry(d, kind="stdout", text="first part done"), "the first part")
    got = []
    with ThreadPoolExecutor(1) as pool:  # more than the in-memory ring: from the file first, then live
        fut = pool.submit(lambda: [line for line in attach(str(d), 1) if line is not None])
        wait_until(lambda: call(str(d), {"op": "status"})["readers"] == 1, "the reader to attach")
        assert huddle("send", str(d), '"go"').returncode == 0
        got = fut.result()
    assert host.wait() == 0
    assert got == log_lines(d)
    assert [seq_of(x) for x in got] == list(range(1, len(got) + 1))
    assert entries(d)[-1]["kind"] == "exited"


def test_the_log_outlives_the_host(tmp_path):
    d = tmp_path / "run"
    start_host(d, *agent("print('one'); print('two')")).wait()
    assert not (d / "host.sock").exists() and not running(str(d))
    r = huddle("attach", str(d))
    assert r.returncode == 0 and r.stdout.splitlines(keepends=True) == log_lines(d)
    r = huddle("attach", str(d), "--from", "4")
    assert [json.loads(x)["seq"] for x in r.stdout.splitlines()] == seqs(d)[3:]
    assert huddle("attach", str(tmp_path / "nothing")).stderr.startswith(b"huddle attach: no hosted run")


def test_a_second_host_carries_the_numbering_on(tmp_path):
    d = tmp_path / "run"
    start_host(d, *agent("print('first run')")).wait()
    first = entries(d)
    host = start_host(d, *agent("import sys; print('second run', flush=True); sys.stdin.read()"))
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(lambda: [line for line in attach(str(d), 1) if line is not None])
        wait_until(lambda: has_entry(d, text="second run"), "the second run")
        assert huddle("stop", str(d)).returncode == 0
        got = fut.result()
    assert host.wait() == 0
    log = entries(d)
    assert log[: len(first)] == first
    assert seqs(d) == list(range(1, len(log) + 1))
    assert [e["kind"] for e in log].count("exited") == 2
    assert got == log_lines(d)  # the first run's `exited` did not end the attach; the second's did


def test_stop_kills_a_setsid_tree_that_ignores_sigterm(tmp_path):
    d = tmp_path / "run"
    pidfile = tmp_path / "grandchild.pid"
    code = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() > 0:\n"
        "        os._exit(0)\n"  # the grandchild is orphaned: its parent is gone
        "    open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
        "    os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
        "    while True: time.sleep(1)\n"
        "print('ready', flush=True)\n"
        "while True: time.sleep(1)\n"
    )
    host = start_host(d, *agent(code), str(pidfile))
    wait_until(pidfile.exists, "the grandchild")
    grandchild = int(pidfile.read_text())
    agent_pid = entries(d)[1]["pid"]
    # Its parent exits just after the fork: the adoption by the host (a subreaper) follows.
    wait_until(lambda: getattr(procs.stat(grandchild), "ppid", None) == host.pid, "the host to adopt the grandchild")
    assert procs.alive(grandchild)
    r = huddle("stop", str(d))
    assert r.returncode == 0 and b"killed by SIGKILL" in r.stdout
    assert host.wait() == 128 + signal.SIGKILL
    steps = [e["step"] for e in entries(d) if e["kind"] == "stopping"]
    assert steps == ["closing stdin", "SIGTERM", "SIGKILL"]
    assert entries(d)[-1]["kind"] == "exited"
    assert not procs.alive(grandchild) and not procs.alive(agent_pid)


def test_one_host_per_folder(tmp_path):
    d = tmp_path / "run"
    host = start_host(d, *ECHO)
    r = huddle("host", "--dir", str(d), "--", "true")
    assert r.returncode == 2 and r.stderr == f"huddle host: another host is writing {d / 'events.jsonl'}\n".encode()
    assert huddle("stop", str(d)).returncode == 0 and host.wait() == 0


def test_a_line_cut_short_by_a_crash_is_dropped(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    log = EventLog(str(d / "events.jsonl"))
    log.open()
    for i in range(3):
        log.append("stdout", {"text": f"old {i}"})
    log.close()
    with open(d / "events.jsonl", "ab") as f:
        f.write(b'{"seq":4,"t":1.0,"kind":"stdout","te')
    start_host(d, *agent("print('new')")).wait()
    log = entries(d)  # every line parses again
    assert seqs(d) == list(range(1, len(log) + 1))
    assert log[3]["kind"] == "note" and log[3]["text"] == "dropped 36 bytes of a line cut short"
    assert [e.get("text") for e in log[:3]] == ["old 0", "old 1", "old 2"]


def test_a_slow_reader_is_let_go_and_can_attach_again(tmp_path):
    d = tmp_path / "run"
    code = (
        "import sys\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "for i in range(30000): print('z' * 150)\n"
        "print('flood done', flush=True)\n"
        "sys.stdin.read()\n"
    )
    host = start_host(d, *agent(code))
    slow = Raw(d)
    slow.send({"op": "attach", "from": 1})
    got = []
    while not got or b'"text":"ready"' not in got[-1]:
        got.append(slow.line())
    assert huddle("send", str(d), '"go"').returncode == 0  # it floods; the slow reader reads nothing
    wait_until(lambda: has_entry(d, text="flood done"), "the flood")
    while True:
        line = slow.line()
        if line is None:
            break
        got.append(line)
    let_go = json.loads(got.pop())
    assert let_go["ok"] is False and let_go["op"] == "attach" and "let go" in let_go["error"]
    assert let_go["from"] == seq_of(got[-1]) + 1
    assert [seq_of(x) for x in got] == list(range(1, len(got) + 1))
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(lambda: [line for line in attach(str(d), let_go["from"]) if line is not None])
        assert huddle("stop", str(d)).returncode == 0
        rest = fut.result()
    assert host.wait() == 0
    assert [x + b"\n" for x in got] + rest == log_lines(d)


def test_many_concurrent_attaches(tmp_path):
    d = tmp_path / "run"
    code = (
        "import sys, time\n"
        "for i in range(3000):\n"
        "    print(f'line {i}', flush=True)\n"
        "    if i % 100 == 0: time.sleep(0.01)\n"
    )
    host = start_host(d, *agent(code))
    starts = [1 + (i * 37) % 400 for i in range(40)]
    with ThreadPoolExecutor(40) as pool:
        futs = [pool.submit(lambda s=s: (s, [x for x in attach(str(d), s) if x is not None])) for s in starts]
        results = [f.result() for f in futs]
    assert host.wait() == 0
    lines = log_lines(d)
    for start, got in results:
        assert got == lines[start - 1 :]


def test_a_command_that_cannot_start(tmp_path):
    d = tmp_path / "run"
    host = start_host(d, "no-such-command-here", "--flag")
    assert host.wait() == 127
    assert b"cannot start no-such-command-here --flag: No such file or directory" in host.stderr.read()
    last = entries(d)[-1]
    assert last["kind"] == "exited" and last["status"] == 127 and "No such file" in last["reason"]
    r = huddle("host", "--dir", str(tmp_path / "run2"), "--cwd", str(tmp_path / "missing"), "--", "true")
    assert r.returncode == 127 and b"No such file or directory" in r.stderr


def test_an_unwritable_folder_or_a_full_disk_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    (tmp_path / "file").write_text("")
    r = huddle("host", "--dir", str(tmp_path / "file" / "run"), "--", "touch", str(marker))
    assert r.returncode == 2 and b"huddle host: cannot create" in r.stderr and b"Not a directory" in r.stderr
    d = tmp_path / "full"
    d.mkdir()
    os.symlink("/dev/full", d / "events.jsonl")
    r = huddle("host", "--dir", str(d), "--", "touch", str(marker))
    assert r.returncode == 2 and b"No space left on device; the agent was not started" in r.stderr
    assert not marker.exists()


def test_the_start_is_logged_before_anything_the_agent_says(tmp_path):
    """An agent that writes at once: its lines come after the "started" entry (they were
    read, and logged, while the host still set up its pipes)."""
    d = tmp_path / "run"
    d.mkdir()
    code = "import sys\nfor i in range(3000): print(i, flush=True); print(i, file=sys.stderr, flush=True)\n"
    host = start_host(d, *agent(code))
    assert host.wait() == 0
    got = kinds(d)
    assert got.index("started") < min(got.index("stdout"), got.index("stderr"))
    assert got.count("started") == 1


def test_a_log_that_fills_up_stops_the_agent(tmp_path):
    import resource

    d = tmp_path / "run"
    d.mkdir()

    def small_files():  # the log can grow to 100 kB, then writes fail (EFBIG) as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    code = "import itertools\nfor i in itertools.count(): print('w' * 100, flush=True)\n"
    host = start_host(d, *agent(code), preexec_fn=small_files)
    assert host.wait() == 1
    err = host.stderr.read()
    assert b"cannot write" in err and b"stopping the agent rather than run it unlogged" in err
    pid = entries(d)[1]["pid"]
    assert not procs.alive(pid)
    assert all(line.endswith(b"\n") for line in log_lines(d))


def test_long_socket_paths_and_another_socket(tmp_path):
    d = tmp_path / ("x" * 70) / ("y" * 70)
    assert len(str(d / "host.sock")) > 108
    host = start_host(d, *ECHO)
    assert huddle("send", str(d), '{"long": true}').returncode == 0
    wait_until(lambda: has_entry(d, kind="stdout", json={"echo": {"long": True}}), "the echo")
    assert huddle("stop", str(d)).returncode == 0
    assert host.wait() == 0
    d2 = tmp_path / "run"
    sock = str(tmp_path / "elsewhere.sock")
    host = start_host(d2, *ECHO, sock=sock)
    assert os.readlink(d2 / "host.sock") == sock
    assert huddle("send", str(d2), '{"n": 1}').returncode == 0
    assert huddle("send", str(d2), "--socket", sock, '{"n": 2}').returncode == 0
    r = huddle("stop", str(d2), "--now")  # no waiting for stdin to end it: SIGTERM at once
    assert r.returncode == 0 and r.stdout.startswith(b"stopped: killed by SIG")
    assert host.wait() in (128 + signal.SIGTERM, 128 + signal.SIGKILL)
    assert [e["step"] for e in entries(d2) if e["kind"] == "stopping"][:2] == ["closing stdin", "SIGTERM"]
    assert entries(d2)[0]["socket"] == sock
    assert not Path(sock).exists() and not os.path.lexists(d2 / "host.sock")
    assert [e["json"] for e in entries(d2) if e["kind"] == "stdin"] == [{"n": 1}, {"n": 2}]


def test_a_host_signal_stops_the_agent_cleanly(tmp_path):
    d = tmp_path / "run"
    # The clean way is the one under test: room for the agent to end by itself once its
    # stdin closes, however loaded the machine (the stop goes on as soon as it has).
    host = start_host(d, *ECHO, grace=60)
    wait_until(lambda: "started" in kinds(d), "the start")
    host.send_signal(signal.SIGTERM)
    assert host.wait() == 0
    assert next(e for e in entries(d) if e["kind"] == "stopping")["by"] == "signal"
    assert kinds(d)[-1] == "exited"


def test_a_host_stopping_with_clients_connected_prints_no_traceback(tmp_path):
    """A client still connected when the host ends (an idle one, an attach) was cancelled
    by asyncio.run, and Python 3.11's stream callback printed a CancelledError traceback
    for it (about one stop in three)."""
    for i in range(5):
        d = tmp_path / f"run{i}"
        p = start_host(d, PY, "-c", "import time; time.sleep(30)")
        idle, following = Raw(d), Raw(d)
        following.send({"op": "attach"})
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=30)
        idle.close()
        following.close()
        assert p.returncode is not None and b"Traceback" not in err and b"CancelledError" not in err, err[-800:]
