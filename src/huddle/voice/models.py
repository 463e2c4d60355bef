"""Kokoro's model files: what they are, where they are kept, and their download.

Downloaded only when the user turns voices on and confirms (`huddle voices on`, the
sizes shown first), into `$HUDDLE_HOME/voices/kokoro/`, each file's SHA-256 checked
before it is kept: a file that does not match is deleted, never used.
`HUDDLE_KOKORO_MIRROR` names another place to fetch the same files from (the checks
stay those below).
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from huddle.io.folders import huddle_home

RELEASE = "https://github.com/thewh1teagle/kokoro-onnx/releases/download/model-files-v1.0/"
KEPT = "kept.json"  # what was checked and kept: {role: {name, size, sha256}}
ROLES = ("model", "voices")
CHUNK = 1 << 20
TIMEOUT = 30.0  # seconds a read may stall


@dataclass(frozen=True)
class ModelFile:
    role: str  # "model" or "voices"
    name: str
    url: str
    size: int
    sha256: str


# Kokoro-82M v1.0, the int8 ONNX export (weights and voices Apache-2.0, hexgrad; the export
# MIT, kokoro-onnx), as its release publishes them
KOKORO = (
    ModelFile(
        "model",
        "kokoro-v1.0.int8.onnx",
        RELEASE + "kokoro-v1.0.int8.onnx",
        92_361_271,
        "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
    ),
    ModelFile(
        "voices",
        "voices-v1.0.bin",
        RELEASE + "voices-v1.0.bin",
        28_214_398,
        "bca610b8308e8d99f32e6fe4197e7ec01679264efed0cac9140fe9c29f1fbf7d",
    ),
)


class DownloadError(Exception):
    """A model file could not be fetched or did not match (one line)."""


def folder(home: str | None = None) -> str:
    return os.path.join(home or huddle_home(), "voices", "kokoro")


def _kept(home: str | None) -> dict[str, dict]:
    """{role: {"name", "size", "sha256"}} of the files checked and kept (kept.json)."""
    try:
        with open(os.path.join(folder(home), KEPT), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def installed(home: str | None) -> dict[str, str] | None:
    """{role: path} when a model and its voices were downloaded and checked (kept.json
    says which, with their sizes: checked again now), else None."""
    kept = _kept(home)
    out = {}
    for role in ROLES:
        f = kept.get(role)
        if f is None:
            return None
        p = os.path.join(folder(home), os.path.basename(str(f.get("name", ""))))
        try:
            if os.stat(p).st_size != f.get("size"):
                return None
        except OSError:
            return None
        out[role] = p
    return out


def missing(home: str | None, files: tuple[ModelFile, ...] = KOKORO) -> list[ModelFile]:
    """The files of `files` not yet downloaded and checked."""
    kept = _kept(home)
    out = []
    for f in files:
        k = kept.get(f.role) or {}
        p = os.path.join(folder(home), f.name)
        ok = k.get("sha256") == f.sha256 and k.get("name") == f.name
        if not (ok and os.path.isfile(p) and os.path.getsize(p) == f.size):
            out.append(f)
    return out


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def download(
    home: str | None,
    files: tuple[ModelFile, ...] = KOKORO,
    progress: Callable[[ModelFile, int], None] | None = None,
    mirror: str | None = None,
) -> list[str]:
    """Fetch what is missing, each checked (size, SHA-256) before it is kept. Returns the
    paths kept; raises DownloadError (the bad file deleted) on the first that fails."""
    mirror = mirror if mirror is not None else os.environ.get("HUDDLE_KOKORO_MIRROR", "")
    out = []
    base = folder(home)
    os.makedirs(base, exist_ok=True)
    for f in missing(home, files):
        url = mirror.rstrip("/") + "/" + f.name if mirror else f.url
        dest = os.path.join(base, f.name)
        part = dest + ".part"
        digest = hashlib.sha256()
        got = 0
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as r, open(part, "wb") as out_f:
                while True:
                    block = r.read(CHUNK)
                    if not block:
                        break
                    got += len(block)
                    if got > f.size:
                        raise DownloadError(f"{f.name}: larger than the {mb(f.size)} expected")
                    digest.update(block)
                    out_f.write(block)
                    if progress is not None:
                        progress(f, got)
            if got != f.size:
                raise DownloadError(f"{f.name}: got {got:,} bytes, expected {f.size:,}")
            if digest.hexdigest() != f.sha256:
                raise DownloadError(f"{f.name}: SHA-256 {digest.hexdigest()[:16]}… is not the published one; not kept")
        except (OSError, ValueError) as exc:
            _remove(part)
            raise DownloadError(f"{f.name}: {getattr(exc, 'reason', None) or exc}") from None
        except DownloadError:
            _remove(part)
            raise
        os.replace(part, dest)
        kept = _kept(home)
        kept[f.role] = {"name": f.name, "size": f.size, "sha256": f.sha256}
        tmp = os.path.join(base, KEPT + ".tmp")
        with open(tmp, "w", encoding="utf-8") as kf:
            json.dump(kept, kf, indent=2)
        os.replace(tmp, os.path.join(base, KEPT))
        out.append(dest)
    return out


def remove(home: str | None, files: tuple[ModelFile, ...] = KOKORO) -> int:
    """Delete the kept files; the bytes freed."""
    freed = 0
    _remove(os.path.join(folder(home), KEPT))
    for f in files:
        p = os.path.join(folder(home), f.name)
        try:
            freed += os.path.getsize(p)
            os.remove(p)
        except OSError:
            pass
    return freed


def _remove(p: str) -> None:
    try:
        os.remove(p)
    except OSError:
        pass
