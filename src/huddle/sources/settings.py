"""Where the agents keep their files, and huddle its own."""

from __future__ import annotations

import os
from collections.abc import Mapping

import msgspec

from huddle.io.folders import agent_folder, huddle_home

from .registry import source_classes


class Settings(msgspec.Struct, kw_only=True):
    """Where the agents keep their files, and huddle its own. Each source declares its
    folder (`Source.folder_env`, `Source.default_folder`); `from_env` resolves them all.
    (A Struct, not a dataclass: `dataclasses` loads `inspect`, ~10 ms of every one-shot
    run; a changed copy is `msgspec.structs.replace`'s.)"""

    folders: dict[str, str] = {}  # source name -> its folder
    huddle_home: str = ""
    explicit: tuple[str, ...] = ()  # the sources whose folder the user named (a missing one is worth a line)
    only: tuple[str, ...] = ()  # HUDDLE_SOURCES: read only these sources (empty: all)
    usage_only: bool = False  # read only what token counts need (`huddle usage`): never cached

    def folder(self, source: str) -> str:
        """The folder of `source`, or "" when it has none here."""
        return self.folders.get(source, "")

    def env(self) -> dict[str, str]:
        """The environment that names these same folders (for a child process)."""
        out = {"HUDDLE_HOME": self.huddle_home}
        for name, c in source_classes().items():
            if c.folder_env and name in self.folders:
                out[c.folder_env] = self.folders[name]
        return out

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        classes = source_classes()
        return cls(
            folders={
                name: agent_folder(env, c.folder_env, c.default_folder)
                for name, c in classes.items()
                if c.folder_env or c.default_folder
            },
            huddle_home=huddle_home(env),
            explicit=tuple(name for name, c in classes.items() if c.folder_env and env.get(c.folder_env)),
            only=tuple(n.strip() for n in env.get("HUDDLE_SOURCES", "").split(",") if n.strip()),
        )
