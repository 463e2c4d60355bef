"""Source adapters: one small module per on-disk format, registered by name."""

from __future__ import annotations

import importlib

from .base import SOURCES, Handle, Settings, Source, all_sources, guarded, register

# Built-in adapters, imported on first use so that a broken one costs only itself.
BUILTIN = ("claude", "codex", "vibe", "hosted")


def load_builtin() -> list[str]:
    """Import the built-in adapters; return one line per adapter that failed to load."""
    failed = []
    for name in BUILTIN:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                failed.append(f"source {name}: {exc}")
        except Exception as exc:
            failed.append(f"source {name}: {type(exc).__name__}: {exc}")
    return failed


__all__ = ["SOURCES", "Handle", "Settings", "Source", "all_sources", "guarded", "load_builtin", "register"]
