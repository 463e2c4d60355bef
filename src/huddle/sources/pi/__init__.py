"""Pi: one JSONL file per session (a tree of entries), forks, the example extension's
sub-agents, the process table."""

from .source import PiSource

__all__ = ["PiSource"]
