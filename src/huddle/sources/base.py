"""The one small interface every source adapter implements.

A Source finds its sessions (cheaply: directory listings and stats) and hands out
one Handle per session. A Handle owns the incremental readers of that session's
files and its Session; `refresh()` reads only what was appended since last time.

Adapters register with `@register`. The core calls them through `guarded`, so an
adapter's failure costs its own session (listed with an `error`), never the board.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from huddle.model.session import Session


@dataclass
class Settings:
    """Where the agents keep their files, and huddle its own. From the environment."""

    claude_dir: str = ""
    codex_home: str = ""
    vibe_home: str = ""
    huddle_home: str = ""
    extra: dict = field(default_factory=dict)
    explicit: tuple = ()  # the sources whose folder the user named (a missing one is worth a line)
    usage_only: bool = False  # read only what token counts need (`huddle usage`): never cached

    @classmethod
    def from_env(cls, env: dict | None = None) -> Settings:
        env = os.environ if env is None else env
        home = env.get("HOME") or os.path.expanduser("~")
        data = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
        named = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "vibe": "VIBE_HOME"}
        return cls(
            explicit=tuple(src for src, var in named.items() if env.get(var)),
            claude_dir=env.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude"),
            codex_home=env.get("CODEX_HOME") or os.path.join(home, ".codex"),
            vibe_home=env.get("VIBE_HOME") or os.path.join(home, ".vibe"),
            huddle_home=env.get("HUDDLE_HOME") or os.path.join(data, "huddle"),
        )


class Handle:
    """One session of one source, read incrementally."""

    def __init__(self, source: str, id: str):
        self.session = Session(source, id)

    @property
    def key(self) -> str:
        return self.session.key

    def refresh(self) -> bool:
        """Read what was appended; return whether anything changed."""
        raise NotImplementedError

    def __getstate__(self) -> dict:
        # The cache keeps handles between runs; the source is re-attached on load.
        d = self.__dict__.copy()
        d.pop("source", None)
        return d

    def files(self) -> list[str]:
        """Every file this session is read from (for watching and read-back checks)."""
        return []

    def live(self, at: float | None = None) -> dict:
        """The source's liveness signals for the attention state (pid file, lock...).
        `at` evaluates as of a past time, trusting such files as they are."""
        return {}


class Source:
    name = ""

    def __init__(self, settings: Settings):
        self.settings = settings

    def roots(self) -> list[str]:
        """Folders this source reads (for the watcher and the read-only promise)."""
        return []

    def exists(self) -> bool:
        return any(os.path.isdir(r) for r in self.roots())

    def watch_dirs(self) -> list[str]:
        """Folders whose mtime moves when a session appears (for the status line's
        staleness check)."""
        return self.roots()

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        """All sessions now on disk, reusing the handles in `known` where they are
        still the same session. Must be cheap: listings and stats only."""
        raise NotImplementedError


SOURCES: dict[str, Callable[[Settings], Source]] = {}


def register(cls):
    SOURCES[cls.name] = cls
    return cls


def guarded(what: str, fn: Callable, *args, on_error: Callable[[str], None] | None = None):
    """Run an adapter call; turn any failure into one line instead of a traceback."""
    try:
        return fn(*args)
    except Exception as exc:  # an adapter must never take the board down
        msg = f"{what}: {type(exc).__name__}: {exc}"
        if on_error is not None:
            on_error(msg)
        return None


def all_sources(settings: Settings, names: Iterable[str] | None = None) -> list[Source]:
    from . import load_builtin

    load_builtin()
    wanted = list(names) if names else list(SOURCES)
    return [SOURCES[n](settings) for n in wanted if n in SOURCES]
