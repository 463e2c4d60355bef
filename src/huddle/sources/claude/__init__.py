"""Claude Code: transcripts under projects/, sub-agents, the sessions/<pid>.json registry."""

from .source import ClaudeSource

__all__ = ["ClaudeSource"]
