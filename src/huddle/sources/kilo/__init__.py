"""Kilo CLI: OpenCode's core renamed, read by the OpenCode reader (one SQLite database, read-only)."""

from .source import KiloSource

__all__ = ["KiloSource"]
