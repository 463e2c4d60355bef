"""Mistral Vibe: unified stores and legacy session folders, locks."""

from .source import VibeSource

__all__ = ["VibeSource"]
