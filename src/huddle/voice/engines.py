"""The two speech engines: Kokoro-82M through ONNX Runtime (when its model files are
here), and espeak-ng (Debian's `espeak-ng`, nothing to download) as the fallback.

An engine turns one line of text into 16-bit mono PCM at its own rate, in a few voices
that sound apart. Kokoro reads phonemes, not letters: espeak-ng gives them (`--ipa`), so
both engines need the `espeak-ng` program; Kokoro needs `onnxruntime` and `numpy` too
(the `huddle[voices]` extra). Only the speaking worker (voice/worker.py) builds one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Protocol

from .models import installed

ESPEAK_VOICES = ("en-us+m3", "en-us+f3", "en-gb+m1", "en-us+f2", "en-gb+f4", "en-us+m7", "en+m4", "en-us+f5")
# Kokoro voices that sound apart, the lead's first; a voices file without them (another
# language's) is cast from its own names in order
KOKORO_VOICES = (
    "am_michael",
    "af_heart",
    "bm_george",
    "af_bella",
    "am_adam",
    "bf_emma",
    "am_puck",
    "af_nicole",
    "bm_lewis",
    "af_sarah",
    "bf_isabella",
    "am_fenrir",
)
KOKORO_RATE = 24000
KOKORO_TOKENS = 510  # the model's longest input, in phonemes
SYNTH_TIMEOUT = 60.0  # seconds one espeak-ng call may take


class Unavailable(Exception):
    """This engine cannot run here (what is missing, in one line)."""


class Engine(Protocol):
    name: str
    rate: int

    def voices(self) -> list[str]: ...

    def synth(self, text: str, voice: str) -> bytes:
        """16-bit little-endian mono PCM at `rate`."""
        ...


def espeak_program() -> str:
    found = shutil.which("espeak-ng")
    if not found:
        raise Unavailable("espeak-ng is not installed (Debian/Ubuntu: apt install espeak-ng)")
    return found


def pcm_of_wav(blob: bytes) -> tuple[bytes, int]:
    """(PCM, rate) of a 16-bit mono WAV as espeak-ng writes it to a pipe (its sizes
    unknown then: the data runs to the end)."""
    if blob[:4] != b"RIFF" or blob[8:12] != b"WAVE":
        raise ValueError("not a WAV stream")
    i, rate = 12, 0
    while i + 8 <= len(blob):
        tag, size = blob[i : i + 4], int.from_bytes(blob[i + 4 : i + 8], "little")
        if tag == b"fmt ":
            rate = int.from_bytes(blob[i + 12 : i + 16], "little")
        if tag == b"data":
            data = blob[i + 8 :]
            return data[: len(data) & ~1], rate
        i += 8 + size
    raise ValueError("no data in the WAV stream")


def _run(argv: list[str], text: str) -> bytes:
    # the text goes on stdin: a line that starts with "-" is never taken for an option
    try:
        done = subprocess.run(argv, input=text.encode(), capture_output=True, timeout=SYNTH_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"espeak-ng took over {SYNTH_TIMEOUT:g} s") from None
    if done.returncode != 0:
        raise Unavailable(f"espeak-ng failed ({done.returncode}): {done.stderr.decode(errors='replace').strip()[:200]}")
    return done.stdout


class Espeak:
    name = "espeak"
    rate = 22050

    def __init__(self, speed: int = 175) -> None:
        self.program = espeak_program()
        self.speed = speed

    def voices(self) -> list[str]:
        return list(ESPEAK_VOICES)

    def synth(self, text: str, voice: str) -> bytes:
        pcm, rate = pcm_of_wav(_run([self.program, "--stdout", "-s", str(self.speed), "-v", voice], text))
        self.rate = rate or self.rate
        return pcm


def phonemes(program: str, text: str, lang: str = "en-us") -> list[str]:
    """IPA phonemes, one string per clause (espeak-ng breaks at punctuation)."""
    out = _run([program, "-q", "--ipa", "-v", lang], text).decode("utf-8", "replace")
    return [" ".join(line.split()) for line in out.splitlines() if line.strip()]


class Kokoro:
    """Kokoro-82M (the int8 ONNX export) on the CPU."""

    name = "kokoro"
    rate = KOKORO_RATE

    def __init__(self, home: str, threads: int = 0) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
        except ImportError:
            raise Unavailable("Kokoro needs the voices extra: pip install 'huddle[voices]'") from None
        files = installed(home)
        if files is None:
            raise Unavailable("Kokoro's model files are not here: `huddle voices on` downloads them")
        self.program = espeak_program()
        self.np = np
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3  # its warnings are not the user's business
        self.session = ort.InferenceSession(files["model"], sess_options=opts, providers=["CPUExecutionProvider"])
        kinds = {i.name: i.type for i in self.session.get_inputs()}
        self.tokens_input = "input_ids" if "input_ids" in kinds else "tokens"
        self.int_speed = kinds.get("speed", "") == "tensor(int32)"
        with np.load(files["voices"]) as z:
            self.styles = {k: np.asarray(z[k], dtype=np.float32) for k in z.files}
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kokoro_vocab.json")
        with open(path, encoding="utf-8") as f:
            self.vocab: dict[str, int] = json.load(f)["vocab"]

    def voices(self) -> list[str]:
        mine = [v for v in KOKORO_VOICES if v in self.styles]
        return mine + sorted(v for v in self.styles if v not in mine)

    def synth(self, text: str, voice: str) -> bytes:
        np = self.np
        style = self.styles.get(voice)
        if style is None:
            raise ValueError(f"no Kokoro voice {voice!r}")
        lang = "en-gb" if voice.startswith("b") else "en-us"
        parts = []
        for chunk in _chunks(phonemes(self.program, text, lang)):
            ids = [self.vocab[c] for c in chunk if c in self.vocab][:KOKORO_TOKENS]
            if not ids:
                continue
            ref = style[min(len(ids), len(style)) - 1].reshape(1, -1)
            speed = np.array([1], dtype=np.int32) if self.int_speed else np.array([1.0], dtype=np.float32)
            audio = self.session.run(
                None, {self.tokens_input: np.array([[0, *ids, 0]], dtype=np.int64), "style": ref, "speed": speed}
            )[0]
            parts.append(np.asarray(audio, dtype=np.float32).ravel())
            parts.append(np.zeros(int(0.12 * self.rate), dtype=np.float32))  # a breath between clauses
        if not parts:
            return b""
        wave = np.concatenate(parts[:-1])
        return (np.clip(wave, -1.0, 1.0) * 32767).astype("<i2").tobytes()


_END = re.compile(r"[.!?]$")


def _chunks(clauses: list[str]) -> list[str]:
    """Clauses joined into pieces the model takes at once (KOKORO_TOKENS phonemes)."""
    out: list[str] = []
    cur = ""
    for c in clauses:
        c = c if _END.search(c) else c + ","
        if cur and len(cur) + 1 + len(c) > KOKORO_TOKENS:
            out.append(cur)
            cur = c
        else:
            cur = f"{cur} {c}".strip()
    if cur:
        out.append(cur[:-1] + "." if cur.endswith(",") else cur)
    return out


def make(name: str, home: str, threads: int = 0) -> Engine:
    """The engine named ("kokoro", "espeak"), or the best one here ("")."""
    if name == "kokoro":
        return Kokoro(home, threads)
    if name == "espeak":
        return Espeak()
    if name:
        raise Unavailable(f"no voice engine {name!r} (espeak or kokoro)")
    if installed(home) is not None:
        try:
            return Kokoro(home, threads)
        except Unavailable:
            pass
    return Espeak()
