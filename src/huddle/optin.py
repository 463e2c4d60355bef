"""What the user opted in to: voices and translation ($HUDDLE_HOME/optin.json).

Both are off until the user turns them on (`huddle voices on`, `huddle translate fr`,
`huddle serve --translate fr`): with this file absent or saying nothing, huddle starts no
speaking worker, no translating process, and opens no connection. The one owner of these
settings; the voice and translate packages read them through `load`.

Never holds a secret: an API key for translation is read from the environment only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

from huddle.io.folders import huddle_home

FILE = "optin.json"
LANG_MAX = 35  # a BCP 47 tag ("fr", "pt-BR", "zh-Hant") or a language's name


@dataclass
class OptIn:
    voices: bool = False  # the call may speak (a page that claims playback, `huddle say`)
    engine: str = ""  # "kokoro" or "espeak"; "" = the best one present
    muted: bool = False  # every session quiet
    muted_sessions: list[str] = field(default_factory=list)
    translate: str = ""  # the language the conversation, call and notifications are shown in ("" = off)
    translate_via: str = "claude"  # "claude" (the user's own CLI) or "api" (a key in the environment)
    translate_model: str = ""  # "" = the backend's small default


def path(home: str | None = None) -> str:
    return os.path.join(home or huddle_home(), FILE)


def load(home: str | None = None) -> OptIn:
    """The settings as saved; defaults (everything off) when there is no file or it is
    not what `save` writes (a damaged file never turns anything on)."""
    try:
        with open(path(home), encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError, RecursionError):
        return OptIn()
    if not isinstance(raw, dict):
        return OptIn()
    out = OptIn()
    for k, default in asdict(out).items():
        v = raw.get(k, default)
        if type(v) is type(default) and (not isinstance(v, list) or all(isinstance(x, str) for x in v)):
            setattr(out, k, v)
    return out


def save(o: OptIn, home: str | None = None) -> None:
    """Write the settings, readable by the user only (0600), in one rename."""
    p = path(home)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    tmp = f"{p}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(o), f, indent=2)
    os.replace(tmp, p)


def check_lang(lang: str) -> str:
    """A language as the user gave it, or ValueError with what is wrong."""
    lang = lang.strip()
    if not lang or len(lang) > LANG_MAX or not all(c.isalnum() or c in "-_ " for c in lang):
        raise ValueError(f"not a language: {lang[:40]!r} (use a code such as fr, de, pt-BR)")
    return lang
