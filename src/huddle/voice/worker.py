"""The speaking worker: one process that speaks one line at a time.

`python -m huddle.voice.worker ENGINE` loads the engine once (Kokoro's model takes a
second or two), says `{"ready": ...}` on stdout, then for each request line on stdin
(`{"id", "text", "voice"}`) answers a header line (`{"id", "ok", "rate", "bytes",
"seconds"}`) followed by that many bytes of 16-bit mono PCM, or `{"id", "ok": false,
"error"}`. It ends when its stdin closes (the parent went away). Apart from the server
so a model's memory, threads and any crash stay out of it (voice/speaker.py restarts it).
"""

from __future__ import annotations

import json
import os
import sys
import time


def _say(out, header: dict, body: bytes = b"") -> None:
    out.write(json.dumps(header).encode() + b"\n")
    if body:
        out.write(body)
    out.flush()


def main(argv: list[str]) -> int:
    from huddle.io.folders import huddle_home

    from .engines import Unavailable, make

    out = sys.stdout.buffer
    name = argv[0] if argv else ""
    threads = int(os.environ.get("HUDDLE_VOICE_THREADS", "0") or 0)
    try:
        engine = make(name, huddle_home(), threads)
    except Unavailable as exc:
        _say(out, {"ready": False, "error": str(exc)})
        return 2
    _say(out, {"ready": True, "engine": engine.name, "voices": engine.voices(), "rate": engine.rate})
    for raw in sys.stdin.buffer:
        try:
            req = json.loads(raw)
            rid, text, voice = req["id"], str(req["text"]), str(req["voice"])
        except (ValueError, KeyError, TypeError):
            _say(out, {"id": None, "ok": False, "error": "not a request"})
            continue
        t0 = time.perf_counter()
        try:
            pcm = engine.synth(text, voice)
        except (Unavailable, ValueError) as exc:
            _say(out, {"id": rid, "ok": False, "error": str(exc)})
            continue
        _say(
            out,
            {"id": rid, "ok": True, "rate": engine.rate, "bytes": len(pcm), "seconds": time.perf_counter() - t0},
            pcm,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
