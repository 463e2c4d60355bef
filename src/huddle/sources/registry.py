"""Which sources exist: the built-in adapters, third-party ones from the
`huddle.sources` entry point group, narrowed by HUDDLE_SOURCES.

Loading is guarded per adapter: one that fails to import costs itself, and says so
in a note the board shows, never a silent drop.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .base import Source
    from .settings import Settings

# Built-in adapters, imported on first use so that a broken one costs only itself.
BUILTIN = (
    "claude",
    "codex",
    "vibe",
    "gemini",
    "opencode",
    "hosted",
    "copilot",
    "qwen",
    "pi",
    "kilo",
    "cline",
    "telemetry",
)
ENTRY_POINTS = "huddle.sources"

SOURCES: dict[str, type[Source]] = {}
_load_notes: list[str] | None = None

S = TypeVar("S", bound="type[Source]")


def register(cls: S) -> S:
    SOURCES[cls.name] = cls
    return cls


def _load() -> list[str]:
    notes = []
    for name in BUILTIN:
        try:
            importlib.import_module(f"huddle.sources.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"huddle.sources.{name}":  # an adapter left out of this install is no fault
                notes.append(f"source {name}: cannot load: {exc}")
        except Exception as exc:
            notes.append(f"source {name}: cannot load: {type(exc).__name__}: {exc}")
    for ep in _entry_points():
        try:
            obj = ep.load()
        except Exception as exc:
            notes.append(f"source {ep.name} ({ep.value}): cannot load: {type(exc).__name__}: {exc}")
            continue
        from .base import Source

        if isinstance(obj, type) and issubclass(obj, Source) and obj.name and obj.name not in SOURCES:
            register(obj)  # an entry point may name the class instead of a module that registers
    return notes


def _declared(paths: Iterable[str]) -> bool:
    """Whether any installed distribution on these paths declares a `huddle.sources` entry
    point: its entry_points.txt names the group (a listing and a few small reads; the
    import of importlib.metadata, through email, is a tenth of a cached `huddle status`)."""
    marker = f"[{ENTRY_POINTS}]"
    for d in paths:
        try:
            names = [n for n in os.listdir(d or ".") if n.endswith((".dist-info", ".egg-info"))]
        except OSError:
            continue
        for n in names:
            try:
                with open(os.path.join(d or ".", n, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                    if marker in f.read():
                        return True
            except OSError:
                continue
    return False


def _entry_points() -> list[Any]:
    if not _declared(sys.path):
        return []
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINTS))


def load_notes() -> list[str]:
    """Load every adapter once; one line per adapter that failed to load."""
    global _load_notes
    if _load_notes is None:
        _load_notes = _load()
    return list(_load_notes)


def source_classes() -> dict[str, type[Source]]:
    load_notes()
    return dict(SOURCES)


def all_sources(settings: Settings, names: Iterable[str] | None = None) -> list[Source]:
    """The sources to read: `names`, else HUDDLE_SOURCES, else every one loaded."""
    load_notes()
    # (the built-ins in their order, whichever was imported first: one order for every process)
    ordered = [n for n in BUILTIN if n in SOURCES] + [n for n in SOURCES if n not in BUILTIN]
    wanted = list(names) if names else list(settings.only) or ordered
    return [SOURCES[n](settings) for n in wanted if n in SOURCES]


def unknown_sources(settings: Settings, names: Iterable[str] | None = None) -> list[str]:
    """Names asked for that no loaded adapter has (a typo in HUDDLE_SOURCES)."""
    wanted = list(names) if names else list(settings.only)
    return [n for n in wanted if n not in SOURCES]


def resume_command(source: str, session_id: str) -> str | None:
    """The command that resumes a session in its own agent, if that agent has one."""
    import shlex

    cls = source_classes().get(source)
    if cls is None or not cls.resume:
        return None
    return cls.resume.format(id=shlex.quote(session_id))


def display(source: str) -> dict[str, str]:
    """How an agent is shown: its `label` (notifications, the pages, exports), `short`
    name (the CLI's table, badges) and `colour` (the pages), from its Source class: the
    one table of agent names. An unknown source is shown by its key."""
    cls = source_classes().get(source)
    if cls is None:
        return {"label": source, "short": source, "colour": ""}
    return {"label": cls.label or source, "short": cls.short or cls.label or source, "colour": cls.colour}


def displays() -> dict[str, dict[str, str]]:
    """Every loaded agent's `display` (GET /api/agents: the pages name agents by it)."""
    return {name: display(name) for name in source_classes()}
