"""OpenCode: one SQLite database (read strictly read-only), sub-agent sessions by parent_id,
its lock folders and the process table."""

from .source import OpenCodeSource

__all__ = ["OpenCodeSource"]
