"""Voices on a real server: which window plays (the last to claim, kept by heartbeats),
a new line spoken and announced on the page's stream, the clip served as WAV; and the
page in Debian's Chromium playing it, one window at a time, the translation shown with
its original one click away."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

import web_corpus
from huddle import optin
from huddle.server import ServerThread

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}
SHOTS = Path(__file__).parent / "screenshots"


def voices_on(home: str, engine: str = "espeak") -> None:
    o = optin.load(home)
    o.voices, o.engine = True, engine
    optin.save(o, home)


class SSE:
    """A page's stream, read on a thread: (time, event, data) as they arrive."""

    def __init__(self, url: str) -> None:
        self.msgs: list[tuple[float, str, dict]] = []
        self.cond = threading.Condition()
        self.hello = threading.Event()
        self.client = httpx.Client(timeout=None)
        self.thread = threading.Thread(target=self._read, args=(url,), daemon=True)
        self.thread.start()
        assert self.hello.wait(20), "no hello"

    def _read(self, url: str) -> None:
        cur: dict = {}
        try:
            with self.client.stream("GET", url) as r:
                for line in r.iter_lines():
                    if not line:
                        if "event" in cur:
                            with self.cond:
                                self.msgs.append((time.monotonic(), cur["event"], json.loads(cur["data"])))
                                self.cond.notify_all()
                            if cur["event"] == "hello":
                                self.hello.set()
                        cur = {}
                    elif not line.startswith(":"):
                        k, _, v = line.partition(": ")
                        cur[k] = v
        except httpx.HTTPError:
            pass

    def wait(self, kind: str, pred, timeout: float = 60) -> tuple[float, dict]:
        with self.cond:
            deadline = time.monotonic() + timeout
            while True:
                for t, k, d in self.msgs:
                    if k == kind and pred(d):
                        return t, d
                left = deadline - time.monotonic()
                assert left > 0, f"no {kind} message: {[k for _, k, _ in self.msgs]}"
                self.cond.wait(left)

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def live(tmp_path):
    settings, sid, main = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
        yield srv, sid, main, settings.huddle_home


def test_voices_off_start_nothing_and_say_so(live):
    srv, sid, _, _ = live
    with httpx.Client(base_url=srv.url, timeout=20) as c:
        state = c.get("/api/voice").json()
        assert state["on"] is False and "huddle voices on" in state["why"] and state["speaker"] is None
        r = c.get(f"/api/voice/claim?session={sid}&window=w1")
        assert r.status_code == 404 and "voices are off" in r.json()["error"]
    assert srv.state.extras.voice.speaker is None


def test_the_last_window_to_claim_plays_while_it_beats(live):
    srv, sid, _, home = live
    voices_on(home)
    desk = srv.state.extras.voice
    with httpx.Client(base_url=srv.url, timeout=20) as c:
        a = c.get(f"/api/voice/claim?session={sid}&window=aaa").json()
        assert a["playing"] is True
        b = c.get(f"/api/voice/claim?session={sid}&window=bbb").json()
        assert b["playing"] is True
        assert c.get(f"/api/voice/beat?session={sid}&window=aaa").json()["playing"] is False
        desk.claims["bbb"].beat -= 60  # b's window closed: its beats stopped
        assert c.get(f"/api/voice/beat?session={sid}&window=aaa").json()["playing"] is True
        assert c.get(f"/api/voice/beat?session={sid}&window=bbb").json() == {
            **c.get(f"/api/voice/beat?session={sid}&window=bbb").json(),
            "playing": False,
            "claimed": False,
        }
        assert c.get(f"/api/voice/claim?session={sid}&window=bad%20id").status_code == 400
        assert c.get("/api/voice/clip/999").status_code == 404
    assert desk.speaker is None  # claims alone start nothing: the first line does


def test_a_new_line_is_spoken_to_the_window_that_plays(live):
    srv, sid, main, home = live
    voices_on(home)
    stream = SSE(f"{srv.url}api/stream?session={sid}")
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get(f"/api/voice/claim?session={sid}&window=w1").json()["playing"]
            appeared = time.monotonic()
            web_corpus.append_say(main, "The release is tagged. I am writing the notes now.")
            _, v = stream.wait("voice", lambda d: "release is tagged" in d["text"])
            assert v["session"] == sid and v["engine"] == "espeak" and v["duration"] > 1
            wav = c.get(v["url"])
            assert wav.headers["content-type"] == "audio/wav" and wav.content[:4] == b"RIFF"
            assert len(wav.content) > 44 + 22050  # over half a second of sound
            _, v2 = stream.wait("voice", lambda d: d["text"] == "I am writing the notes now.")  # its next sentence
            assert v2["n"] > v["n"]
            web_corpus.append_say(main, "Muted lines are not spoken.")
            assert c.get(f"/api/voice/beat?session={sid}&window=w1&muted=1").json()["playing"]
            time.sleep(0)  # (the mute is in force from this beat on)
        stream.wait("events", lambda d: any("Muted lines" in (e.get("text") or "") for e in d["events"]))
    finally:
        stream.close()
    assert time.monotonic() - appeared < 60
    assert not any(k == "voice" and "Muted lines" in d["text"] for _, k, d in stream.msgs)
    assert srv.state.extras.voice.speaker.status()["spoken"] == 2  # its two sentences, each a clip


# -- in the browser ---------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required", "--mute-audio"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=20_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.mark.browser
def test_one_window_plays_the_call(live, browser, request):
    srv, sid, main, home = live
    voices_on(home)
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    errors: list[str] = []
    first, second = ctx.new_page(), ctx.new_page()
    for pg in (first, second):
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(f"{srv.url}session/{sid}#call")
        pg.wait_for_selector(".tile")
    try:
        first.click("#voice-listen")
        expect(first.locator("body")).to_have_attribute("data-voice", "playing")
        second.click("#voice-listen")
        expect(second.locator("body")).to_have_attribute("data-voice", "playing")
        expect(first.locator("body")).to_have_attribute("data-voice", "elsewhere")  # the last to claim plays
        expect(first.locator("#voice-where")).to_have_text("playing in another window")
        web_corpus.append_say(main, "Spoken in the second window only.")
        expect(second.locator("body")).to_have_attribute("data-voice-heard", __import__("re").compile(r"\d+"))
        assert first.evaluate("document.body.dataset.voiceHeard") is None
        second.close()  # its heartbeats stop: the claim goes back to the first window
        expect(first.locator("body")).to_have_attribute("data-voice", "playing", timeout=30_000)
        first.click("#voice-mute")
        expect(first.locator("body")).to_have_attribute("data-voice", "muted")
        SHOTS.mkdir(exist_ok=True)
        first.screenshot(path=str(SHOTS / f"{request.node.name}.png"))
    finally:
        ctx.close()
    assert errors == []


@pytest.mark.browser
def test_the_conversation_in_another_language(tmp_path, browser, monkeypatch, request):
    import agent_clis
    from fake_model import FakeModel, fake_fr

    settings, sid, main = web_corpus.one_session(tmp_path)
    web_corpus.append_say(main, "The tests pass.")
    with FakeModel() as fm:
        for k, v in agent_clis.translation_env(fm.url, tmp_path / "claude-config").items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("HUDDLE_TRANSLATE", "fr")
        with ServerThread(web_corpus.core(settings), watch_options=FAST) as srv:
            ctx = browser.new_context(viewport={"width": 1280, "height": 860})
            pg = ctx.new_page()
            try:
                pg.goto(f"{srv.url}session/{sid}#conversation")
                msg = pg.locator(".msg.agent").last  # the line appended last
                expect(msg.locator(".body")).to_have_text(fake_fr("The tests pass."), timeout=60_000)
                msg.get_by_role("button", name="Show original").click()
                expect(msg.locator(".body")).to_have_text("The tests pass.")
                expect(msg.get_by_role("button", name="Show fr")).to_be_visible()
                pg.goto(f"{srv.url}session/{sid}#call")
                expect(pg.locator(".tile.lead .bubble")).to_have_text(fake_fr("The tests pass."))
                SHOTS.mkdir(exist_ok=True)
                pg.screenshot(path=str(SHOTS / f"{request.node.name}.png"))
            finally:
                ctx.close()
