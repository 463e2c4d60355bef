"""A one-shot run loads what it uses. At import, msgspec looks for typing_extensions
(for its TypedDict and Required), and that module loads inspect, ast and dis: ~10-20 ms
of a `huddle status` that reads one appended line. huddle declares no type from
typing_extensions, and Python 3.11's typing holds what msgspec falls back on, so the
console script has msgspec's helper module loaded with typing_extensions out of sight;
anything after imports it as usual. Only where nothing loaded it first, and only in
huddle's own process (huddle.entry), never in a program that imports huddle.
(Known upstream: msgspec/msgspec#880, #1090.)"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (typing is not loaded for annotations: mypy reads them)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType

HELPER = "msgspec._utils"
HIDDEN = "typing_extensions"


class _Hidden:
    """The helper module's own loader, run with typing_extensions out of sight."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if HIDDEN in sys.modules:  # (loaded meanwhile: nothing to save)
            self.loader.exec_module(module)
            return
        sys.modules[HIDDEN] = None  # type: ignore[assignment]  # (an import of it raises ImportError)
        try:
            self.loader.exec_module(module)
        finally:
            del sys.modules[HIDDEN]


class _Finder:
    """Finds msgspec's helper module as the other finders do, with `_Hidden` as its loader."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name != HELPER:
            return None
        sys.meta_path.remove(self)  # (once: the next finders find it)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Hidden(spec.loader)  # type: ignore[assignment]
        return spec


_FINDER = _Finder()


def lean_msgspec() -> None:
    """Load msgspec, whenever it is first imported, without typing_extensions."""
    if "msgspec" not in sys.modules and HIDDEN not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
