"""Voices and translation, the figures issue 38 asks for.

    python bench/bench_voices.py [--lines 5] [--kokoro-cache DIR] [--skip kokoro]

  latency   seconds from a line appended to a session's file to its first sentence's audio
            ready at the page (the `voice` message on the session's stream, then its clip
            fetched: the page plays it at once), per engine, on a real server (median, max)
  rtf       synthesis real-time factor of the speaking worker, 2 threads, per engine:
            wall seconds and the worker's CPU seconds per second of audio
  memory    the speaking worker's resident memory (VmRSS) after its lines, per engine;
            a warm `claude` translation worker's
  translate seconds to translate one new string through the real Claude Code CLI against
            a fake model API on 127.0.0.1 answering at once: cold (a new pool: the
            process starts) and warm (the same worker); the model's own time is not in it

Kokoro uses the int8 model the registry package ships (tests/voice_assets.py), assembled
into --kokoro-cache (a temp folder by default). The machine is shared: figures are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

LINES = [
    "The tests pass on both machines.",
    "I read the parser and found where a bad line stops the whole read; the fix is small.",
    "Needs you: approve running the migration on the staging database.",
    "Done. The release notes are written and the tag is pushed.",
    "The reviewer reports two nits and one real bug in the retry loop, which I am fixing now.",
]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def rtf(engine: str, env: dict[str, str], n: int) -> dict:
    from huddle.voice.speaker import Line, Speaker

    sp = Speaker(engine, env=env)
    try:
        sp.speak(Line("Warm up."))
        pid = sp.status()["pid"]
        c0 = cpu_s(pid)
        synth = audio = 0.0
        for i in range(n):
            clip = sp.speak(Line(LINES[i % len(LINES)], cast=i))
            synth += clip.seconds
            audio += clip.duration
        cpu = cpu_s(pid) - c0
        mem = rss_kb(pid)
    finally:
        sp.close()
    return {"rtf_wall": synth / audio, "rtf_cpu": cpu / audio, "audio_s": audio, "rss_mb": mem / 1024}


def latency(engine: str, home: str, n: int) -> list[float]:
    import httpx

    import web_corpus
    from huddle import optin
    from huddle.server import ServerThread
    from test_voice_call import SSE

    root = Path(tempfile.mkdtemp())
    settings, sid, main = web_corpus.one_session(root)
    settings.huddle_home = home
    o = optin.load(home)
    o.voices, o.engine = True, engine
    optin.save(o, home)
    out = []
    with ServerThread(web_corpus.core(settings), watch_options={"poll_watched": 0.5, "poll_unwatched": 0.2}) as srv:
        stream = SSE(f"{srv.url}api/stream?session={sid}")
        stop = threading.Event()
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            c.get(f"/api/voice/claim?session={sid}&window=bench")

            def beat() -> None:
                while not stop.wait(2):
                    c.get(f"/api/voice/beat?session={sid}&window=bench")

            threading.Thread(target=beat, daemon=True).start()
            last = 0
            for i in range(n + 1):  # the first starts the worker: reported apart
                text = f"{LINES[i % len(LINES)]} ({i})"
                t0 = time.monotonic()
                web_corpus.append_say(main, text)
                # its first sentence's clip: the page starts playing it at once
                _, v = stream.wait(
                    "voice", lambda d, text=text, last=last: text.startswith(d["text"]) and d["n"] > last, timeout=300
                )
                last = v["n"]
                c.get(v["url"]).raise_for_status()
                out.append(time.monotonic() - t0)
                time.sleep(1.0)
            stop.set()
        stream.close()
    return out


def translation(n: int) -> dict:
    import agent_clis
    from fake_model import FakeModel
    from huddle.translate.translator import Translator

    cold, warm = [], []
    rss = 0
    with FakeModel() as fm:
        env = agent_clis.translation_env(fm.url, Path(tempfile.mkdtemp()) / "cfg")
        os.environ.update(env)
        for i in range(n):
            tr = Translator(tempfile.mkdtemp(), "fr")
            try:
                t0 = time.monotonic()
                tr.translate([f"The tests pass, round {i}."])
                cold.append(time.monotonic() - t0)
                for j in range(3):
                    t0 = time.monotonic()
                    tr.translate([f"Another line, {i}.{j}."])
                    warm.append(time.monotonic() - t0)
                rss = max(rss, *(rss_kb(p) for p in tr.backend.pids()))  # type: ignore[attr-defined]
            finally:
                tr.close()
    return {"cold": cold, "warm": warm, "rss_mb": rss / 1024}


def show(name: str, xs: list[float]) -> str:
    return f"{name}: median {statistics.median(xs):.2f} s, max {max(xs):.2f} s (n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=5)
    ap.add_argument("--kokoro-cache", default=None)
    ap.add_argument("--skip", action="append", default=[])
    a = ap.parse_args()
    import voice_assets

    home = tempfile.mkdtemp()
    engines = ["espeak"]
    if "kokoro" not in a.skip:
        cache = Path(a.kokoro_cache or tempfile.mkdtemp())
        voice_assets.install_registry_kokoro(Path(home), cache)
        engines.append("kokoro")
    env = {**os.environ, "HUDDLE_HOME": home, "HUDDLE_VOICE_THREADS": "2"}
    os.environ.update({"HUDDLE_HOME": home, "HUDDLE_VOICE_THREADS": "2"})
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for engine in engines:
        r = rtf(engine, env, a.lines)
        print(
            f"{engine}: RTF wall {r['rtf_wall']:.3f}, CPU {r['rtf_cpu']:.3f} ({r['audio_s']:.1f} s of audio); "
            f"worker RSS {r['rss_mb']:.0f} MB"
        )
    for engine in engines:
        xs = latency(engine, home, a.lines)
        print(f"{engine}: first line (worker start) {xs[0]:.2f} s; " + show("line -> audio ready", xs[1:]))
    if "translate" not in a.skip:
        t = translation(3)
        print(show("translate cold (new claude worker)", t["cold"]))
        print(show("translate warm", t["warm"]))
        print(f"claude worker RSS {t['rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
