"""Qwen Code (0.24.x): chat files, sub-agent files with their metas, the TUI's registry."""

from .source import QwenHandle, QwenSource

__all__ = ["QwenHandle", "QwenSource"]
