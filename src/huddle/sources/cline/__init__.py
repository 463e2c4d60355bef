"""Cline CLI: per-session JSON documents rewritten in place (a record, the lead's messages, one
document per sub-agent), read again only when their stamps move."""

from .source import ClineSource

__all__ = ["ClineSource"]
