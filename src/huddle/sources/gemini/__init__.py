"""Gemini CLI: chat files under tmp/<project>/chats/, sub-agent files, the process table."""

from .source import GeminiSource

__all__ = ["GeminiSource"]
