"""huddle's handle cache, in its data folder (never an agent's folder).

`$HUDDLE_HOME/cache/handles.pickle` keeps each session's incremental reading state
(file identity and offsets, what was derived, the usage events), so a new `huddle
status` reads only the files that changed, and only their new bytes. Keyed by each
file's identity and size through the readers' cursors; written atomically; a corrupt
or foreign cache is ignored (one line says so) and rebuilt. The status line's board
file beside it is `huddle.io.boardfile`.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Iterable
from typing import Any

from huddle import __version__
from huddle.io.boardfile import atomic_write
from huddle.sources.base import Handle, Source

# Bump when what a read derives changes: a cached session keeps what it derived then.
FORMAT = f"huddle-cache/3 {__version__}"


def cache_dir(huddle_home: str) -> str:
    return os.path.join(huddle_home, "cache")


class HandleCache:
    def __init__(self, huddle_home: str, settings_key: tuple[Any, ...], name: str = "handles.pickle") -> None:
        # `name`: a reader with its own pace (the search index) keeps its own cache, so
        # what it has seen is never moved on by another command's refresh
        self.path = os.path.join(cache_dir(huddle_home), name)
        self.settings_key = settings_key  # a cache made for other folders is not ours
        self.blobs: dict[str, tuple[int, bytes]] = {}  # key -> (session version, pickle)
        self.note: str | None = None

    def load(self, sources: Iterable[Source]) -> dict[str, Handle]:
        """The cached handles, re-attached to the live source objects."""
        try:
            with open(self.path, "rb") as f:
                data = pickle.load(f)
        except FileNotFoundError:
            return {}
        except Exception as exc:
            self.note = f"{self.path}: unreadable cache ignored ({type(exc).__name__})"
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("settings") != self.settings_key:
            return {}
        by_name = {s.name: s for s in sources}
        handles: dict[str, Handle] = {}
        for key, blob in data.get("handles", {}).items():
            try:
                h = pickle.loads(blob)
            except Exception:
                continue  # that one session is read again from its files
            src = by_name.get(h.session.source)
            if src is None:
                continue
            h.source = src
            handles[key] = h
            self.blobs[key] = (h.session.version, blob)
        return handles

    def save(self, handles: dict[str, Handle]) -> None:
        out: dict[str, bytes] = {}
        for key, h in handles.items():
            cached = self.blobs.get(key)
            if cached is not None and cached[0] == h.session.version:
                out[key] = cached[1]
                continue
            try:
                blob = pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                continue  # a handle that cannot be kept is simply read again next time
            self.blobs[key] = (h.session.version, blob)
            out[key] = blob
        for key in self.blobs.keys() - out.keys():
            del self.blobs[key]
        data = {"format": FORMAT, "settings": self.settings_key, "written": time.time(), "handles": out}
        try:
            atomic_write(self.path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            self.note = f"{self.path}: cannot write the cache ({exc.strerror})"
