"""Source adapters: one package per on-disk format, registered by name (registry.py)."""

from __future__ import annotations

from .base import Handle, Source, guarded
from .registry import SOURCES, all_sources, load_notes, register
from .settings import Settings

__all__ = ["SOURCES", "Handle", "Settings", "Source", "all_sources", "guarded", "load_notes", "register"]
