"""Which protocol a command line speaks: the channels huddle knows, in the order tried."""

from __future__ import annotations

from .acp import AcpChannel
from .channel import Channel
from .claude import ClaudeChannel
from .codex import CodexChannel

CHANNELS: list[type[Channel]] = [ClaudeChannel, CodexChannel, AcpChannel]
PROTOCOLS = ("claude", "codex", "acp", "none")


def pick(argv: list[str], cwd: str, protocol: str | None = None, prompt: str = "") -> Channel | None:
    """The channel for this command: the one named (`--protocol`), else the first whose
    command line it is; None for a plain run (logged, not answerable)."""
    for cls in CHANNELS:
        if protocol == cls.name or (protocol is None and cls.matches(argv)):
            return cls(argv, cwd, prompt)
    return None
