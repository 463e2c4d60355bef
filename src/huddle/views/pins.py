"""Pins: the sessions a person keeps at the top of the board.

Kept in `$HUDDLE_HOME/pins.json` (0600, written whole in one rename, under a lock so
that a command and a server pinning at once lose neither pin), never in an agent's
folder: a home folder inside one is refused. A file that is not what `save` writes is
set aside beside it (`pins.json.damaged`: nothing is lost), said once, and pins start
again from none.

`huddle pins --json` == GET /api/pins; `huddle pin ID` / `huddle unpin ID` ==
POST /api/sessions/{id}/pin with {"pinned": true|false} (the server's one write
pattern: server/security.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from huddle.errors import BadRequest, Forbidden
from huddle.model.times import iso, parse_time

if TYPE_CHECKING:
    from huddle.core import Huddle
    from huddle.sources.settings import Settings

FILE = "pins.json"
FORMAT = "huddle-pins/1"
MAX = 1000  # pins kept (the oldest go first)


def path(home: str) -> str:
    return os.path.join(home, FILE)


def _inside(p: str, root: str) -> bool:
    p, root = os.path.realpath(p), os.path.realpath(root)
    return p == root or p.startswith(root.rstrip(os.sep) + os.sep)


def where(settings: Settings) -> str:
    """The pins file; Forbidden when there is no home folder, or it is inside an agent's folder."""
    home = settings.huddle_home
    if not home:
        raise Forbidden("pins need huddle's home folder (HUDDLE_HOME)")
    for agent, folder in sorted(settings.folders.items()):
        if folder and _inside(home, folder):
            raise Forbidden(f"huddle's home {home} is inside {agent}'s folder {folder}: huddle writes nothing there")
    return path(home)


def load(p: str) -> tuple[dict[str, float], str | None]:
    """(session key -> when it was pinned, a line when the file is damaged)."""
    try:
        with open(p, encoding="utf-8") as f:
            raw = json.load(f)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError) as exc:
        return {}, f"{p}: {_why(exc)}"
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("pins"), dict):
        return {}, f"{p}: not a pins file ({FORMAT})"
    out: dict[str, float] = {}
    for k, v in raw["pins"].items():
        t = parse_time(v) if isinstance(v, str) else None
        if isinstance(k, str) and ":" in k and t is not None:
            out[k] = t
    return out, None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return "not JSON" if isinstance(exc, ValueError) else "nested too deep"


def save(p: str, pins: dict[str, float]) -> None:
    kept = dict(sorted(pins.items(), key=lambda kv: kv[1])[-MAX:])
    os.makedirs(os.path.dirname(p), mode=0o700, exist_ok=True)
    tmp = f"{p}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"format": FORMAT, "pins": {k: iso(t) for k, t in kept.items()}}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, p)


@contextlib.contextmanager
def _locked(p: str) -> Iterator[None]:
    os.makedirs(os.path.dirname(p), mode=0o700, exist_ok=True)
    fd = os.open(p + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def set_pin(settings: Settings, key: str, pinned: bool, now: float | None = None) -> list[str]:
    """Pin (or unpin) the session `key`; returns what had to be said (a damaged file set aside)."""
    p = where(settings)
    notes: list[str] = []
    with _locked(p):
        pins, problem = load(p)
        if problem is not None:
            aside = p + ".damaged"
            os.replace(p, aside)
            notes.append(f"{problem}: set aside as {aside}, pins start again")
        if pinned:
            pins.setdefault(key, time.time() if now is None else now)
        elif key not in pins and problem is None:
            return notes
        else:
            pins.pop(key, None)
        save(p, pins)
    return notes


def pins_json(settings: Settings) -> dict[str, Any]:
    """GET /api/pins: every pin, the latest first."""
    try:
        p = where(settings)
    except Forbidden as exc:
        return {"pins": [], "notes": [str(exc)]}
    pins, problem = load(p)
    rows = [
        {"key": k, "source": k.split(":", 1)[0], "id": k.split(":", 1)[1], "pinned_at": iso(t)}
        for k, t in sorted(pins.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return {"pins": rows, "notes": [problem] if problem else []}


def pin(h: Huddle, sid: str, body: object) -> dict[str, Any]:
    """POST /api/sessions/{id}/pin {"pinned": true|false}: the session named (a unique start
    of its id names it too) pinned or not; answers the pins as they are now."""
    from .lookup import check_id

    if not isinstance(body, dict) or not isinstance(body.get("pinned"), bool):
        raise BadRequest('a pin takes {"pinned": true} or {"pinned": false}')
    key = h.find(check_id(sid)).key
    notes = set_pin(h.settings, key, body["pinned"])
    out = pins_json(h.settings)
    out["notes"] = notes + out["notes"]
    out["session"] = key
    out["pinned"] = any(r["key"] == key for r in out["pins"])
    return out
