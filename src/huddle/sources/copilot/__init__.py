"""GitHub Copilot CLI: session-state/<id>/events.jsonl (sub-agents inline), its locks and TUI state."""

from .source import CopilotSource

__all__ = ["CopilotSource"]
