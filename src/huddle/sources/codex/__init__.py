"""Codex CLI: rollouts under sessions/, threads and their sub-agents, locks and processes."""

from .source import CodexSource

__all__ = ["CodexSource"]
